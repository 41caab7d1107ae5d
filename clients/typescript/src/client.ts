import { createClient, type Client } from "@connectrpc/connect";
import { createGrpcTransport, type GrpcTransportOptions } from "@connectrpc/connect-node";
import { JobDecider } from "./gen/jobdecider/v1/job_decider_pb.js";
import { DecideError } from "./errors.js";

/** The address a client uses when neither the caller nor JOB_DECIDER_ADDR names one. */
export const DEFAULT_ADDRESS = "127.0.0.1:50051";

/** A typed client of the jobdecider.v1.JobDecider service (DecideJob, ValidateJob, ...). */
export type JobDeciderClient = Client<typeof JobDecider>;

/** Options of {@link createJobDeciderClient}. */
export interface JobDeciderClientOptions {
  /**
   * Extra options for the gRPC transport (TLS via `nodeOptions`, timeouts, interceptors, ...);
   * `baseUrl` is derived from the address.
   */
  transport?: Partial<Omit<GrpcTransportOptions, "baseUrl">>;
}

/**
 * Turns "host:port" into the base URL Connect wants; a full http:// or https:// URL passes
 * through, so TLS servers are reached by giving "https://host:port".
 */
export function baseUrlOf(address: string): string {
  return /^https?:\/\//.test(address) ? address : `http://${address}`;
}

/**
 * Creates a client that speaks the gRPC protocol over HTTP/2 (cleartext for "host:port" or an
 * http:// URL, TLS for an https:// URL) to a job-decider server. `address` defaults to
 * JOB_DECIDER_ADDR, then 127.0.0.1:50051. Every failed call throws a {@link DecideError}.
 */
export function createJobDeciderClient(
  address: string = process.env["JOB_DECIDER_ADDR"] || DEFAULT_ADDRESS,
  options: JobDeciderClientOptions = {},
): JobDeciderClient {
  const transport = createGrpcTransport({ ...options.transport, baseUrl: baseUrlOf(address) });
  return rethrowingDecideErrors(createClient(JobDecider, transport));
}

/**
 * Wraps each (unary) method so that its failures reject with a DecideError. Connect's own
 * interceptors cannot do this: the transport turns whatever they throw back into a ConnectError.
 */
function rethrowingDecideErrors(client: JobDeciderClient): JobDeciderClient {
  const wrapped: Record<string, unknown> = {};
  for (const [name, call] of Object.entries(client as Record<string, (...args: unknown[]) => Promise<unknown>>)) {
    wrapped[name] = async (...args: unknown[]) => {
      try {
        return await call(...args);
      } catch (error) {
        throw DecideError.from(error);
      }
    };
  }
  return wrapped as JobDeciderClient;
}

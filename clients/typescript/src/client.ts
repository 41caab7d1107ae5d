import { createClient, type Client, type Transport } from "@connectrpc/connect";
import { createGrpcTransport, type GrpcTransportOptions } from "@connectrpc/connect-node";
import { JobDecider } from "./gen/jobdecider/v1/job_decider_pb.js";
import { DecideError } from "./errors.js";
import {
  CONNECTION_DEFAULTS,
  parseTarget,
  readTlsDir,
  retryInterceptor,
  unixSocketConnection,
  type RetryPolicy,
} from "./connection.js";

/** The address a client uses when neither the caller nor JOB_DECIDER_ADDR names one. */
export const DEFAULT_ADDRESS = "127.0.0.1:50051";

/** A typed client of the jobdecider.v1.JobDecider service (DecideJob, ValidateJob, ...). */
export type JobDeciderClient = Client<typeof JobDecider>;

/** Options of {@link createJobDeciderClient}. */
export interface JobDeciderClientOptions {
  /**
   * A directory laid out as a cert-manager Secret: `ca.crt` (the CA to trust) and, for mutual
   * TLS, `tls.crt` and `tls.key`. Given, the client speaks TLS (https) to a target without a
   * scheme.
   */
  tlsDir?: string;
  /** The name the server's certificate must carry; the target's host unless given. */
  serverName?: string;
  /**
   * Retries on UNAVAILABLE ({@link CONNECTION_DEFAULTS}.retry, with the fields given here
   * replaced), or `false` for none.
   */
  retry?: Partial<RetryPolicy> | false;
  /**
   * Options of Connect's gRPC transport, passed through; they win over the defaults
   * (`defaultTimeoutMs`, `pingIntervalMs`, `readMaxBytes`, ...). `nodeOptions` are merged over
   * the client's own (the TLS files, the Unix socket's createConnection); `interceptors` run
   * inside the retry interceptor, once per attempt. A `sessionManager` makes the keepalive and
   * the Unix socket ineffective, as Connect documents. `baseUrl` is derived from the target.
   */
  transport?: Partial<Omit<GrpcTransportOptions, "baseUrl">>;
}

/**
 * Turns a target into the base URL Connect wants: "host:port" and "dns:///host:port" become
 * http://host:port; a full http:// or https:// URL passes through. (Unix socket targets need
 * the transport's createConnection: use {@link createJobDeciderClient}.)
 */
export function baseUrlOf(address: string): string {
  return parseTarget(address, false).baseUrl;
}

/**
 * Creates a client that speaks the gRPC protocol over HTTP/2 to a job-decider server, with the
 * connection behaviour of {@link CONNECTION_DEFAULTS}: a 10 s deadline per call (override it
 * per call with `{ timeoutMs }`, 0 for none), up to 4 attempts on UNAVAILABLE with jittered
 * exponential backoff or the server's pushback, keepalive pings while calls are open, and
 * responses up to 64 MiB.
 *
 * `target` is "host:port" or "dns:///host:port" (TCP), "unix:///abs/path.sock" or
 * "unix:relative.sock" (a Unix socket), or an http:// (cleartext) or https:// (TLS) URL;
 * it defaults to JOB_DECIDER_ADDR, then 127.0.0.1:50051. Connect-node connects to one address
 * of a name: it does not balance over a headless Service (see the README). Every failed call
 * throws a {@link DecideError}.
 */
export function createJobDeciderClient(
  target: string = process.env["JOB_DECIDER_ADDR"] || DEFAULT_ADDRESS,
  options: JobDeciderClientOptions = {},
): JobDeciderClient {
  return rethrowingDecideErrors(createClient(JobDecider, createJobDeciderTransport(target, options)));
}

/** The Connect transport {@link createJobDeciderClient} uses, for callers that build their own clients. */
export function createJobDeciderTransport(target: string, options: JobDeciderClientOptions = {}): Transport {
  const tls = options.tlsDir === undefined ? undefined : readTlsDir(options.tlsDir);
  const { baseUrl, socketPath } = parseTarget(target, tls !== undefined);
  const nodeOptions: Record<string, unknown> = { ...tls };
  if (options.serverName !== undefined) {
    nodeOptions["servername"] = options.serverName;
  }
  if (socketPath !== undefined) {
    const secure = baseUrl.startsWith("https:");
    nodeOptions["createConnection"] = unixSocketConnection(
      socketPath,
      secure ? { ...tls, ...(options.serverName !== undefined && { servername: options.serverName }) } : undefined,
    );
  }
  const retry = options.retry === false ? undefined : { ...CONNECTION_DEFAULTS.retry, ...options.retry };
  const user = options.transport ?? {};
  return createGrpcTransport({
    defaultTimeoutMs: CONNECTION_DEFAULTS.defaultTimeoutMs,
    pingIntervalMs: CONNECTION_DEFAULTS.pingIntervalMs,
    pingTimeoutMs: CONNECTION_DEFAULTS.pingTimeoutMs,
    pingIdleConnection: CONNECTION_DEFAULTS.pingIdleConnection,
    readMaxBytes: CONNECTION_DEFAULTS.readMaxBytes,
    ...user,
    nodeOptions: { ...nodeOptions, ...user.nodeOptions },
    interceptors: [...(retry === undefined ? [] : [retryInterceptor(retry)]), ...(user.interceptors ?? [])],
    baseUrl,
  });
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

// The job-decider TypeScript client: generated messages and service (protobuf-es v2), a Connect
// gRPC client for Node, a request builder for kubectl's JSON, and an error type with the
// server's field violations.
export { createJobDeciderClient, createJobDeciderTransport, baseUrlOf, DEFAULT_ADDRESS } from "./client.js";
export {
  CONNECTION_DEFAULTS,
  RETRY_PUSHBACK_TRAILER,
  parseTarget,
  pushbackMs,
  readTlsDir,
  retryInterceptor,
} from "./connection.js";
export type { ParsedTarget, RetryHooks, RetryPolicy, TlsFiles } from "./connection.js";
export type { JobDeciderClient, JobDeciderClientOptions } from "./client.js";
export { DecideError } from "./errors.js";
export type { ErrorInfo, FieldViolation } from "./errors.js";
export { RequestError, convert, decideJobRequest, validateJobRequest } from "./kubectl.js";
export { MAX_MESSAGE_BYTES, boundedMessage, leanPodFromJson, leanPodOf, podReadsOf } from "./lean.js";
export type { PodReads } from "./lean.js";
export type { Conversion, ConvertOptions } from "./kubectl.js";
export * from "./gen/jobdecider/v1/job_decider_pb.js";
export * from "./gen/jobdecider/v1/kubernetes_pb.js";
export * from "./gen/jobdecider/v1/jobset_pb.js";
export * as rpc from "./gen/google/rpc/error_details_pb.js";

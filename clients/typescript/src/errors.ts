import { Code, ConnectError } from "@connectrpc/connect";
import { BadRequestSchema, ErrorInfoSchema } from "./gen/google/rpc/error_details_pb.js";

/** One field the server rejected: a path into the request and why. */
export interface FieldViolation {
  /** The field's path in the request, e.g. "job.metadata.uid" or "pods[2].status.phase". */
  field: string;
  /** What is wrong with it, for people. */
  description: string;
  /** A machine-readable reason, when the server gives one (else ""). */
  reason: string;
}

/** The server's google.rpc.ErrorInfo: a stable reason for programs to branch on. */
export interface ErrorInfo {
  /** UPPER_SNAKE_CASE reason. */
  reason: string;
  /** The service that produced the error. */
  domain: string;
  /** Further facts about the error, as strings. */
  metadata: Record<string, string>;
}

/**
 * A failed job-decider call: the gRPC code and message, and the rich error details the server
 * attaches, decoded: google.rpc.BadRequest field violations and google.rpc.ErrorInfo. Clients
 * made by createJobDeciderClient throw it; DecideError.from converts what any other Connect
 * client throws. The ConnectError it came from is its `cause`.
 */
export class DecideError extends Error {
  override name = "DecideError";
  /** The gRPC status code (Connect's Code enum: Code.InvalidArgument is 3). */
  readonly code: Code;
  /** The server's message, without the "[invalid_argument]" prefix of `message`. */
  readonly rawMessage: string;
  /** The response headers and trailers. */
  readonly metadata: Headers;
  /** The google.rpc.BadRequest field violations, in the server's order; empty when none. */
  readonly fieldViolations: FieldViolation[];
  /** The google.rpc.ErrorInfo detail; undefined when the server sent none. */
  readonly errorInfo: ErrorInfo | undefined;
  /** The ConnectError this was read from. */
  override readonly cause: ConnectError;

  /** Reads the details of a ConnectError; see {@link DecideError.from} for any caught value. */
  constructor(error: ConnectError) {
    super(error.message);
    this.cause = error;
    this.code = error.code;
    this.rawMessage = error.rawMessage;
    this.metadata = error.metadata;
    this.fieldViolations = error.findDetails(BadRequestSchema).flatMap((badRequest) =>
      badRequest.fieldViolations.map((v) => ({ field: v.field, description: v.description, reason: v.reason })),
    );
    const info = error.findDetails(ErrorInfoSchema)[0];
    this.errorInfo =
      info === undefined ? undefined : { reason: info.reason, domain: info.domain, metadata: { ...info.metadata } };
  }

  /** Wraps a caught value as a DecideError: a DecideError as is, anything else through ConnectError.from. */
  static from(reason: unknown): DecideError {
    return reason instanceof DecideError ? reason : new DecideError(ConnectError.from(reason));
  }

  /** The code's name as gRPC spells it, e.g. "INVALID_ARGUMENT". */
  get codeName(): string {
    const name = Code[this.code];
    return name === undefined ? String(this.code) : name.replace(/([a-z])([A-Z])/g, "$1_$2").toUpperCase();
  }
}

import { Code, ConnectError } from "@connectrpc/connect";
import {
  BadRequestSchema,
  ErrorInfoSchema,
} from "./gen/google/rpc/error_details_pb.js";

/** One field the server rejected: a path into the request and why. */
export interface FieldViolation {
  /** The field's path in the request, e.g. "job.metadata.uid" or "pods[2].status.phase". */
  field: string;
  /** What is wrong with it, for people. */
  description: string;
  /** A machine-readable reason, when the server gives one. */
  reason: string;
}

/** The server's google.rpc.ErrorInfo: a stable reason for programs to branch on. */
export interface ErrorInfo {
  /** UPPER_SNAKE_CASE reason, e.g. "INVALID_REQUEST". */
  reason: string;
  /** The service that produced the error. */
  domain: string;
  /** Further facts about the error, as strings. */
  metadata: Record<string, string>;
}

/**
 * A failed job-decider call: the gRPC code and message, and the rich error details the server
 * attaches (google.rpc.BadRequest field violations and google.rpc.ErrorInfo), decoded. It is a
 * ConnectError, so code written against Connect keeps working; clients made by
 * createJobDeciderClient throw it, and DecideError.from converts any other caught value.
 */
export class DecideError extends ConnectError {
  override name = "DecideError";

  /** Wraps a caught value (a ConnectError or anything else) as a DecideError. */
  static override from(reason: unknown, code: Code = Code.Unknown): DecideError {
    if (reason instanceof DecideError) {
      return reason;
    }
    const connect = ConnectError.from(reason, code);
    const error = new DecideError(connect.rawMessage, connect.code, connect.metadata, undefined, connect.cause ?? connect);
    error.details = connect.details;
    return error;
  }

  /** The code's name as gRPC spells it, e.g. "INVALID_ARGUMENT". */
  get codeName(): string {
    const name = Code[this.code];
    return name === undefined ? String(this.code) : name.replace(/([a-z])([A-Z])/g, "$1_$2").toUpperCase();
  }

  /** The google.rpc.BadRequest field violations, in the server's order; empty when there are none. */
  get fieldViolations(): FieldViolation[] {
    return this.findDetails(BadRequestSchema).flatMap((badRequest) =>
      badRequest.fieldViolations.map((violation) => ({
        field: violation.field,
        description: violation.description,
        reason: violation.reason,
      })),
    );
  }

  /** The google.rpc.ErrorInfo detail, or undefined when the server sent none. */
  get errorInfo(): ErrorInfo | undefined {
    const info = this.findDetails(ErrorInfoSchema)[0];
    if (info === undefined) {
      return undefined;
    }
    return { reason: info.reason, domain: info.domain, metadata: { ...info.metadata } };
  }
}

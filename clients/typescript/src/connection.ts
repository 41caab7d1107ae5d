import { readFileSync, existsSync } from "node:fs";
import { connect as netConnect } from "node:net";
import { join } from "node:path";
import { connect as tlsConnect } from "node:tls";
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { RetryInfoSchema } from "./gen/google/rpc/error_details_pb.js";

/**
 * The connection behaviour every job-decider client shares (clients/README.md's table, issue
 * 26), in one place. createJobDeciderClient applies them; options the caller passes win.
 */
export const CONNECTION_DEFAULTS = {
  /** Per-call deadline (the server's own timeout is 30 s); it travels as grpc-timeout. */
  defaultTimeoutMs: 10_000,
  /** Retries on UNAVAILABLE (OVERLOADED, SHUTTING_DOWN, connection failures). */
  retry: {
    /** Attempts in all, the first included. */
    maxAttempts: 4,
    /** The first backoff; each wait is a random time in [0, backoff] (full jitter). */
    initialBackoffMs: 100,
    /** The backoff grows by this factor after each attempt... */
    backoffMultiplier: 2,
    /** ...up to this. */
    maxBackoffMs: 2_000,
  },
  /** HTTP/2 keepalive: a PING every 30 s while calls are open, as the server pings. */
  pingIntervalMs: 30_000,
  /** The connection fails when a PING goes unanswered this long. */
  pingTimeoutMs: 10_000,
  /** No pings on a connection without calls (permit-without-calls off). */
  pingIdleConnection: false,
  /** Largest response accepted: a plan for a large Job. Requests are not bounded here. */
  readMaxBytes: 64 * 1024 * 1024,
} as const;

/** How a client retries UNAVAILABLE; see {@link CONNECTION_DEFAULTS}.retry. */
export interface RetryPolicy {
  /** Attempts in all, the first included (1: no retries). */
  maxAttempts: number;
  /** The first backoff in milliseconds. */
  initialBackoffMs: number;
  /** The factor the backoff grows by after each attempt. */
  backoffMultiplier: number;
  /** The largest backoff in milliseconds. */
  maxBackoffMs: number;
}

/** The trailer in which a gRPC server tells the client how long to wait before retrying. */
export const RETRY_PUSHBACK_TRAILER = "grpc-retry-pushback-ms";

/** Where a target leads: the base URL Connect wants, and the socket path of a unix: target. */
export interface ParsedTarget {
  /** http(s)://host:port; for a Unix socket, http(s)://localhost (the :authority sent). */
  baseUrl: string;
  /** The Unix socket path (absolute, or relative to the working directory); undefined for TCP. */
  socketPath: string | undefined;
}

/**
 * Reads a target as gRPC names them: "host:port" and "dns:///host:port" (TCP),
 * "unix:///abs/path.sock" and "unix:relative.sock" (a Unix socket), or an http:// or https://
 * URL. `tls` picks https for the forms without a scheme.
 */
export function parseTarget(target: string, tls: boolean): ParsedTarget {
  const scheme = tls ? "https" : "http";
  if (/^https?:\/\//.test(target)) {
    return { baseUrl: target, socketPath: undefined };
  }
  if (target.startsWith("unix:")) {
    // unix:///abs (an empty authority) or unix:path; unix://abs is not a gRPC form.
    const rest = target.slice("unix:".length);
    const path = rest.startsWith("//") ? rest.slice(2) : rest;
    if (path === "") {
      throw new TypeError(`target ${target}: no socket path`);
    }
    return { baseUrl: `${scheme}://localhost`, socketPath: path };
  }
  let hostPort = target;
  const dns = /^dns:(\/\/[^/]*\/)?/.exec(target);
  if (dns !== null) {
    hostPort = target.slice(dns[0].length);
  }
  return { baseUrl: `${scheme}://${hostPort}`, socketPath: undefined };
}

/** PEM files read from a TLS directory laid out as a cert-manager Secret. */
export interface TlsFiles {
  /** ca.crt: the CA to trust (the system's roots when the file is absent). */
  ca?: Buffer;
  /** tls.crt: the client certificate, for mutual TLS (with tls.key). */
  cert?: Buffer;
  /** tls.key: the client certificate's key. */
  key?: Buffer;
}

/**
 * Reads `ca.crt` and, when both are present, `tls.crt` and `tls.key` from `dir` (the files of a
 * cert-manager Certificate's Secret, mounted as a volume). One of the pair alone is an error.
 */
export function readTlsDir(dir: string): TlsFiles {
  const read = (name: string) => (existsSync(join(dir, name)) ? readFileSync(join(dir, name)) : undefined);
  const ca = read("ca.crt");
  const cert = read("tls.crt");
  const key = read("tls.key");
  if ((cert === undefined) !== (key === undefined)) {
    throw new TypeError(`${dir}: tls.crt and tls.key go together (one is missing)`);
  }
  if (ca === undefined && cert === undefined) {
    throw new TypeError(`${dir}: neither ca.crt nor tls.crt and tls.key found`);
  }
  return { ...(ca && { ca }), ...(cert && { cert }), ...(key && { key }) };
}

/**
 * The node:http2 createConnection that reaches a Unix socket: plain, or TLS when `tls` is given
 * (the server name then checked against `servername`, "localhost" unless given).
 */
export function unixSocketConnection(path: string, tls: (TlsFiles & { servername?: string }) | undefined) {
  return () =>
    tls === undefined
      ? netConnect({ path })
      : tlsConnect({ path, ...tls, servername: tls.servername ?? "localhost", ALPNProtocols: ["h2"] });
}

/** Test seams of the retry interceptor. */
export interface RetryHooks {
  /** A number in [0, 1); Math.random by default. */
  random?: () => number;
}

/**
 * A Connect interceptor that retries a unary call failing with UNAVAILABLE, as the policy says:
 * it waits a random time in [0, backoff] (full jitter), the backoff growing from the initial
 * to the max; a server's pushback (the google.rpc.RetryInfo detail's retry_delay, else the
 * grpc-retry-pushback-ms trailer) replaces that wait, and a negative or unreadable trailer
 * stops retrying, as gRPC does. The call's deadline covers every attempt: each attempt's
 * grpc-timeout is what is left of it, and a wait the deadline cuts short ends the call with
 * DEADLINE_EXCEEDED. Every job-decider method is idempotent, so any call may be retried.
 */
export function retryInterceptor(policy: RetryPolicy, hooks: RetryHooks = {}): Interceptor {
  const random = hooks.random ?? Math.random;
  return (next) => async (req) => {
    if (req.stream || policy.maxAttempts <= 1) {
      return await next(req);
    }
    const started = Date.now();
    const timeoutMs = grpcTimeoutMs(req.header.get("grpc-timeout"));
    let backoff = policy.initialBackoffMs;
    for (let attempt = 1; ; attempt++) {
      // The first attempt goes as Connect made it; a retry carries what is left of the deadline.
      const header = new Headers(req.header);
      if (timeoutMs !== undefined && attempt > 1) {
        header.set("grpc-timeout", `${Math.max(1, Math.floor(timeoutMs - (Date.now() - started)))}m`);
      }
      try {
        return await next({ ...req, header });
      } catch (e) {
        const error = ConnectError.from(e);
        if (error.code !== Code.Unavailable || attempt >= policy.maxAttempts || req.signal.aborted) {
          throw error;
        }
        const pushback = pushbackMs(error);
        if (pushback === null) {
          throw error;
        }
        const wait = pushback ?? random() * backoff;
        // After the server named a wait, the backoff starts over (as gRPC's retries do).
        backoff = pushback === undefined ? Math.min(backoff * policy.backoffMultiplier, policy.maxBackoffMs) : policy.initialBackoffMs;
        await sleep(wait, req.signal);
      }
    }
  };
}

/**
 * The wait the server asked for in ms: the RetryInfo detail's retry_delay, else the
 * grpc-retry-pushback-ms trailer; undefined when it named none, null when it said not to
 * retry (a negative or malformed trailer).
 */
export function pushbackMs(error: ConnectError): number | undefined | null {
  const info = error.findDetails(RetryInfoSchema)[0];
  if (info?.retryDelay !== undefined) {
    return Number(info.retryDelay.seconds) * 1000 + info.retryDelay.nanos / 1e6;
  }
  const trailer = error.metadata.get(RETRY_PUSHBACK_TRAILER);
  if (trailer === null) {
    return undefined;
  }
  return /^\d+$/.test(trailer.trim()) ? Number(trailer.trim()) : null;
}

/** The grpc-timeout header's value in ms ("10000m", "10S", ...); undefined when absent. */
function grpcTimeoutMs(value: string | null): number | undefined {
  const match = value === null ? null : /^(\d{1,8})([HMSmun])$/.exec(value);
  if (match === null) {
    return undefined;
  }
  const unitMs: Record<string, number> = { H: 3_600_000, M: 60_000, S: 1000, m: 1, u: 1e-3, n: 1e-6 };
  return Number(match[1]) * (unitMs[match[2] ?? "m"] ?? 1);
}

/** Waits `ms`, or rejects with the signal's reason (the deadline's ConnectError) when it aborts. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(ConnectError.from(signal.reason));
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(ConnectError.from(signal.reason));
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

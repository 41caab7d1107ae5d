// The retry interceptor and the deadline against a fake JobDecider (a Connect server in this
// process, over HTTP/2 cleartext), which fails as told: UNAVAILABLE with a google.rpc.RetryInfo
// detail, with a grpc-retry-pushback-ms trailer, with neither, or another code. The live
// server at main sends no pushback, so these read what the server of issue 26 sends.
import assert from "node:assert/strict";
import { createServer, type Http2Server, type ServerHttp2Session } from "node:http2";
import { after, before, test } from "node:test";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import {
  CONNECTION_DEFAULTS,
  DecideError,
  DecideJobResponseSchema,
  JobDecider,
  createJobDeciderClient,
  rpc,
  type JobDeciderClientOptions,
} from "@job-decider/client";

/** How the fake answers the next calls: one entry per call, the last repeated. */
type Failure = "ok" | { code: Code; retryDelayMs?: number; pushback?: string };
let script: Failure[] = [];
/** Each call the fake received: when, and its grpc-timeout header. */
let received: { at: number; timeout: string | null }[] = [];

let server: Http2Server;
const sessions: ServerHttp2Session[] = [];
let address = "";

before(async () => {
  const handler = connectNodeAdapter({
    routes: (router) =>
      router.service(JobDecider, {
        decideJob(_req, context) {
          received.push({ at: Date.now(), timeout: context.requestHeader.get("grpc-timeout") });
          const step = script[Math.min(received.length - 1, script.length - 1)] ?? "ok";
          if (step === "ok") {
            return create(DecideJobResponseSchema, {});
          }
          const metadata = new Headers();
          if (step.pushback !== undefined) {
            metadata.set("grpc-retry-pushback-ms", step.pushback);
          }
          const details =
            step.retryDelayMs === undefined
              ? []
              : [{ desc: rpc.RetryInfoSchema, value: { retryDelay: { seconds: 0n, nanos: step.retryDelayMs * 1e6 } } }];
          throw new ConnectError("fake failure", step.code, metadata, details);
        },
      }),
  });
  server = createServer(handler);
  server.on("session", (session) => sessions.push(session));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const a = server.address();
  assert.ok(a !== null && typeof a === "object");
  address = `127.0.0.1:${a.port}`;
});

after(async () => {
  // The clients keep their connections open; closing the server's ends them.
  sessions.forEach((session) => session.destroy());
  await new Promise((resolve) => server.close(resolve));
});

/** A client whose own backoff waits at most 1 ms, so that a longer gap is the server's pushback. */
function client(options: JobDeciderClientOptions = {}) {
  return createJobDeciderClient(address, { retry: { initialBackoffMs: 1, maxBackoffMs: 1 }, ...options });
}

async function call(options: JobDeciderClientOptions = {}, timeoutMs?: number): Promise<DecideError | undefined> {
  try {
    await client(options).decideJob({}, timeoutMs === undefined ? {} : { timeoutMs });
    return undefined;
  } catch (e) {
    return DecideError.from(e);
  }
}

function start(steps: Failure[]) {
  script = steps;
  received = [];
}

const gaps = () => received.slice(1).map((r, i) => r.at - received[i]!.at);

test("the constants are issue 26's: 10 s deadline, 4 attempts, 100 ms x2 to 2 s, 30 s/10 s keepalive, 64 MiB", () => {
  assert.deepEqual(CONNECTION_DEFAULTS, {
    defaultTimeoutMs: 10_000,
    retry: { maxAttempts: 4, initialBackoffMs: 100, backoffMultiplier: 2, maxBackoffMs: 2_000 },
    pingIntervalMs: 30_000,
    pingTimeoutMs: 10_000,
    pingIdleConnection: false,
    readMaxBytes: 64 * 1024 * 1024,
  });
});

test("overload_was_never_retried: UNAVAILABLE is retried up to 4 attempts in all", async () => {
  start([{ code: Code.Unavailable }]);
  const error = await call();
  assert.equal(error?.code, Code.Unavailable);
  assert.equal(received.length, 4);
});

test("UNAVAILABLE twice, then an answer: the call succeeds on the third attempt", async () => {
  start([{ code: Code.Unavailable }, { code: Code.Unavailable }, "ok"]);
  assert.equal(await call(), undefined);
  assert.equal(received.length, 3);
});

test("other codes are not retried", async () => {
  start([{ code: Code.InvalidArgument }, "ok"]);
  assert.equal((await call())?.code, Code.InvalidArgument);
  assert.equal(received.length, 1);
});

test("retry: false makes one attempt", async () => {
  start([{ code: Code.Unavailable }, "ok"]);
  assert.equal((await call({ retry: false }))?.code, Code.Unavailable);
  assert.equal(received.length, 1);
});

test("RetryInfo's retry_delay is waited for before the next attempt", async () => {
  start([{ code: Code.Unavailable, retryDelayMs: 250 }, "ok"]);
  assert.equal(await call(), undefined);
  assert.equal(received.length, 2);
  assert.ok(gaps()[0]! >= 240, `waited ${gaps()[0]} ms, not the 250 ms RetryInfo named`);
});

test("the grpc-retry-pushback-ms trailer is waited for before the next attempt", async () => {
  start([{ code: Code.Unavailable, pushback: "250" }, "ok"]);
  assert.equal(await call(), undefined);
  assert.ok(gaps()[0]! >= 240, `waited ${gaps()[0]} ms, not the 250 ms the trailer named`);
});

test("a negative grpc-retry-pushback-ms says not to retry", async () => {
  start([{ code: Code.Unavailable, pushback: "-1" }, "ok"]);
  assert.equal((await call())?.code, Code.Unavailable);
  assert.equal(received.length, 1);
});

test("without pushback the waits are full jitter within the backoff (100, 200, 400 ms)", async () => {
  start([{ code: Code.Unavailable }]);
  await call({ retry: {} });
  assert.equal(received.length, 4);
  gaps().forEach((gap, i) => assert.ok(gap <= 100 * 2 ** i + 60, `wait ${i + 1} was ${gap} ms`));
});

test("the deadline covers every attempt: each grpc-timeout is what is left, then DEADLINE_EXCEEDED", async () => {
  start([{ code: Code.Unavailable, pushback: "200" }]);
  const started = Date.now();
  const error = await call({}, 500);
  const took = Date.now() - started;
  assert.equal(error?.code, Code.DeadlineExceeded);
  assert.ok(took < 900, `took ${took} ms for a 500 ms deadline`);
  assert.ok(received.length >= 2 && received.length <= 3);
  const timeouts = received.map((r) => Number(/^(\d+)m$/.exec(r.timeout ?? "")?.[1]));
  assert.ok(timeouts[0]! <= 500 && timeouts[1]! <= 320, `grpc-timeout per attempt: ${timeouts}`);
});

test("the default deadline is 10 s, sent as grpc-timeout; a call's timeoutMs replaces it, 0 for none", async () => {
  start(["ok"]);
  await call();
  await call({}, 1234);
  await call({}, 0);
  assert.deepEqual(
    received.map((r) => r.timeout),
    ["10000m", "1234m", null],
  );
});

test("transport options win over the defaults", async () => {
  start(["ok"]);
  await call({ transport: { defaultTimeoutMs: 777 } });
  assert.equal(received[0]?.timeout, "777m");
});

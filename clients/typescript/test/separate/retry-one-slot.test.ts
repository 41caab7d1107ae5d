// Retries on UNAVAILABLE against a server at one slot (tools/with-server.sh with
// WITH_SERVER_ARGS="--max-concurrent-requests 1"): 30 concurrent calls all succeed with the
// default client, and a client without retries sees OVERLOADED for some, so the first
// assertion can fail. test.sh runs this file on its own, under that second server.
import assert from "node:assert/strict";
import { test } from "node:test";
import { Code } from "@connectrpc/connect";
import {
  DecideError,
  RETRY_PUSHBACK_TRAILER,
  createJobDeciderClient,
  decideJobRequest,
  pushbackMs,
  rpc,
  type JobDeciderClient,
} from "@job-decider/client";
import { example, readJson, serverAddress } from "../support.js";

const name = "indexed-job-mid-run";
const calls = 30;

function request() {
  return decideJobRequest(readJson(example(name, "job.json")), readJson(example(name, "pods.json")), {
    now: new Date("2025-06-02T10:00:00Z"),
  });
}

/** The errors of 30 concurrent calls (undefined for a success). */
async function errors(client: JobDeciderClient): Promise<(DecideError | undefined)[]> {
  const req = request();
  const results = await Promise.allSettled(Array.from({ length: calls }, () => client.decideJob(req)));
  return results.map((r) => (r.status === "fulfilled" ? undefined : DecideError.from(r.reason)));
}

async function outcomes(client: JobDeciderClient): Promise<(string | undefined)[]> {
  return (await errors(client)).map((e) => (e === undefined ? undefined : `${e.codeName} ${e.rawMessage}`));
}

test("overload_was_never_retried: 30 concurrent calls to a server at one slot all succeed", async () => {
  const failures = (await outcomes(createJobDeciderClient(serverAddress()))).filter((f) => f !== undefined);
  assert.deepEqual(failures, []);
});

test("overload_was_never_retried: without retries some of the 30 calls get UNAVAILABLE", async () => {
  const client = createJobDeciderClient(serverAddress(), { retry: false });
  const failures = (await outcomes(client)).filter((f) => f !== undefined);
  assert.ok(failures.length > 0, "a server at one slot turned none of 30 concurrent calls away");
  for (const f of failures) {
    assert.match(f ?? "", new RegExp(`^${Code[Code.Unavailable]!.toUpperCase()}`));
  }
});

test("the server's pushback, when it sends one (issue 26's server), is read as its 50-150 ms, RetryInfo and trailer alike", async () => {
  const failures = (await errors(createJobDeciderClient(serverAddress(), { retry: false }))).filter((e) => e !== undefined);
  assert.ok(failures.length > 0);
  for (const e of failures) {
    const trailer = e.metadata.get(RETRY_PUSHBACK_TRAILER);
    const wait = pushbackMs(e.cause);
    if (trailer === null && e.cause.findDetails(rpc.RetryInfoSchema).length === 0) {
      assert.equal(wait, undefined, "a server without pushback (main's) names no wait");
      continue;
    }
    assert.equal(wait, Number(trailer), "RetryInfo's retry_delay equals the trailer");
    assert.ok(wait !== null && wait !== undefined && wait >= 50 && wait <= 150, `pushback ${wait} ms`);
  }
});

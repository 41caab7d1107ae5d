// Retries on UNAVAILABLE against a server at one slot (tools/with-server.sh with
// WITH_SERVER_ARGS="--max-concurrent-requests 1"): 30 concurrent calls all succeed with the
// default client, and a client without retries sees OVERLOADED for some, so the first
// assertion can fail. test.sh runs this file on its own, under that second server.
import assert from "node:assert/strict";
import { test } from "node:test";
import { Code } from "@connectrpc/connect";
import { DecideError, createJobDeciderClient, decideJobRequest, type JobDeciderClient } from "@job-decider/client";
import { example, readJson, serverAddress } from "../support.js";

const name = "indexed-job-mid-run";
const calls = 30;

function request() {
  return decideJobRequest(readJson(example(name, "job.json")), readJson(example(name, "pods.json")), {
    now: new Date("2025-06-02T10:00:00Z"),
  });
}

async function outcomes(client: JobDeciderClient): Promise<(string | undefined)[]> {
  const req = request();
  const results = await Promise.allSettled(Array.from({ length: calls }, () => client.decideJob(req)));
  return results.map((r) => (r.status === "fulfilled" ? undefined : `${DecideError.from(r.reason).codeName} ${DecideError.from(r.reason).rawMessage}`));
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

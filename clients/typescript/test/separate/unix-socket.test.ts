// createJobDeciderClient on a Unix socket target (the sidecar layout), against a server
// tools/with-server.sh started with WITH_SERVER_SOCKET=1: JOB_DECIDER_ADDR is unix:///path.
// test.sh runs this file on its own, under that second server.
import assert from "node:assert/strict";
import { relative } from "node:path";
import { test } from "node:test";
import { createJobDeciderClient, decideJobRequest } from "@job-decider/client";
import { example, readJson, serverAddress } from "../support.js";

const name = "kep-3329-failjob-exit-code-42";

function request() {
  return decideJobRequest(readJson(example(name, "job.json")), readJson(example(name, "pods.json")), {
    now: new Date("2025-06-02T10:00:00Z"),
  });
}

test("unix_socket_target_was_ENOTFOUND_unix: unix:///abs/path decides", async () => {
  const address = serverAddress();
  assert.match(address, /^unix:\/\/\//, "run under WITH_SERVER_SOCKET=1 tools/with-server.sh");
  const plan = await createJobDeciderClient(address).decideJob(request());
  assert.equal(plan.actions[0]?.kind.case, "deletePods");
});

test("unix_socket_target_was_ENOTFOUND_unix: unix:relative (from the working directory) decides", async () => {
  const path = serverAddress().slice("unix://".length);
  const plan = await createJobDeciderClient(`unix:${relative(process.cwd(), path)}`).decideJob(request());
  assert.equal(plan.actions[0]?.kind.case, "deletePods");
});

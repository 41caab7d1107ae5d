// Errors raised while building a request, before anything is sent, name the field as the
// server does: a JSON path into the request such as job.spec.backoffLimit or pods[1].status.phase.
import assert from "node:assert/strict";
import { test } from "node:test";
import { decideJobRequest } from "@job-decider/client";
import { example, readJson } from "./support.js";

const name = "kep-3329-failjob-exit-code-42";

function thrown(build: () => unknown): Error {
  try {
    build();
  } catch (error) {
    assert.ok(error instanceof Error);
    return error;
  }
  assert.fail("building the request succeeded");
}

test("builder_errors_used_other_paths: a bad backoffLimit is job.spec.backoffLimit", () => {
  const job = readJson(example(name, "job.json")) as { spec: Record<string, unknown> };
  job.spec["backoffLimit"] = "six";
  const error = thrown(() => decideJobRequest(job, readJson(example(name, "pods.json"))));
  assert.match(error.message, /^job\.spec\.backoffLimit: /);
  assert.equal((error as { field?: string }).field, "job.spec.backoffLimit");
});

test("builder_errors_used_other_paths: a bad exit code in the second pod is pods[1].status.containerStatuses[0].state.terminated.exitCode", () => {
  const pods = readJson(example(name, "pods.json")) as { items: { status: { containerStatuses: { state: { terminated?: Record<string, unknown> } }[] } }[] };
  const terminated = pods.items.map((p) => p.status.containerStatuses[0]?.state.terminated);
  const at = terminated.findIndex((t) => t !== undefined);
  assert.ok(at >= 0, "the example has a terminated container");
  terminated[at]!["exitCode"] = "forty-two";
  const error = thrown(() => decideJobRequest(readJson(example(name, "job.json")), pods));
  const field = `pods[${at}].status.containerStatuses[0].state.terminated.exitCode`;
  assert.equal((error as { field?: string }).field, field);
  assert.ok(error.message.startsWith(`${field}: `), error.message);
});

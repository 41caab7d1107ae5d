// DecideJob against the live server, on the bundled examples, compared with the CLI.
import assert from "node:assert/strict";
import { test } from "node:test";
import { equals, fromJson } from "@bufbuild/protobuf";
import { TimestampSchema, timestampFromDate } from "@bufbuild/protobuf/wkt";
import {
  DecideJobResponseSchema,
  createJobDeciderClient,
  decideJobRequest,
  type Action,
  type JobCondition,
} from "@job-decider/client";
import { cliDecide, example, jsonExamples, readJson, serverAddress } from "./support.js";

const now = "2025-06-02T10:00:00Z";

for (const name of jsonExamples) {
  test(`decideJob on ${name} gives what job-decider decide prints`, async () => {
    const client = createJobDeciderClient(serverAddress());
    const request = decideJobRequest(readJson(example(name, "job.json")), readJson(example(name, "pods.json")), {
      now: new Date(now),
    });
    const response = await client.decideJob(request);
    const expected = fromJson(DecideJobResponseSchema, cliDecide(name, now) as never);
    assert.ok(response.actions.length > 0, "the example's plan has actions");
    assert.ok(
      equals(DecideJobResponseSchema, response, expected),
      `server and CLI disagree:\n${JSON.stringify(response.actions.map((a) => a.kind.case))}\n${JSON.stringify(expected.actions.map((a) => a.kind.case))}`,
    );
  });
}

test("kep-3329-failjob-exit-code-42: the plan deletes the running pods first and sets FailureTarget (PodFailurePolicy)", async () => {
  const name = "kep-3329-failjob-exit-code-42";
  const pods = readJson(example(name, "pods.json")) as { items: { metadata: { name: string }; status: { phase: string } }[] };
  const client = createJobDeciderClient(serverAddress());
  const response = await client.decideJob(
    decideJobRequest(readJson(example(name, "job.json")), pods, { now: new Date(now) }),
  );

  // The FailJob rule matched exit code 42, so the Job fails: the pods still running are deleted first.
  const first = response.actions[0];
  assert.equal(first?.kind.case, "deletePods");
  const running = pods.items.filter((p) => p.status.phase === "Running").map((p) => p.metadata.name).sort();
  assert.ok(running.length > 0);
  assert.deepEqual(first.kind.value.pods.map((p) => p.name).sort(), running);

  // Every status update carries FailureTarget with reason PodFailurePolicy, stamped with `now`;
  // Failed comes only once the deleted pods have terminated, in a later sync.
  const conditions = response.actions.flatMap((a: Action): JobCondition[] =>
    a.kind.case === "updateStatus" ? (a.kind.value.status?.conditions ?? []) : [],
  );
  assert.ok(conditions.length > 0);
  for (const c of conditions) {
    assert.equal(c.type, "FailureTarget");
    assert.equal(c.reason, "PodFailurePolicy");
    assert.ok(c.lastTransitionTime !== undefined);
    assert.ok(equals(TimestampSchema, c.lastTransitionTime, timestampFromDate(new Date(now))));
  }
  assert.ok(!conditions.some((c) => c.type === "Failed"));
});

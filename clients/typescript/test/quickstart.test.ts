// Runs examples/quickstart.ts (compiled) on a bundled example, as the README shows it.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { join } from "node:path";
import { test } from "node:test";
import { promisify } from "node:util";
import { fromJson, toJson, type JsonValue } from "@bufbuild/protobuf";
import { ActionSchema, DecideJobResponseSchema } from "@job-decider/client";
import { cliDecide, example, packageDir, serverAddress } from "./support.js";

/** An action's proto3 JSON without the condition times, which are the run's own `now`. */
function withoutNow(action: JsonValue): JsonValue {
  return JSON.parse(JSON.stringify(action), (key, value) =>
    key === "lastProbeTime" || key === "lastTransitionTime" ? undefined : value,
  ) as JsonValue;
}

test("the quickstart prints the plan's actions for kep-3329-failjob-exit-code-42, one JSON line each", async () => {
  const name = "kep-3329-failjob-exit-code-42";
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [join(packageDir, "dist", "examples", "quickstart.js"), example(name, "job.json"), example(name, "pods.json")],
    { env: { ...process.env, JOB_DECIDER_ADDR: serverAddress() } },
  );
  const printed = stdout.trimEnd().split("\n").map((line) => fromJson(ActionSchema, JSON.parse(line) as JsonValue));
  // The quickstart decides at the current time; so does the CLI without --now.
  const expected = fromJson(DecideJobResponseSchema, cliDecide(name) as JsonValue).actions;
  assert.ok(expected.length > 0);
  assert.deepEqual(
    printed.map((a) => withoutNow(toJson(ActionSchema, a))),
    expected.map((a) => withoutNow(toJson(ActionSchema, a))),
  );
  assert.equal(printed[0]?.kind.case, "deletePods");
});

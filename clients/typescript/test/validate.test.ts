// ValidateJob through the client, compared with what `job-decider validate` prints.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { createJobDeciderClient, decideJobRequest, validateJobRequest } from "@job-decider/client";
import { cliBin, example, readJson, serverAddress } from "./support.js";

test("validateJob lists the violations job-decider validate prints, and none for the example", async () => {
  const job = readJson(example("kep-3329-failjob-exit-code-42", "job.json")) as { spec: Record<string, unknown> };
  const client = createJobDeciderClient(serverAddress());
  assert.deepEqual((await client.validateJob(validateJobRequest(job))).violations, []);

  job.spec["backoffLimit"] = -1;
  job.spec["completions"] = -2;
  const dir = mkdtempSync(join(tmpdir(), "job-decider-validate-"));
  try {
    writeFileSync(join(dir, "job.json"), JSON.stringify(job));
    const run = spawnSync(cliBin(), ["validate", join(dir, "job.json")], { encoding: "utf8" });
    // The CLI prints one violation a line, indented, after a summary line; it exits non-zero.
    const want = run.stderr.split("\n").filter((line) => line.startsWith("  ")).map((line) => line.trim());
    assert.notEqual(run.status, 0);
    assert.equal(want.length, 2);
    const got = (await client.validateJob(validateJobRequest(job))).violations;
    assert.deepEqual(got.map((v) => v.description), want);
    assert.deepEqual(got.map((v) => v.field), want.map((line) => line.split(":", 1)[0]));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("validateJobRequest and decideJobRequest take one Job, not a JobList", () => {
  const list = { apiVersion: "v1", kind: "List", items: [] };
  assert.throws(() => validateJobRequest(list), /not a list/);
  assert.throws(() => decideJobRequest(list, []), /not a list/);
});

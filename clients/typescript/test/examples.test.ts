// Runs the other examples (errors, dropped-fields) on a bundled example, and checks that the
// README's TypeScript blocks are those files exactly, so what the README shows is what runs.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { promisify } from "node:util";
import { convert } from "@job-decider/client";
import { example, packageDir, readJson, serverAddress } from "./support.js";

const name = "kep-3329-failjob-exit-code-42";

async function runExample(file: string, ...args: string[]): Promise<string> {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [join(packageDir, "dist", "examples", file), example(name, "job.json"), example(name, "pods.json"), ...args],
    { env: { ...process.env, JOB_DECIDER_ADDR: serverAddress() } },
  );
  return stdout;
}

test("examples/errors.ts prints INVALID_ARGUMENT, the ErrorInfo reason and job.metadata.uid", async () => {
  const lines = (await runExample("errors.js")).trimEnd().split("\n");
  assert.equal(lines[0], "INVALID_ARGUMENT INVALID_SNAPSHOT");
  assert.equal(lines[1], "job.metadata.uid (FieldValueRequired)");
  assert.match(lines[2] ?? "", /^ {2}job\.metadata\.uid: Required value/);
  assert.equal(lines.length, 3);
});

test("examples/dropped-fields.ts prints the pod count and the dropped paths", async () => {
  const lines = (await runExample("dropped-fields.js")).trimEnd().split("\n");
  const { request, dropped } = convert(
    readJson(example(name, "job.json")),
    readJson(example(name, "pods.json")),
  );
  assert.equal(lines[0], `${request.leanPods.length + request.pods.length} pods; dropped:`);
  assert.ok(request.leanPods.length > 0);
  assert.deepEqual(lines.slice(1), dropped);
  assert.ok(lines.includes("job.spec.template.spec.containers[0].args"));
});

test("examples/controller-loop.ts decides twice, explaining each plan", async () => {
  const lines = (await runExample("controller-loop.js", "2")).trimEnd().split("\n");
  const syncs = lines.filter((l) => l.startsWith("sync "));
  assert.equal(syncs.length, 2);
  assert.match(syncs[0] ?? "", /^sync 1: \S/);
  assert.ok(lines.includes("  deletePods"), lines.join("\n"));
});

test("examples/round-robin.ts spreads calls over the addresses a name resolves to", async () => {
  const { stdout } = await promisify(execFile)(process.execPath, [
    join(packageDir, "dist", "examples", "round-robin.js"),
    serverAddress(),
    "3",
  ]);
  const lines = stdout.trimEnd().split("\n");
  assert.equal(lines.length, 3);
  assert.match(lines[0] ?? "", /^call 1 to 127\.0\.0\.1: \d+ violations$/);
});

test("every TypeScript block in README.md is one of examples/*.ts, verbatim", () => {
  const readme = readFileSync(join(packageDir, "README.md"), "utf8");
  const blocks = [...readme.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]);
  const files = new Map(
    readdirSync(join(packageDir, "examples"))
      .filter((f) => f.endsWith(".ts"))
      .map((f) => [readFileSync(join(packageDir, "examples", f), "utf8"), f] as const),
  );
  assert.ok(blocks.length >= 3, "the README shows the quickstart, errors and dropped-fields examples");
  for (const block of blocks) {
    assert.ok(files.has(block ?? ""), `a README block is not an example file verbatim:\n${block}`);
  }
});

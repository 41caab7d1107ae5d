// decideJobRequest and convert's dropped-fields report, on the bundled examples (no server
// needed; `job-decider request` prints the request the server's own conversion makes).
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { test } from "node:test";
import { equals, fromJson, toJsonString, type JsonValue } from "@bufbuild/protobuf";
import { TimestampSchema, timestampFromDate, timestampDate } from "@bufbuild/protobuf/wkt";
import {
  DecideJobRequestSchema,
  JobSchema,
  PodSchema,
  decideJobRequest,
  convert,
} from "@job-decider/client";
import { cliBin, example, jsonExamples, readJson } from "./support.js";

type Json = { [key: string]: unknown };

/** Removes the value at a reported path ("job.spec.x[0].y") from a request-shaped JSON. */
function removePath(root: Json, path: string): void {
  const steps = [...path.matchAll(/([A-Za-z_$][\w$]*)|\[(\d+)\]/g)].map((m) => m[1] ?? Number(m[2]));
  const last = steps.pop();
  let node: unknown = root;
  for (const step of steps) {
    node = (node as Record<string | number, unknown>)[step];
  }
  assert.ok(node !== null && typeof node === "object", `${path}: its parent exists`);
  assert.ok(last !== undefined && last in node, `${path}: exists in the input`);
  delete (node as Record<string | number, unknown>)[last];
}

for (const name of jsonExamples) {
  test(`${name}: the dropped fields are exactly what the contract lacks`, () => {
    const job = readJson(example(name, "job.json")) as Json;
    const pods = readJson(example(name, "pods.json")) as { items: Json[] };
    const now = new Date("2025-06-02T10:00:00Z");
    const { request, dropped } = convert(job, pods, { now, podEncoding: "full" });
    assert.ok(dropped.length > 0, "kubectl prints fields the contract lacks");
    assert.equal(new Set(dropped).size, dropped.length, "each path once");

    // Take every reported path out of the input: what is left must parse strictly (so nothing
    // unknown went unreported) and give the same request (so nothing reported was used).
    const input: Json = { job: structuredClone(job), pods: structuredClone(pods.items) };
    for (const path of dropped) {
      removePath(input, path);
    }
    const strictJob = fromJson(JobSchema, input["job"] as JsonValue);
    const strictPods = (input["pods"] as JsonValue[]).map((p) => fromJson(PodSchema, p));
    assert.ok(equals(JobSchema, strictJob, request.job!));
    assert.equal(strictPods.length, request.pods.length);
    strictPods.forEach((p, i) => assert.ok(equals(PodSchema, p, request.pods[i]!), `pods[${i}]`));
  });
}

for (const name of jsonExamples) {
  for (const lean of [true, false]) {
    test(`${name}: decideJobRequest (${lean ? "leanPods" : "podEncoding full"}) builds the request job-decider request${lean ? " --lean" : ""} prints`, () => {
      const now = "2025-06-02T10:00:00Z";
      const request = decideJobRequest(readJson(example(name, "job.json")), readJson(example(name, "pods.json")), {
        now: new Date(now),
        ...(!lean && { podEncoding: "full" as const }),
      });
      const printed = execFileSync(
        cliBin(),
        ["request", "--job", example(name, "job.json"), "--pods", example(name, "pods.json"), "--now", now, ...(lean ? ["--lean"] : [])],
        { encoding: "utf8" },
      );
      const expected = fromJson(DecideJobRequestSchema, JSON.parse(printed) as JsonValue);
      assert.ok((lean ? expected.leanPods : expected.pods).length > 0);
      assert.ok(
        equals(DecideJobRequestSchema, request, expected),
        `the helper and the server's own conversion disagree:\n${toJsonString(DecideJobRequestSchema, request)}\n${printed}`,
      );
    });
  }
}

test("kep-3329-failjob-exit-code-42: container args (which the contract lacks) are reported, not rejected", () => {
  const name = "kep-3329-failjob-exit-code-42";
  const job = readJson(example(name, "job.json")) as { spec: { template: { spec: { containers: Json[] } } } };
  assert.ok("args" in job.spec.template.spec.containers[0]!, "the example has args");
  const { dropped } = convert(job, readJson(example(name, "pods.json")));
  assert.ok(dropped.includes("job.spec.template.spec.containers[0].args"));
  assert.throws(() => fromJson(JobSchema, job as never), /args/, "a strict parse rejects it");
});

// The report: proto-loader failed on kubectl's RFC 3339 strings ("object expected").
test("kubectl timestamp strings become Timestamps", () => {
  const name = "kep-3329-failjob-exit-code-42";
  const pods = readJson(example(name, "pods.json")) as { items: { metadata: { creationTimestamp: string } }[] };
  const request = decideJobRequest(readJson(example(name, "job.json")), pods);
  const created = request.leanPods[0]?.creationTimestamp;
  assert.ok(created !== undefined);
  assert.ok(equals(TimestampSchema, created, timestampFromDate(new Date(pods.items[0]!.metadata.creationTimestamp))));
});

test("pods may be a PodList, an array of pods, one Pod, or absent", () => {
  const name = "kep-3329-failjob-exit-code-42";
  const job = readJson(example(name, "job.json"));
  const list = readJson(example(name, "pods.json")) as { items: Json[] };
  const now = new Date("2025-06-02T10:00:00Z");
  const fromList = decideJobRequest(job, list, { now });
  assert.equal(fromList.leanPods.length, list.items.length);
  assert.ok(equals(DecideJobRequestSchema, decideJobRequest(job, list.items, { now }), fromList));
  assert.equal(decideJobRequest(job, list.items[0], { now }).leanPods.length, 1);
  assert.equal(decideJobRequest(job, list.items[0], { now, podEncoding: "full" }).pods.length, 1);
  assert.equal(decideJobRequest(job, null, { now }).leanPods.length, 0);
  assert.throws(() => decideJobRequest(job, { kind: "Job" }), TypeError);
  assert.throws(() => decideJobRequest("not a job", list), TypeError);
});

test("now defaults to the current time and controllerName passes through", () => {
  const name = "kep-3329-failjob-exit-code-42";
  const before = Date.now();
  const request = decideJobRequest(readJson(example(name, "job.json")), [], { controllerName: "example.com/mine" });
  const after = Date.now();
  assert.ok(request.now !== undefined);
  const at = timestampDate(request.now).getTime();
  assert.ok(before <= at && at <= after, `${at} within [${before}, ${after}]`);
  assert.equal(request.controllerName, "example.com/mine");
});

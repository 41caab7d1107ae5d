// The controller loop's request: leanPods by default (what the shim sends), the full pods on
// request, and now, state, explain and controllerName carried. Lean and full requests must
// decide alike on every bundled example given as kubectl JSON.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { equals, fromJsonString, toJsonString } from "@bufbuild/protobuf";
import {
  ControllerStateSchema,
  DecideJobRequestSchema,
  DecideJobResponseSchema,
  boundedMessage,
  createJobDeciderClient,
  decideJobRequest,
  MAX_MESSAGE_BYTES,
  leanPodFromJson,
  podReadsOf,
} from "@job-decider/client";
import { cliBin, example, readJson, repoRoot, serverAddress } from "./support.js";

const now = new Date("2025-06-02T10:00:00Z");
const examples = readdirSync(join(repoRoot, "examples")).filter(
  (d) => existsSync(join(repoRoot, "examples", d, "job.json")) && existsSync(join(repoRoot, "examples", d, "pods.json")),
);
const load = (name: string, file: string) => readJson(join(repoRoot, "examples", name, file));

test("the bundled kubectl-JSON examples are found", () => {
  assert.ok(examples.includes("kep-3329-failjob-exit-code-42") && examples.length >= 2, `${examples}`);
});

for (const name of examples) {
  test(`${name}: the lean request (leanPods) and the full one (pods) decide the same, explained too`, async () => {
    const client = createJobDeciderClient(serverAddress());
    const job = load(name, "job.json");
    const pods = load(name, "pods.json");
    const lean = decideJobRequest(job, pods, { now, explain: true });
    const full = decideJobRequest(job, pods, { now, explain: true, podEncoding: "full" });
    assert.equal(lean.pods.length, 0);
    assert.ok(lean.leanPods.length > 0);
    assert.equal(full.leanPods.length, 0);
    assert.equal(full.pods.length, lean.leanPods.length);
    const [a, b] = await Promise.all([client.decideJob(lean), client.decideJob(full)]);
    assert.ok(a.explanation !== undefined && a.explanation.summary !== "", "explain: true returns the explanation");
    assert.ok(equals(DecideJobResponseSchema, a, b), `lean and full plans differ on ${name}`);
  });
}

test("the loop: the previous plan's state is sent back, and decides as job-decider decide --state does", async () => {
  const client = createJobDeciderClient(serverAddress());
  const name = "kep-3329-failjob-exit-code-42";
  const job = load(name, "job.json");
  const pods = load(name, "pods.json");
  const first = await client.decideJob(decideJobRequest(job, pods, { now }));
  assert.ok(first.state?.backoff !== undefined, "the example's plan returns a backoff record");
  const later = new Date(now.getTime() + 5000);
  const request = decideJobRequest(job, pods, { now: later, state: first.state, controllerName: "kubernetes.io/job-controller" });
  assert.ok(equals(ControllerStateSchema, request.state!, first.state));
  assert.equal(request.controllerName, "kubernetes.io/job-controller");
  const second = await client.decideJob(request);

  const dir = mkdtempSync(join(tmpdir(), "job-decider-state-"));
  try {
    writeFileSync(join(dir, "state.json"), toJsonString(ControllerStateSchema, first.state));
    const expected = execFileSync(cliBin(), [
      "decide", "--job", example(name, "job.json"), "--pods", example(name, "pods.json"),
      "--now", later.toISOString(), "--state", join(dir, "state.json"), "-o", "json",
    ], { encoding: "utf8" });
    assert.ok(equals(DecideJobResponseSchema, second, fromJsonString(DecideJobResponseSchema, expected)));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("another controllerName gets the empty plan (spec.managedBy is not it)", async () => {
  const client = createJobDeciderClient(serverAddress());
  const name = "kep-3329-failjob-exit-code-42";
  const plan = await client.decideJob(
    decideJobRequest(load(name, "job.json"), load(name, "pods.json"), { now, controllerName: "example.com/other" }),
  );
  assert.deepEqual(plan.actions, []);
});

test("a pod with a phase the API does not define has no lean form: every pod goes full", () => {
  const name = "kep-3329-failjob-exit-code-42";
  const pods = load(name, "pods.json") as { items: { status: { phase: string } }[] };
  pods.items[1]!.status.phase = "Exploded";
  const request = decideJobRequest(load(name, "job.json"), pods, { now });
  assert.equal(request.leanPods.length, 0);
  assert.equal(request.pods.length, pods.items.length);
});

test("lean pods keep only the selector's labels and the conditions a rule reads, and elide the Job's controller reference", () => {
  const name = "kep-3329-failjob-exit-code-42";
  const request = decideJobRequest(load(name, "job.json"), load(name, "pods.json"), { now });
  const full = decideJobRequest(load(name, "job.json"), load(name, "pods.json"), { now, podEncoding: "full" });
  const selectorKeys = Object.keys(full.job?.spec?.selector?.matchLabels ?? {});
  for (const [i, pod] of request.leanPods.entries()) {
    assert.ok(Object.keys(pod.labels).every((k) => selectorKeys.includes(k)));
    assert.ok(pod.controlledByJob);
    assert.equal(pod.ownerReferences.length, (full.pods[i]?.metadata?.ownerReferences.length ?? 0) - 1);
    assert.equal(pod.uid, full.pods[i]?.metadata?.uid);
  }
});

test("boundedMessage cuts a long message as the server does, on a character boundary", () => {
  assert.equal(boundedMessage("short"), "short");
  const long = "é".repeat(3000);
  const cut = boundedMessage(long);
  assert.ok(Buffer.byteLength(cut) <= MAX_MESSAGE_BYTES);
  assert.ok(cut.endsWith("…[truncated from 6000 bytes]"));
  assert.ok(!cut.includes("\uFFFD"));
});

test("the fast route (kubectl JSON to lean pods) builds what the decoding route does, every lean field set", () => {
  const name = "kep-3329-failjob-exit-code-42";
  const job = load(name, "job.json") as { metadata: { annotations?: Record<string, string> } };
  const pods = load(name, "pods.json") as { items: Record<string, any>[] };
  const pod = pods.items[0]!;
  pod["metadata"].deletionTimestamp = "2025-06-02T09:59:00.5Z";
  pod["metadata"].deletionGracePeriodSeconds = 30;
  pod["metadata"].finalizers = ["batch.kubernetes.io/job-tracking"];
  pod["metadata"].annotations = {
    "batch.kubernetes.io/job-completion-index": "3",
    "batch.kubernetes.io/job-index-failure-count": "1",
    "batch.kubernetes.io/job-index-ignored-failure-count": "0",
    "job-decider.dev/rule-match-counts": "{}",
    "job-decider.dev/failed-nodes": "n1",
  };
  pod["metadata"].ownerReferences.push({ apiVersion: "v1", kind: "ConfigMap", name: "x", uid: "y" });
  pod["spec"].initContainers = [{ name: "side", restartPolicy: "Always" }, { name: "init" }];
  pod["status"].reason = "Evicted";
  pod["status"].message = "x".repeat(5000);
  pod["status"].conditions.push({ type: "DisruptionTarget", status: "True", reason: "Preempted", lastTransitionTime: "2025-06-02T09:58:00Z" });
  pod["status"].initContainerStatuses = [{ name: "side", restartCount: 2, state: { waiting: { reason: "CrashLoopBackOff" } } }];
  for (const details of [false, true]) {
    if (details) {
      job.metadata.annotations = { ...job.metadata.annotations, "job-decider.dev/failure-policy": "kind: FailurePolicy" };
    }
    const fast = decideJobRequest(job, pods, { now });
    const slow = decideJobRequest(job, pods, { now, viaPods: true });
    assert.ok(fast.leanPods.length > 0 && slow.leanPods.length === fast.leanPods.length);
    assert.ok(equals(DecideJobRequestSchema, fast, slow), `the routes differ (details ${details})`);
    assert.equal(fast.leanPods[0]?.deletionGracePeriodSeconds, 30n);
    assert.deepEqual(fast.leanPods[0]?.sidecarInitContainers, ["side"]);
    assert.equal(fast.leanPods[0]?.message !== "", details);
    // The fast route read every pod itself (no fallback to the decoding route).
    const reads = podReadsOf(fast.job!, "");
    assert.ok(pods.items.every((p) => leanPodFromJson(p, fast.job!, reads) !== undefined));
  }
});

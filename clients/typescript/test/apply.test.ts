// The client-node applier against stubbed CoreV1Api/BatchV1Api objects: the calls it makes, in
// which order, with which preconditions, and where a plan stops (the Go applier's behaviour).
import assert from "node:assert/strict";
import { test } from "node:test";
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { ApiException, type V1Job, type V1Pod } from "@kubernetes/client-node";
import { ActionSchema, DecideJobResponseSchema, JobStatusSchema } from "@job-decider/client";
import { Applier, ApplyError, JOB_TRACKING_FINALIZER, PlanRefusedError, type JobsApi, type PodsApi } from "@job-decider/client/apply";

type Call = { method: string; param: Record<string, unknown>; contentType?: string };

/** The Content-Type a call's options set, by running their middleware on a recording request. */
function contentTypeOf(options: unknown): string | undefined {
  let got: string | undefined;
  const mw = (options as { middleware?: { pre: (r: unknown) => unknown }[] } | undefined)?.middleware ?? [];
  for (const m of mw) m.pre({ setHeaderParam: (k: string, v: string) => (k === "Content-Type" ? (got = v) : undefined) });
  return got;
}

/** Stubs recording every call; `fail` decides per call whether it throws (and with what). */
function stubs(fail: (method: string, param: Record<string, unknown>) => unknown = () => undefined) {
  const calls: Call[] = [];
  let rv = 100;
  let inFlight = 0;
  const inFlightAtCreate: number[] = [];
  const record = async <T>(method: string, param: object, options: unknown, value: () => T): Promise<T> => {
    calls.push({ method, param: param as Record<string, unknown>, contentType: contentTypeOf(options) });
    const err = fail(method, param as Record<string, unknown>);
    await new Promise((r) => setImmediate(r));
    if (err !== undefined) throw err;
    return value();
  };
  const pods: PodsApi = {
    createNamespacedPod: async (param, options) => {
      inFlight++;
      inFlightAtCreate.push(inFlight);
      try {
        return await record("createPod", param, options, () => ({ ...param.body, metadata: { ...param.body.metadata, name: "p" } }));
      } finally {
        inFlight--;
      }
    },
    deleteNamespacedPod: (param, options) => record("deletePod", param, options, () => ({}) as V1Pod),
    patchNamespacedPod: (param, options) => record("patchPod", param, options, () => ({}) as V1Pod),
    patchNamespacedPodStatus: (param, options) => record("patchPodStatus", param, options, () => ({}) as V1Pod),
  };
  const jobs: JobsApi = {
    readNamespacedJob: (param, options) => record("readJob", param, options, () => job()),
    replaceNamespacedJobStatus: (param, options) =>
      record("replaceJobStatus", param, options, () => ({
        ...param.body,
        metadata: { ...param.body.metadata, resourceVersion: String(++rv) },
      })),
  };
  return { calls, pods, jobs, inFlightAtCreate };
}

function job(): V1Job {
  return {
    apiVersion: "batch/v1",
    kind: "Job",
    metadata: { name: "j", namespace: "ns", uid: "job-uid", resourceVersion: "42" },
    spec: {
      template: {
        metadata: { labels: { app: "a", keep: "t" }, finalizers: [JOB_TRACKING_FINALIZER] },
        spec: { containers: [{ name: "c", image: "busybox", env: [{ name: "X", value: "template" }] }], restartPolicy: "Never" },
      },
    },
  };
}

type Kind = NonNullable<MessageInitShape<typeof ActionSchema>["kind"]>;
const action = (kind: Kind) => create(ActionSchema, { kind });
const plan = (...kinds: Kind[]) => create(DecideJobResponseSchema, { actions: kinds.map(action) });
const status = (active: number) => ({ case: "updateStatus" as const, value: { status: create(JobStatusSchema, { active }) } });
const conflict = () => new ApiException(409, "Conflict", { reason: "Conflict" }, {});
const notFound = () => new ApiException(404, "Not Found", { reason: "NotFound" }, {});

test("a plan with an action of an unknown kind is refused before any write", async () => {
  const s = stubs();
  const p = plan({ case: "deletePods", value: { pods: [{ name: "a", uid: "ua" }] } }, { case: undefined });
  await assert.rejects(new Applier(s.pods, s.jobs).apply(job(), p), (e: unknown) => e instanceof PlanRefusedError && e.reason === "unknown_action");
  assert.equal(s.calls.length, 0);
});

test("a plan with a pod failure lacking its condition type is refused before any write", async () => {
  const s = stubs();
  const p = plan(status(1), { case: "failPods", value: { pods: [{ pod: { name: "a", uid: "ua" } }] } });
  await assert.rejects(new Applier(s.pods, s.jobs).apply(job(), p), (e: unknown) => e instanceof PlanRefusedError && e.reason === "invalid_action");
  assert.equal(s.calls.length, 0);
});

test("createPods: the template overlaid with each PodCreation, in slow-start batches 1, 2, 4", async () => {
  const s = stubs();
  const p = plan({
    case: "createPods",
    value: {
      pods: Array.from({ length: 7 }, (_, i) => ({
        generateName: i === 0 ? "" : "j-x-",
        labels: { idx: String(i) },
        finalizers: [JOB_TRACKING_FINALIZER, "extra"],
        env: [
          { name: "X", value: "plan" },
          { name: "JOB_COMPLETION_INDEX", value: String(i) },
        ],
        ownerReference: { apiVersion: "batch/v1", kind: "Job", name: "j", uid: "job-uid", controller: true },
      })),
    },
  });
  const r = await new Applier(s.pods, s.jobs).apply(job(), p);
  assert.equal(r.complete, true);
  assert.deepEqual(s.inFlightAtCreate, [1, 1, 2, 1, 2, 3, 4]);
  const first = (s.calls[0]?.param.body ?? {}) as V1Pod;
  assert.equal(first.metadata?.generateName, "j-");
  assert.equal(s.calls[0]?.param.namespace, "ns");
  assert.deepEqual(first.metadata?.labels, { app: "a", keep: "t", idx: "0" });
  assert.deepEqual(first.metadata?.finalizers, [JOB_TRACKING_FINALIZER, "extra"]);
  assert.deepEqual(first.spec?.containers[0]?.env, [
    { name: "X", value: "template" },
    { name: "JOB_COMPLETION_INDEX", value: "0" },
  ]);
  assert.equal(first.metadata?.ownerReferences?.[0]?.uid, "job-uid");
  assert.equal(((s.calls[1]?.param.body ?? {}) as V1Pod).metadata?.generateName, "j-x-");
});

test("createPods stops after the batch in which a creation failed", async () => {
  let n = 0;
  const s = stubs((m) => (m === "createPod" && ++n === 2 ? new ApiException(403, "Forbidden", {}, {}) : undefined));
  const p = plan({ case: "createPods", value: { pods: Array.from({ length: 7 }, () => ({})) } }, status(1));
  const err = await new Applier(s.pods, s.jobs).apply(job(), p).then(() => undefined, (e: unknown) => e);
  assert.ok(err instanceof ApplyError);
  assert.equal(err.index, 1);
  assert.equal(err.code, 403);
  assert.deepEqual(
    s.calls.map((c) => c.method),
    ["createPod", "createPod", "createPod"],
  );
});

test("deletePods: finalizer removed first by a strategic merge patch carrying the uid, then a delete guarded by UID", async () => {
  const s = stubs((m, p) => (m === "deletePod" && p.name === "gone" ? notFound() : undefined));
  const p = plan({
    case: "deletePods",
    value: {
      pods: [
        { name: "a", uid: "ua", removeFinalizerFirst: true },
        { name: "gone", uid: "ug" },
      ],
    },
  });
  const r = await new Applier(s.pods, s.jobs).apply(job(), p);
  assert.equal(r.complete, true, "a pod already gone is not an error");
  const forA = s.calls.filter((c) => c.param.name === "a");
  assert.deepEqual(
    forA.map((c) => c.method),
    ["patchPod", "deletePod"],
  );
  assert.equal(forA[0]?.contentType, "application/strategic-merge-patch+json");
  assert.deepEqual(forA[0]?.param.body, { metadata: { "$deleteFromPrimitiveList/finalizers": [JOB_TRACKING_FINALIZER], uid: "ua" } });
  assert.deepEqual(forA[1]?.param.body, { preconditions: { uid: "ua" } });
  assert.deepEqual(s.calls.find((c) => c.param.name === "gone")?.param.body, { preconditions: { uid: "ug" } });
});

test("updateStatus carries the decided resourceVersion; a second status write the one returned", async () => {
  const s = stubs();
  const r = await new Applier(s.pods, s.jobs).apply(job(), plan(status(1), status(2)));
  const writes = s.calls.filter((c) => c.method === "replaceJobStatus").map((c) => c.param.body as V1Job);
  assert.deepEqual(
    writes.map((b) => [b.metadata?.resourceVersion, b.status?.active]),
    [
      ["42", 1],
      ["101", 2],
    ],
  );
  assert.equal(r.job.metadata?.resourceVersion, "102");
  assert.equal(r.stateHolds, true);
});

test("a 409 on the status write stops the plan, not retried, and the state does not hold", async () => {
  const s = stubs((m) => (m === "replaceJobStatus" ? conflict() : undefined));
  const p = plan(status(1), { case: "removeFinalizers", value: { pods: [{ name: "a", uid: "ua" }] } });
  const err = await new Applier(s.pods, s.jobs).apply(job(), p).then(() => undefined, (e: unknown) => e);
  assert.ok(err instanceof ApplyError);
  assert.equal(err.isConflict, true);
  assert.equal(err.action, "update_status");
  assert.equal(err.result.stateHolds, false);
  assert.deepEqual(
    s.calls.map((c) => c.method),
    ["replaceJobStatus"],
  );
});

test("after a status write held, a later failure keeps stateHolds", async () => {
  const s = stubs((m) => (m === "patchPod" ? conflict() : undefined));
  const p = plan(status(1), { case: "removeFinalizers", value: { pods: [{ name: "a", uid: "ua" }] } }, status(0));
  const err = await new Applier(s.pods, s.jobs).apply(job(), p).then(() => undefined, (e: unknown) => e);
  assert.ok(err instanceof ApplyError);
  assert.equal(err.index, 2);
  assert.equal(err.result.stateHolds, true);
  assert.equal(err.result.applied, 1);
  assert.deepEqual(
    s.calls.map((c) => c.method),
    ["replaceJobStatus", "patchPod"],
  );
});

test("failPods: a status patch to Failed carrying the uid, then a delete guarded by UID", async () => {
  const s = stubs();
  const p = plan({
    case: "failPods",
    value: { pods: [{ pod: { name: "a", uid: "ua" }, conditionType: "DisruptionTarget", reason: "R", message: "M" }] },
  });
  await new Applier(s.pods, s.jobs).apply(job(), p);
  assert.deepEqual(
    s.calls.map((c) => c.method),
    ["patchPodStatus", "deletePod"],
  );
  const body = s.calls[0]?.param.body as { metadata: { uid: string }; status: { phase: string; conditions: { type: string; status: string }[] } };
  assert.equal(body.metadata.uid, "ua");
  assert.equal(body.status.phase, "Failed");
  assert.deepEqual([body.status.conditions[0]?.type, body.status.conditions[0]?.status], ["DisruptionTarget", "True"]);
  assert.equal(s.calls[0]?.contentType, "application/strategic-merge-patch+json");
  assert.deepEqual(s.calls[1]?.param.body, { preconditions: { uid: "ua" } });
});

test("failPods with forceDelete deletes with a grace period of 0", async () => {
  const s = stubs();
  const p = plan({
    case: "failPods",
    value: {
      pods: [{ pod: { name: "a", uid: "ua" }, conditionType: "job-decider.dev/TerminatingTimeout", reason: "TerminatingTimeout", message: "M", forceDelete: true }],
    },
  });
  await new Applier(s.pods, s.jobs).apply(job(), p);
  assert.deepEqual(s.calls[1]?.param.body, { preconditions: { uid: "ua" }, gracePeriodSeconds: 0 });
});

test("adoptPods re-reads the Job and refuses a re-created one; releasePods drops owner and finalizer", async () => {
  const s = stubs();
  const recreated: JobsApi = { ...s.jobs, readNamespacedJob: async () => ({ ...job(), metadata: { ...job().metadata, uid: "other" } }) };
  const adopt = plan({ case: "adoptPods", value: { pods: [{ name: "a", uid: "ua" }] } });
  await assert.rejects(new Applier(s.pods, recreated).apply(job(), adopt), /recreated/);
  assert.equal(s.calls.length, 0);
  await new Applier(s.pods, s.jobs).apply(job(), adopt);
  assert.deepEqual(
    s.calls.map((c) => c.method),
    ["readJob", "patchPod"],
  );
  const adopted = s.calls[1]?.param.body as { metadata: { ownerReferences: { uid: string; controller: boolean }[]; uid: string } };
  assert.deepEqual([adopted.metadata.ownerReferences[0]?.uid, adopted.metadata.ownerReferences[0]?.controller, adopted.metadata.uid], ["job-uid", true, "ua"]);
  const r = stubs((m) => (m === "patchPod" ? new ApiException(422, "Invalid", {}, {}) : undefined));
  const released = await new Applier(r.pods, r.jobs).apply(job(), plan({ case: "releasePods", value: { pods: [{ name: "b", uid: "ub" }] } }));
  assert.equal(released.complete, true, "a pod no longer ours to release is not an error");
  assert.deepEqual(r.calls[0]?.param.body, {
    metadata: { ownerReferences: [{ $patch: "delete", uid: "job-uid" }], "$deleteFromPrimitiveList/finalizers": [JOB_TRACKING_FINALIZER], uid: "ub" },
  });
});

import { create, fromJson, type JsonValue } from "@bufbuild/protobuf";
import { TimestampSchema, type Timestamp } from "@bufbuild/protobuf/wkt";
import {
  LeanConditionStatus,
  LeanContainerStatusSchema,
  LeanPodConditionSchema,
  LeanPodPhase,
  LeanPodSchema,
  LeanTerminatedSchema,
  OwnerReferenceSchema,
  type ContainerStatus,
  type Job,
  type LeanContainerStatus,
  type LeanPod,
  type Pod,
} from "./gen/jobdecider/v1/kubernetes_pb.js";

// The names a lean pod reads, as batch/v1 and docs/failure-policy.md define them.
const COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index";
const INDEX_FAILURE_COUNT = "batch.kubernetes.io/job-index-failure-count";
const INDEX_IGNORED_FAILURE_COUNT = "batch.kubernetes.io/job-index-ignored-failure-count";
const TRACKING_FINALIZER = "batch.kubernetes.io/job-tracking";
const FAILURE_POLICY_ANNOTATION = "job-decider.dev/failure-policy";
const RULE_MATCH_COUNTS = "job-decider.dev/rule-match-counts";
const FAILED_NODES = "job-decider.dev/failed-nodes";

/** The most of a termination message the server keeps (its MAX_MESSAGE_BYTES). */
export const MAX_MESSAGE_BYTES = 4096;

const PHASES: Record<string, LeanPodPhase> = {
  "": LeanPodPhase.UNSPECIFIED,
  Pending: LeanPodPhase.PENDING,
  Running: LeanPodPhase.RUNNING,
  Succeeded: LeanPodPhase.SUCCEEDED,
  Failed: LeanPodPhase.FAILED,
  Unknown: LeanPodPhase.UNKNOWN,
};

const CONDITION_STATUSES: Record<string, LeanConditionStatus> = {
  "": LeanConditionStatus.UNSPECIFIED,
  True: LeanConditionStatus.TRUE,
  False: LeanConditionStatus.FALSE,
  Unknown: LeanConditionStatus.UNKNOWN,
};

/**
 * What decisions read of a Job's pods: the label keys its selector names, the condition types
 * a rule reads (Ready and those its pod failure policy names), and whether it has an extended
 * failure policy (then every condition and the fields only that policy reads are sent). The
 * server keeps no others, so a pod trimmed to them decides as the whole pod does.
 */
export interface PodReads {
  labelKeys: Set<string>;
  conditionTypes: Set<string>;
  details: boolean;
}

/** What decisions read of `job`'s pods; `failurePolicy` is the request's own document, if any. */
export function podReadsOf(job: Job, failurePolicy = ""): PodReads {
  const selector = job.spec?.selector;
  const labelKeys = new Set([
    ...Object.keys(selector?.matchLabels ?? {}),
    ...(selector?.matchExpressions ?? []).map((e) => e.key),
  ]);
  const conditionTypes = new Set(["Ready"]);
  for (const rule of job.spec?.podFailurePolicy?.rules ?? []) {
    for (const c of rule.onPodConditions) {
      conditionTypes.add(c.type);
    }
  }
  const details = FAILURE_POLICY_ANNOTATION in (job.metadata?.annotations ?? {}) || failurePolicy !== "";
  return { labelKeys, conditionTypes, details };
}

/**
 * `pod` in the lean encoding (LeanPod), as the shim and the Go client's request package send
 * it: the Job's own controller reference elided, labels and conditions trimmed to `reads`.
 * Undefined when the pod has a phase or condition status the Kubernetes API does not define,
 * which only the full Pod can carry.
 */
export function leanPodOf(pod: Pod, job: Job, reads: PodReads): LeanPod | undefined {
  const meta = pod.metadata;
  const status = pod.status;
  const phase = PHASES[status?.phase ?? ""];
  if (phase === undefined) {
    return undefined;
  }
  const conditions = [];
  for (const c of status?.conditions ?? []) {
    const s = CONDITION_STATUSES[c.status];
    if (s === undefined) {
      return undefined;
    }
    if (reads.details || reads.conditionTypes.has(c.type)) {
      conditions.push(
        create(LeanPodConditionSchema, {
          type: c.type,
          status: s,
          lastTransitionTime: c.lastTransitionTime,
          reason: reads.details ? c.reason : "",
        }),
      );
    }
  }
  const labels: Record<string, string> = {};
  for (const key of reads.labelKeys) {
    const value = meta?.labels[key];
    if (value !== undefined) {
      labels[key] = value;
    }
  }
  const refs = meta?.ownerReferences ?? [];
  const controller = refs.findIndex((r) => r.controller === true);
  const ref = refs[controller];
  const jobUid = job.metadata?.uid ?? "";
  const controlledByJob =
    ref !== undefined && jobUid !== "" && ref.apiVersion === "batch/v1" && ref.kind === "Job" &&
    ref.name === (job.metadata?.name ?? "") && ref.uid === jobUid;
  const annotations = meta?.annotations ?? {};
  const lean = create(LeanPodSchema, {
    name: meta?.name ?? "",
    uid: meta?.uid ?? "",
    labels,
    completionIndex: annotations[COMPLETION_INDEX],
    indexFailureCount: annotations[INDEX_FAILURE_COUNT],
    indexIgnoredFailureCount: annotations[INDEX_IGNORED_FAILURE_COUNT],
    controlledByJob,
    ownerReferences: controlledByJob ? refs.filter((_, i) => i !== controller) : refs,
    trackingFinalizer: (meta?.finalizers ?? []).includes(TRACKING_FINALIZER),
    creationTimestamp: meta?.creationTimestamp,
    deletionTimestamp: meta?.deletionTimestamp,
    deletionGracePeriodSeconds: meta?.deletionGracePeriodSeconds,
    scheduled: (pod.spec?.nodeName ?? "") !== "",
    sidecarInitContainers: (pod.spec?.initContainers ?? []).filter((c) => c.restartPolicy === "Always").map((c) => c.name),
    phase,
    conditions,
    containerStatuses: leanContainerStatuses(status?.containerStatuses ?? [], reads.details),
    initContainerStatuses: leanContainerStatuses(status?.initContainerStatuses ?? [], reads.details),
  });
  if (reads.details) {
    lean.reason = status?.reason ?? "";
    lean.message = boundedMessage(status?.message ?? "");
    lean.nodeName = pod.spec?.nodeName ?? "";
    lean.ruleMatchCounts = annotations[RULE_MATCH_COUNTS];
    lean.failedNodes = annotations[FAILED_NODES];
  }
  return lean;
}

function leanContainerStatuses(statuses: ContainerStatus[], details: boolean): LeanContainerStatus[] {
  return statuses.map((s) => {
    const terminated = s.state?.terminated;
    return create(LeanContainerStatusSchema, {
      name: s.name,
      restartCount: s.restartCount,
      terminated:
        terminated === undefined
          ? undefined
          : create(LeanTerminatedSchema, {
              exitCode: terminated.exitCode,
              finishedAt: terminated.finishedAt,
              reason: details ? terminated.reason : "",
              message: details ? boundedMessage(terminated.message) : "",
            }),
      waitingReason: details ? (s.state?.waiting?.reason ?? "") : "",
    });
  });
}

/**
 * `text` as the server keeps it: unchanged when it fits MAX_MESSAGE_BYTES of UTF-8, else cut on
 * a character boundary and ended by the server's mark saying how long it was, so that lean and
 * full requests decide alike.
 */
export function boundedMessage(text: string): string {
  // A UTF-16 code unit is at most 3 bytes of UTF-8: a short text fits without encoding it.
  if (text.length * 3 <= MAX_MESSAGE_BYTES) {
    return text;
  }
  const bytes = Buffer.from(text, "utf8");
  if (bytes.length <= MAX_MESSAGE_BYTES) {
    return text;
  }
  const mark = `…[truncated from ${bytes.length} bytes]`;
  let keep = MAX_MESSAGE_BYTES - Buffer.byteLength(mark, "utf8");
  // A UTF-8 continuation byte is 10xxxxxx: step back to the start of a character.
  while (keep > 0 && ((bytes[keep] ?? 0) & 0xc0) === 0x80) {
    keep--;
  }
  return bytes.subarray(0, keep).toString("utf8") + mark;
}

/** Thrown inside leanPodFromJson for a value it does not read plainly; the caller falls back. */
class NotPlain extends Error {}

type Obj = { [key: string]: unknown };

function obj(v: unknown): Obj | undefined {
  if (v === undefined || v === null) {
    return undefined;
  }
  if (typeof v !== "object" || Array.isArray(v)) {
    throw new NotPlain();
  }
  return v as Obj;
}

function arr(v: unknown): unknown[] {
  if (v === undefined || v === null) {
    return [];
  }
  if (!Array.isArray(v)) {
    throw new NotPlain();
  }
  return v;
}

function str(v: unknown): string {
  if (v === undefined || v === null) {
    return "";
  }
  if (typeof v !== "string") {
    throw new NotPlain();
  }
  return v;
}

function optStr(v: unknown): string | undefined {
  return v === undefined || v === null ? undefined : str(v);
}

function int32(v: unknown): number {
  if (v === undefined || v === null) {
    return 0;
  }
  if (typeof v !== "number" || !Number.isInteger(v) || v < -(2 ** 31) || v >= 2 ** 31) {
    throw new NotPlain();
  }
  return v;
}

function time(v: unknown): Timestamp | undefined {
  if (v === undefined || v === null) {
    return undefined;
  }
  if (typeof v !== "string") {
    throw new NotPlain();
  }
  return fromJson(TimestampSchema, v);
}

function stringMap(v: unknown): Record<string, string> {
  const o = obj(v) ?? {};
  for (const value of Object.values(o)) {
    if (typeof value !== "string") {
      throw new NotPlain();
    }
  }
  return o as Record<string, string>;
}

/**
 * A pod as kubectl prints it, straight to the lean encoding: what {@link leanPodOf} makes of
 * the decoded Pod, without decoding the whole Pod first (most of the time of a large request).
 * Undefined when the pod holds anything it does not read plainly (a value of another type, a
 * phase without a lean form, ...): the caller then takes the decoding route, which names the
 * field or decides on the full form.
 */
export function leanPodFromJson(json: unknown, job: Job, reads: PodReads): LeanPod | undefined {
  if (json === null || typeof json !== "object" || Array.isArray(json)) {
    return undefined;
  }
  try {
    return leanFromJson(json, job, reads);
  } catch {
    // NotPlain, or a timestamp protobuf-es does not read: the decoding route says which field.
    return undefined;
  }
}

function leanFromJson(json: unknown, job: Job, reads: PodReads): LeanPod | undefined {
  const pod = obj(json) ?? {};
  const meta = obj(pod["metadata"]) ?? {};
  const spec = obj(pod["spec"]) ?? {};
  const status = obj(pod["status"]) ?? {};
  const phase = PHASES[str(status["phase"])];
  if (phase === undefined) {
    return undefined;
  }
  const conditions = [];
  for (const item of arr(status["conditions"])) {
    const c = obj(item) ?? {};
    const s = CONDITION_STATUSES[str(c["status"])];
    if (s === undefined) {
      return undefined;
    }
    const type = str(c["type"]);
    const lastTransitionTime = time(c["lastTransitionTime"]);
    const reason = str(c["reason"]);
    // The decoding route reads every field of the condition; so does this one, to fail alike.
    time(c["lastProbeTime"]);
    str(c["message"]);
    if (reads.details || reads.conditionTypes.has(type)) {
      conditions.push(create(LeanPodConditionSchema, { type, status: s, lastTransitionTime, reason: reads.details ? reason : "" }));
    }
  }
  const allLabels = stringMap(meta["labels"]);
  const labels: Record<string, string> = {};
  for (const key of reads.labelKeys) {
    const value = allLabels[key];
    if (value !== undefined) {
      labels[key] = value;
    }
  }
  const annotations = stringMap(meta["annotations"]);
  const refs = arr(meta["ownerReferences"]).map((r) => {
    const ref = obj(r) ?? {};
    const controller = ref["controller"];
    if (controller !== undefined && controller !== null && typeof controller !== "boolean") {
      throw new NotPlain();
    }
    return ref;
  });
  const controller = refs.findIndex((r) => r["controller"] === true);
  const ref = refs[controller];
  const jobUid = job.metadata?.uid ?? "";
  const controlledByJob =
    ref !== undefined && jobUid !== "" && ref["apiVersion"] === "batch/v1" && ref["kind"] === "Job" &&
    ref["name"] === (job.metadata?.name ?? "") && ref["uid"] === jobUid;
  const ownerReferences = refs
    .filter((_, i) => !(controlledByJob && i === controller))
    .map((r) => fromJson(OwnerReferenceSchema, r as JsonValue, { ignoreUnknownFields: true }));
  const grace = meta["deletionGracePeriodSeconds"];
  if (grace !== undefined && grace !== null && (typeof grace !== "number" || !Number.isInteger(grace))) {
    throw new NotPlain();
  }
  const nodeName = str(spec["nodeName"]);
  const sidecars: string[] = [];
  for (const item of arr(spec["initContainers"])) {
    const c = obj(item) ?? {};
    const name = str(c["name"]);
    if (str(c["restartPolicy"]) === "Always") {
      sidecars.push(name);
    }
  }
  const lean = create(LeanPodSchema, {
    name: str(meta["name"]),
    uid: str(meta["uid"]),
    labels,
    completionIndex: annotations[COMPLETION_INDEX],
    indexFailureCount: annotations[INDEX_FAILURE_COUNT],
    indexIgnoredFailureCount: annotations[INDEX_IGNORED_FAILURE_COUNT],
    controlledByJob,
    ownerReferences,
    trackingFinalizer: arr(meta["finalizers"]).map(str).includes(TRACKING_FINALIZER),
    creationTimestamp: time(meta["creationTimestamp"]),
    deletionTimestamp: time(meta["deletionTimestamp"]),
    deletionGracePeriodSeconds: typeof grace === "number" ? BigInt(grace) : undefined,
    scheduled: nodeName !== "",
    sidecarInitContainers: sidecars,
    phase,
    conditions,
    containerStatuses: containerStatusesFromJson(status["containerStatuses"], reads.details),
    initContainerStatuses: containerStatusesFromJson(status["initContainerStatuses"], reads.details),
  });
  const reason = str(status["reason"]);
  const message = str(status["message"]);
  if (reads.details) {
    lean.reason = reason;
    lean.message = boundedMessage(message);
    lean.nodeName = nodeName;
    lean.ruleMatchCounts = optStr(annotations[RULE_MATCH_COUNTS]);
    lean.failedNodes = optStr(annotations[FAILED_NODES]);
  }
  return lean;
}

function containerStatusesFromJson(v: unknown, details: boolean): LeanContainerStatus[] {
  return arr(v).map((item) => {
    const s = obj(item) ?? {};
    const state = obj(s["state"]) ?? {};
    const terminated = obj(state["terminated"]);
    const waiting = obj(state["waiting"]);
    const running = obj(state["running"]);
    time(running?.["startedAt"]);
    str(waiting?.["message"]);
    if (typeof (s["ready"] ?? false) !== "boolean") {
      throw new NotPlain();
    }
    const waitingReason = str(waiting?.["reason"]);
    let term;
    if (terminated !== undefined) {
      int32(terminated["signal"]);
      time(terminated["startedAt"]);
      const reason = str(terminated["reason"]);
      const message = str(terminated["message"]);
      term = create(LeanTerminatedSchema, {
        exitCode: int32(terminated["exitCode"]),
        finishedAt: time(terminated["finishedAt"]),
        reason: details ? reason : "",
        message: details ? boundedMessage(message) : "",
      });
    }
    return create(LeanContainerStatusSchema, {
      name: str(s["name"]),
      restartCount: int32(s["restartCount"]),
      terminated: term,
      waitingReason: details ? waitingReason : "",
    });
  });
}

import { create } from "@bufbuild/protobuf";
import {
  LeanConditionStatus,
  LeanContainerStatusSchema,
  LeanPodConditionSchema,
  LeanPodPhase,
  LeanPodSchema,
  LeanTerminatedSchema,
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

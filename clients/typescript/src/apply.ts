// Plans applied with @kubernetes/client-node (`@job-decider/client/apply`): the same writes, in
// the same order, with the same preconditions as the shim's Go applier (clients/go/apply).
// A subpath of its own so that users of the gRPC client alone never load client-node, an
// optional peer dependency.
import { create, toJson } from "@bufbuild/protobuf";
import {
  PatchStrategy,
  setHeaderOptions,
  type BatchV1Api,
  type CoreV1Api,
  type V1EnvVar,
  type V1Job,
  type V1JobStatus,
  type V1OwnerReference,
  type V1Pod,
} from "@kubernetes/client-node";
import type { Action, DecideJobResponse, PodCreation, PodDeletion, PodFailure, PodReference } from "./gen/jobdecider/v1/job_decider_pb.js";
import { EnvVarSchema, JobStatusSchema, OwnerReferenceSchema, type JobStatus } from "./gen/jobdecider/v1/kubernetes_pb.js";

/** The finalizer through which Jobs track their pods. */
export const JOB_TRACKING_FINALIZER = "batch.kubernetes.io/job-tracking";

/** The CoreV1Api methods the applier calls: a CoreV1Api, or a stub in tests. */
export type PodsApi = Pick<CoreV1Api, "createNamespacedPod" | "deleteNamespacedPod" | "patchNamespacedPod" | "patchNamespacedPodStatus">;
/** The BatchV1Api methods the applier calls: a BatchV1Api, or a stub in tests. */
export type JobsApi = Pick<BatchV1Api, "readNamespacedJob" | "replaceNamespacedJobStatus">;

/** Action names as the contract spells the Action kinds (the Go applier's names). */
export type ActionName =
  | "create_pods"
  | "delete_pods"
  | "remove_finalizers"
  | "update_status"
  | "record_event"
  | "adopt_pods"
  | "release_pods"
  | "fail_pods"
  | "unknown";

const NAMES: Record<NonNullable<Action["kind"]["case"]>, ActionName> = {
  createPods: "create_pods",
  deletePods: "delete_pods",
  removeFinalizers: "remove_finalizers",
  updateStatus: "update_status",
  recordEvent: "record_event",
  adoptPods: "adopt_pods",
  releasePods: "release_pods",
  failPods: "fail_pods",
};

/** Records an event on the Job (record_event, and the pod writes' events); optional. */
export type EventRecorder = (job: V1Job, type: string, reason: string, message: string) => void;

/** Options of an Applier. */
export interface ApplierOptions {
  /** Records the plan's events and the pod writes' events on the Job; none when unset. */
  recordEvent?: EventRecorder;
  /** Pod writes of one action in flight at once (default 50, as the Go applier). */
  concurrency?: number;
}

/** What apply did. */
export interface ApplyResult {
  /** The Job as the last status write returned it, else the Job given to apply. */
  job: V1Job;
  /** Actions applied in full, in order. */
  applied: number;
  /** Every action was applied. */
  complete: boolean;
  /** An updateStatus succeeded. */
  statusWritten: boolean;
  /** Send the plan's `state` with the next request (else the one sent before): complete or statusWritten. */
  stateHolds: boolean;
}

/** A plan refused whole before any write: `unknown_action` (a decider newer than this applier) or `invalid_action`. */
export class PlanRefusedError extends Error {
  override readonly name = "PlanRefusedError";
  constructor(
    readonly reason: "unknown_action" | "invalid_action",
    message: string,
  ) {
    super(message);
  }
}

/** The action that stopped a plan; `cause` is the API error, `code` its HTTP status (409: decide again, don't retry). */
export class ApplyError extends Error {
  override readonly name = "ApplyError";
  constructor(
    /** 1-based position of the action in the plan. */
    readonly index: number,
    readonly total: number,
    readonly action: ActionName,
    override readonly cause: unknown,
    readonly result: ApplyResult,
  ) {
    super(`action ${index} of ${total} (${action}): ${cause instanceof Error ? cause.message : String(cause)}`);
  }
  /** The HTTP status of the API error, when it was one. */
  get code(): number | undefined {
    return httpStatusOf(this.cause);
  }
  /** A 409 Conflict: the Job or a pod changed since the decision. */
  get isConflict(): boolean {
    return this.code === 409;
  }
}

/** The HTTP status of a client-node ApiException (or anything with a numeric `code`). */
export function httpStatusOf(err: unknown): number | undefined {
  if (typeof err === "object" && err !== null && "code" in err && typeof err.code === "number") return err.code;
  return undefined;
}

const isNotFound = (err: unknown) => httpStatusOf(err) === 404;

/** Strategic merge patches, as the Go applier sends them: client-node defaults to JSON patch. */
const strategicMerge = () => setHeaderOptions("Content-Type", PatchStrategy.StrategicMergePatch);

/**
 * Applies plans with one pair of clients. It keeps no per-Job state, so one Applier serves any
 * number of Jobs.
 */
export class Applier {
  constructor(
    private readonly pods: PodsApi,
    private readonly jobs: JobsApi,
    private readonly options: ApplierOptions = {},
  ) {}

  /**
   * Applies `plan` to `job`, the Job it was decided on as read (its resourceVersion guards the
   * status write). Refuses the whole plan with a PlanRefusedError, writing nothing, when any
   * action cannot be applied; else runs the actions in order and throws an ApplyError for the
   * first that fails.
   */
  async apply(job: V1Job, plan: DecideJobResponse): Promise<ApplyResult> {
    const run = new Run(this.pods, this.jobs, this.options, job);
    const actions = plan.actions;
    const refused = validate(job, actions);
    if (refused) {
      run.event("Warning", "UnsupportedPlan", `Plan refused, nothing applied: ${refused.message}`);
      throw refused;
    }
    for (const [i, action] of actions.entries()) {
      const name = action.kind.case ? NAMES[action.kind.case] : "unknown";
      try {
        await run.applyOne(action);
      } catch (err) {
        throw new ApplyError(i + 1, actions.length, name, err, run.result(i, false));
      }
    }
    return run.result(actions.length, true);
  }
}

function validate(job: V1Job, actions: Action[]): PlanRefusedError | undefined {
  for (const [i, action] of actions.entries()) {
    const where = `action ${i + 1} of ${actions.length}`;
    const kind = action.kind;
    try {
      switch (kind.case) {
        case "createPods":
          for (const pc of kind.value.pods) podFromTemplate(job, pc);
          break;
        case "failPods":
          for (const p of kind.value.pods) podFailurePatch(p, new Date(0));
          break;
        case "updateStatus":
          statusJson(kind.value.status);
          break;
        case "deletePods":
        case "removeFinalizers":
        case "recordEvent":
        case "adoptPods":
        case "releasePods":
          break;
        default:
          // A kind from a newer decider arrives with no case set.
          return new PlanRefusedError("unknown_action", `${where}: unknown action: this applier is older than the decider`);
      }
    } catch (err) {
      const name = kind.case ? NAMES[kind.case] : "unknown";
      return new PlanRefusedError("invalid_action", `${where}: ${name}: ${(err as Error).message}`);
    }
  }
  return undefined;
}

function statusJson(status: JobStatus | undefined): V1JobStatus {
  // The contract names every field as the API does; times stay RFC 3339 strings, which
  // client-node's serializer passes through as they are.
  return toJson(JobStatusSchema, status ?? create(JobStatusSchema)) as unknown as V1JobStatus;
}

/**
 * The pod one PodCreation asks for: the Job's pod template overlaid with the entry's name or
 * generateName (else "<job>-"), labels, annotations, finalizers, hostname, environment (added
 * to each container lacking a variable of that name), node avoidance and owner reference.
 */
export function podFromTemplate(job: V1Job, pc: PodCreation): V1Pod {
  const tmpl = structuredClone(job.spec?.template ?? {});
  const spec = tmpl.spec ?? { containers: [] };
  const pod: V1Pod = {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      namespace: job.metadata?.namespace,
      labels: { ...tmpl.metadata?.labels, ...pc.labels },
      annotations: { ...tmpl.metadata?.annotations, ...pc.annotations },
      finalizers: [...(tmpl.metadata?.finalizers ?? [])],
    },
    spec,
  };
  const meta = pod.metadata!;
  if (pc.name !== "") meta.name = pc.name;
  else meta.generateName = pc.generateName !== "" ? pc.generateName : `${job.metadata?.name ?? ""}-`;
  for (const f of pc.finalizers) if (!meta.finalizers!.includes(f)) meta.finalizers!.push(f);
  if (pc.hostname !== "") spec.hostname = pc.hostname;
  if (pc.env.length > 0) {
    const env = pc.env.map((e) => toJson(EnvVarSchema, e) as unknown as V1EnvVar);
    for (const c of [...(spec.initContainers ?? []), ...spec.containers]) {
      for (const e of env) {
        if (!(c.env ?? []).some((have) => have.name === e.name)) (c.env ??= []).push(structuredClone(e));
      }
    }
  }
  const avoid = pc.avoidNodes;
  if (avoid && avoid.nodes.length > 0) {
    if (avoid.mode !== "Required" && avoid.mode !== "Preferred") {
      throw new Error(`avoid_nodes: unknown mode "${avoid.mode}" (want "Required" or "Preferred")`);
    }
    // One NotIn requirement per node (a field requirement takes one value); ANDed within a term.
    const notOn = () => avoid.nodes.map((n) => ({ key: "metadata.name", operator: "NotIn", values: [n] }));
    const na = ((spec.affinity ??= {}).nodeAffinity ??= {});
    if (avoid.mode === "Preferred") {
      (na.preferredDuringSchedulingIgnoredDuringExecution ??= []).push({ weight: 100, preference: { matchFields: notOn() } });
    } else {
      const req = (na.requiredDuringSchedulingIgnoredDuringExecution ??= { nodeSelectorTerms: [] });
      if (req.nodeSelectorTerms.length === 0) req.nodeSelectorTerms.push({});
      // Terms are ORed: every term gets the exclusion.
      for (const term of req.nodeSelectorTerms) (term.matchFields ??= []).push(...notOn());
    }
  }
  if (pc.ownerReference) {
    (meta.ownerReferences ??= []).push(toJson(OwnerReferenceSchema, pc.ownerReference) as unknown as V1OwnerReference);
  }
  return pod;
}

/**
 * The strategic merge patch of a pod's status that failPods sends: phase Failed and the plan's
 * condition, True since `now`, with the pod's uid so another pod of the same name refuses it.
 */
export function podFailurePatch(p: PodFailure, now: Date): object {
  if (p.conditionType === "") throw new Error(`fail_pods: pod ${p.pod?.name ?? ""} has no condition type`);
  return {
    metadata: { uid: p.pod?.uid ?? "" },
    status: {
      phase: "Failed",
      conditions: [
        { type: p.conditionType, status: "True", reason: p.reason, message: p.message, lastTransitionTime: now.toISOString() },
      ],
    },
  };
}

/** One plan being applied to one Job. */
class Run {
  private job: V1Job;
  private statusWritten = false;
  private readonly namespace: string;

  constructor(
    private readonly pods: PodsApi,
    private readonly jobs: JobsApi,
    private readonly options: ApplierOptions,
    private readonly decided: V1Job,
  ) {
    this.job = decided;
    this.namespace = decided.metadata?.namespace ?? "default";
  }

  result(applied: number, complete: boolean): ApplyResult {
    return { job: this.job, applied, complete, statusWritten: this.statusWritten, stateHolds: complete || this.statusWritten };
  }

  event(type: string, reason: string, message: string): void {
    this.options.recordEvent?.(this.decided, type, reason, message);
  }

  async applyOne(action: Action): Promise<void> {
    const kind = action.kind;
    switch (kind.case) {
      case "createPods":
        return this.createPods(kind.value.pods);
      case "deletePods":
        return this.forEachPod(kind.value.pods, (p) => this.deletePod(p));
      case "removeFinalizers":
        return this.forEachPod(kind.value.pods, (p) => this.ignoreGone(this.removeFinalizer(p.name, p.uid)));
      case "updateStatus":
        return this.updateStatus(kind.value.status);
      case "recordEvent":
        return this.event(kind.value.type, kind.value.reason, kind.value.message);
      case "adoptPods":
        return this.adoptPods(kind.value.pods);
      case "releasePods":
        return this.forEachPod(kind.value.pods, (p) => this.releasePod(p));
      case "failPods":
        return this.forEachPod(kind.value.pods, (p) => this.failPod(p));
      default:
        throw new Error("unknown action"); // validate refuses such a plan first
    }
  }

  /** Runs fn on every pod, a bounded number at once; throws the first error after all settle. */
  private async forEachPod<T>(items: T[], fn: (item: T) => Promise<void>): Promise<void> {
    let next = 0;
    const errors: unknown[] = [];
    const worker = async () => {
      while (next < items.length) {
        const item = items[next++] as T;
        await fn(item).catch((err: unknown) => void errors.push(err));
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.options.concurrency ?? 50, items.length) }, worker));
    if (errors.length > 0) throw errors[0];
  }

  private async ignoreGone(write: Promise<unknown>): Promise<void> {
    try {
      await write;
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }

  /** Creates the pods in slow-start batches of 1, 2, 4, …, stopping after a batch with a failure. */
  private async createPods(creations: PodCreation[]): Promise<void> {
    const pods = creations.map((pc) => podFromTemplate(this.job, pc));
    for (let created = 0, batch = 1; created < pods.length; batch *= 2) {
      const n = Math.min(batch, pods.length - created);
      const results = await Promise.allSettled(
        pods.slice(created, created + n).map((body) => this.pods.createNamespacedPod({ namespace: this.namespace, body })),
      );
      created += n;
      let failed: unknown;
      for (const r of results) {
        if (r.status === "fulfilled") this.event("Normal", "SuccessfulCreate", `Created pod: ${r.value.metadata?.name ?? ""}`);
        else {
          failed ??= r.reason;
          this.event("Warning", "FailedCreate", `Error creating: ${String(r.reason)}`);
        }
      }
      if (failed !== undefined) throw failed;
    }
  }

  private async deletePod(p: PodDeletion): Promise<void> {
    try {
      if (p.removeFinalizerFirst) await this.removeFinalizer(p.name, p.uid);
      await this.deleteGuarded(p.name, p.uid);
    } catch (err) {
      if (isNotFound(err)) return; // already gone
      this.event("Warning", "FailedDelete", `Error deleting: ${String(err)}`);
      throw err;
    }
    this.event("Normal", "SuccessfulDelete", `Deleted pod: ${p.name}`);
  }

  /** Deletes one pod with its UID as a precondition: a pod re-created under the name is never deleted in its place; a grace period of 0 is a force delete. */
  private async deleteGuarded(name: string, uid: string, gracePeriodSeconds?: number): Promise<void> {
    const body = gracePeriodSeconds === undefined ? { preconditions: { uid } } : { preconditions: { uid }, gracePeriodSeconds };
    await this.pods.deleteNamespacedPod({ name, namespace: this.namespace, body });
  }

  /** A strategic merge patch carrying the uid, so the API server refuses it for another pod of the name. */
  private async removeFinalizer(name: string, uid: string): Promise<void> {
    const body = { metadata: { "$deleteFromPrimitiveList/finalizers": [JOB_TRACKING_FINALIZER], uid } };
    await this.pods.patchNamespacedPod({ name, namespace: this.namespace, body }, strategicMerge());
  }

  /** Replaces the status subresource, guarded by the resourceVersion of the Job last read or written. */
  private async updateStatus(status: JobStatus | undefined): Promise<void> {
    const body: V1Job = { ...this.job, status: statusJson(status) };
    const name = this.job.metadata?.name ?? "";
    this.job = await this.jobs.replaceNamespacedJobStatus({ name, namespace: this.namespace, body });
    this.statusWritten = true;
  }

  /** Makes the Job the controller of orphans, after a fresh read shows the same Job, not being deleted. */
  private async adoptPods(pods: PodReference[]): Promise<void> {
    const name = this.job.metadata?.name ?? "";
    const uid = this.job.metadata?.uid ?? "";
    const fresh = await this.jobs.readNamespacedJob({ name, namespace: this.namespace });
    if (fresh.metadata?.uid !== uid) throw new Error(`job ${this.namespace}/${name} was recreated; not adopting`);
    if (fresh.metadata?.deletionTimestamp) throw new Error(`job ${this.namespace}/${name} is being deleted; not adopting`);
    const owner = { apiVersion: "batch/v1", kind: "Job", name, uid, controller: true, blockOwnerDeletion: true };
    await this.forEachPod(pods, async (p) => {
      const body = { metadata: { ownerReferences: [owner], finalizers: [JOB_TRACKING_FINALIZER], uid: p.uid } };
      await this.pods.patchNamespacedPod({ name: p.name, namespace: this.namespace, body }, strategicMerge());
    });
  }

  /** Drops the Job's owner reference and the finalizer in one patch; a pod gone or no longer ours is fine. */
  private async releasePod(p: PodReference): Promise<void> {
    const body = {
      metadata: {
        ownerReferences: [{ $patch: "delete", uid: this.job.metadata?.uid ?? "" }],
        "$deleteFromPrimitiveList/finalizers": [JOB_TRACKING_FINALIZER],
        uid: p.uid,
      },
    };
    try {
      await this.pods.patchNamespacedPod({ name: p.name, namespace: this.namespace, body }, strategicMerge());
    } catch (err) {
      const code = httpStatusOf(err);
      if (code !== 404 && code !== 422) throw err;
    }
  }

  /** As the pod garbage collector: a status patch to Failed, then a delete, both guarded by UID. */
  private async failPod(p: PodFailure): Promise<void> {
    const name = p.pod?.name ?? "";
    try {
      const body = podFailurePatch(p, new Date());
      await this.pods.patchNamespacedPodStatus({ name, namespace: this.namespace, body }, strategicMerge());
      // terminatingTimeout's forceDelete: no kubelet will finish the pod.
      await this.deleteGuarded(name, p.pod?.uid ?? "", p.forceDelete ? 0 : undefined);
    } catch (err) {
      if (isNotFound(err)) return;
      this.event("Warning", "FailedDelete", `Error failing pod ${name}: ${String(err)}`);
      throw err;
    }
    this.event("Normal", "SuccessfulDelete", `Failed and deleted pod: ${name} (${p.reason})`);
  }
}

// Your own Job controller in one screen: watch the Jobs whose spec.managedBy is --controller-name,
// and on each sync read the Job and its pods fresh from the API server (never older than our own
// writes), decide, apply the plan with @kubernetes/client-node, keep `state` per Job, requeue.
// node dist/examples/controller.js --kubeconfig=PATH --decider=HOST:PORT --controller-name=NAME
import { parseArgs } from "node:util";
import { BatchV1Api, CoreV1Api, KubeConfig, Watch, type V1Job, type V1Pod } from "@kubernetes/client-node";
import { ObjectSerializer } from "@kubernetes/client-node/dist/gen/models/ObjectSerializer.js";
import { createJobDeciderClient, decideJobRequest, type ControllerState } from "@job-decider/client";
import { Applier, ApplyError, httpStatusOf } from "@job-decider/client/apply";

const { values: flags } = parseArgs({
  options: { kubeconfig: { type: "string" }, decider: { type: "string" }, "controller-name": { type: "string" } },
});
const controllerName = flags["controller-name"] ?? "example.com/my-controller";
const kc = new KubeConfig();
if (flags.kubeconfig) kc.loadFromFile(flags.kubeconfig);
else kc.loadFromDefault();
const core = kc.makeApiClient(CoreV1Api);
const batch = kc.makeApiClient(BatchV1Api);
const decider = createJobDeciderClient(flags.decider);
const applier = new Applier(core, batch);
const states = new Map<string, ControllerState>(); // the plan's state, per Job UID
const ours = new Set<string>(); // keys (namespace/name) of the Jobs managed by us

// A work queue: a key is synced by one sync at a time; events during a sync sync it again.
const queued = new Set<string>();
const running = new Set<string>();
const enqueue = (key: string, afterMs = 0) => void setTimeout(() => add(key), afterMs);
function add(key: string): void {
  if (running.has(key)) return void queued.add(key);
  running.add(key);
  void sync(key)
    .catch((err: unknown) => {
      console.error(`job ${key}: sync failed, retrying in 1s: ${String(err)}`);
      enqueue(key, 1000); // a conflict included: decide again from fresh reads
    })
    .finally(() => {
      running.delete(key);
      if (queued.delete(key)) add(key);
    });
}

async function sync(key: string): Promise<void> {
  const [namespace = "", name = ""] = key.split("/");
  const job = await batch.readNamespacedJob({ name, namespace }).catch((err: unknown) => {
    if (httpStatusOf(err) === 404) return undefined;
    throw err;
  });
  if (job === undefined || job.spec?.managedBy !== controllerName) return void ours.delete(key);
  const uid = job.metadata?.uid ?? "";
  const pods = await core.listNamespacedPod({ namespace, labelSelector: `batch.kubernetes.io/controller-uid=${uid}` });
  // decideJobRequest reads kubectl's JSON; client-node's objects hold Dates and unset fields as
  // undefined: serialize them, then drop the undefined fields as JSON does.
  const json = (obj: V1Job | V1Pod, type: string): unknown => JSON.parse(JSON.stringify(ObjectSerializer.serialize(obj, type, "")));
  const request = decideJobRequest(json(job, "V1Job"), pods.items.map((p) => json(p, "V1Pod")), {
    now: new Date(),
    state: states.get(uid),
    controllerName,
  });
  const plan = await decider.decideJob(request);
  console.log(`job ${key}: ${plan.actions.map((a) => a.kind.case).join(", ") || "nothing to do"}`);
  try {
    const result = await applier.apply(job, plan);
    if (result.stateHolds && plan.state) states.set(uid, plan.state);
  } catch (err) {
    if (err instanceof ApplyError && err.result.stateHolds && plan.state) states.set(uid, plan.state);
    throw err;
  }
  if (plan.requeueAfter) enqueue(key, Number(plan.requeueAfter.seconds) * 1000 + plan.requeueAfter.nanos / 1e6);
}

// Watch Jobs (all namespaces) and the pods of ours; a watch that ends is started again.
function watch(path: string, query: Record<string, string>, onEvent: (obj: V1Job & V1Pod) => void): void {
  let ended = false;
  const restart = () => void (ended || ((ended = true), setTimeout(() => watch(path, query, onEvent), 1000)));
  new Watch(kc).watch(path, query, (_type, obj: V1Job & V1Pod) => onEvent(obj), restart).catch(restart);
}
watch("/apis/batch/v1/jobs", {}, (job) => {
  const key = `${job.metadata?.namespace}/${job.metadata?.name}`;
  if (job.spec?.managedBy !== controllerName) return;
  ours.add(key);
  enqueue(key);
});
watch("/api/v1/pods", { labelSelector: "batch.kubernetes.io/controller-uid" }, (pod) => {
  const owner = pod.metadata?.ownerReferences?.find((r) => r.controller && r.kind === "Job");
  const key = `${pod.metadata?.namespace}/${owner?.name}`;
  if (owner && ours.has(key)) enqueue(key);
});
console.log(`controller ${controllerName}: watching Jobs`);

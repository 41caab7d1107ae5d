// Usage: node controller-loop.js job.json pods.json [SYNCS]: the shape of a controller's loop
// for one Job. Each sync reads the Job and its pods (here the files; in a controller, your
// informer's cache), decides, applies the plan (here printed), sends the plan's `state` back
// with the next request, and comes back after `requeueAfter` when the plan asks for it.
import { readFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { createJobDeciderClient, decideJobRequest, type ControllerState } from "@job-decider/client";

const [jobFile = "job.json", podsFile = "pods.json", syncs = "1"] = process.argv.slice(2);
const client = createJobDeciderClient(process.env.JOB_DECIDER_ADDR ?? "127.0.0.1:50051");
let state: ControllerState | undefined; // kept per Job (by uid) in a real controller

for (let sync = 1; sync <= Number(syncs); sync++) {
  const job = JSON.parse(readFileSync(jobFile, "utf8"));
  const pods = JSON.parse(readFileSync(podsFile, "utf8"));
  const plan = await client.decideJob(
    decideJobRequest(job, pods, { now: new Date(), state, explain: true, controllerName: "kubernetes.io/job-controller" }),
  );
  console.log(`sync ${sync}: ${plan.explanation?.summary}`);
  for (const action of plan.actions) {
    console.log(`  ${action.kind.case}`); // apply in order; stop at the first failure
  }
  // Send the state back next time, or the pod-failure backoff starts over. (If applying stopped
  // before the plan's first updateStatus, keep the previous state instead.)
  state = plan.state ?? state;
  if (plan.requeueAfter !== undefined) {
    const ms = Number(plan.requeueAfter.seconds) * 1000 + plan.requeueAfter.nanos / 1e6;
    console.log(`  requeue after ${ms} ms: ${plan.explanation?.requeueReason}`);
    await sleep(ms); // a controller requeues the Job's key with this delay instead
  }
}

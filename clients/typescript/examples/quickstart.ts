// Usage: node quickstart.js job.json pods.json (as `kubectl get job NAME -o json` and
// `kubectl get pods -l batch.kubernetes.io/controller-uid=UID -o json` print them)
import { readFileSync } from "node:fs";
import { toJsonString } from "@bufbuild/protobuf";
import { ActionSchema, createJobDeciderClient, decideJobRequest } from "@job-decider/client";

const [jobFile = "job.json", podsFile = "pods.json"] = process.argv.slice(2);
const job = JSON.parse(readFileSync(jobFile, "utf8"));
const pods = JSON.parse(readFileSync(podsFile, "utf8"));
const client = createJobDeciderClient(process.env.JOB_DECIDER_ADDR ?? "127.0.0.1:50051");
const plan = await client.decideJob(decideJobRequest(job, pods, { now: new Date() }));
for (const action of plan.actions) {
  console.log(toJsonString(ActionSchema, action));
}

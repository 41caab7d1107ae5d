// Usage: node errors.js job.json pods.json: sends the Job without its metadata.uid, which the
// server rejects, and prints the error's code, ErrorInfo reason and field violations.
import { readFileSync } from "node:fs";
import { DecideError, createJobDeciderClient, decideJobRequest } from "@job-decider/client";

const [jobFile = "job.json", podsFile = "pods.json"] = process.argv.slice(2);
const job = JSON.parse(readFileSync(jobFile, "utf8"));
delete job.metadata.uid;
const pods = JSON.parse(readFileSync(podsFile, "utf8"));
const client = createJobDeciderClient(process.env.JOB_DECIDER_ADDR ?? "127.0.0.1:50051");
try {
  await client.decideJob(decideJobRequest(job, pods));
} catch (e) {
  const error = DecideError.from(e);
  console.log(`${error.codeName} ${error.errorInfo?.reason}`);
  for (const violation of error.fieldViolations) {
    console.log(`${violation.field} (${violation.reason})\n  ${violation.description}`);
  }
}

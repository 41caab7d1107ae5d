// Usage: node dropped-fields.js job.json pods.json: prints the fields kubectl printed that the
// contract lacks (decisions do not read them), one JSON path a line.
import { readFileSync } from "node:fs";
import { convert } from "@job-decider/client";

const [jobFile = "job.json", podsFile = "pods.json"] = process.argv.slice(2);
const job = JSON.parse(readFileSync(jobFile, "utf8"));
const pods = JSON.parse(readFileSync(podsFile, "utf8"));
const { request, dropped } = convert(job, pods);
console.log(`${request.leanPods.length + request.pods.length} pods; dropped:`);
for (const path of dropped) {
  console.log(path);
}

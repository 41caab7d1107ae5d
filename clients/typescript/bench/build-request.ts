// Usage: node dist/bench/build-request.js [PODS]: times decideJobRequest on a Job of PODS pods
// (60,000 by default), made by repeating the bundled kep-3329 example's pods with fresh names
// and uids, in the lean encoding (what the controller loop sends) and the full one, and prints
// the median of 5 runs of each and the encoded size. A benchmark, not a test: the figure goes in
// the README.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { toBinary } from "@bufbuild/protobuf";
import { DecideJobRequestSchema, decideJobRequest } from "@job-decider/client";

const count = Number(process.argv[2] ?? 60_000);
const root = join(fileURLToPath(import.meta.url), "..", "..", "..", "..", "..");
const dir = join(root, "examples", "kep-3329-failjob-exit-code-42");
const job = JSON.parse(readFileSync(join(dir, "job.json"), "utf8"));
const sample = JSON.parse(readFileSync(join(dir, "pods.json"), "utf8")).items as { metadata: { name: string; uid: string } }[];
const items = Array.from({ length: count }, (_, i) => {
  const pod = structuredClone(sample[i % sample.length]!);
  pod.metadata.name = `${pod.metadata.name}-${i}`;
  pod.metadata.uid = `${pod.metadata.uid}-${i}`;
  return pod;
});
const pods = { apiVersion: "v1", kind: "PodList", items };
const now = new Date("2025-06-02T10:00:00Z");

for (const podEncoding of ["lean", "full"] as const) {
  const times: number[] = [];
  let bytes = 0;
  for (let run = 0; run < 5; run++) {
    const started = process.hrtime.bigint();
    const request = decideJobRequest(job, pods, { now, podEncoding });
    times.push(Number(process.hrtime.bigint() - started) / 1e6);
    bytes = toBinary(DecideJobRequestSchema, request).length;
  }
  times.sort((a, b) => a - b);
  console.log(
    `${podEncoding}: ${count} pods in ${(times[2]! / 1000).toFixed(2)} s (median of 5; min ${(times[0]! / 1000).toFixed(2)} s), ${(bytes / 1e6).toFixed(1)} MB encoded`,
  );
}

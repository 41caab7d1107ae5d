// Usage: node round-robin.js HOST:PORT [CALLS]: spreads calls over every address HOST resolves
// to (a headless Service's pods), one client per address, in turn. Connect-node keeps one
// HTTP/2 connection per client and cannot balance by itself, so this is the alternative to
// gRPC's round_robin policy. Resolve again every so often (pods come and go); a call that fails
// with UNAVAILABLE on one address can simply be sent to the next.
import { lookup } from "node:dns/promises";
import { createJobDeciderClient, type JobDeciderClient } from "@job-decider/client";

const [target = "job-decider.default.svc.cluster.local:50051", calls = "4"] = process.argv.slice(2);
const colon = target.lastIndexOf(":");
const [host, port] = [target.slice(0, colon), target.slice(colon + 1)];
const addresses = await lookup(host, { all: true });
const clients: JobDeciderClient[] = addresses.map((a) =>
  createJobDeciderClient(a.family === 6 ? `[${a.address}]:${port}` : `${a.address}:${port}`),
);
let next = 0;
const pick = () => clients[next++ % clients.length]!;

for (let i = 0; i < Number(calls); i++) {
  const { violations } = await pick().validateJob({ job: { metadata: { name: "example", uid: "u" } } });
  console.log(`call ${i + 1} to ${addresses[i % addresses.length]?.address}: ${violations.length} violations`);
}

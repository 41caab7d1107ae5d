// Shared by the tests: where the bundled examples and the server binary are, and the live
// server's address (tools/with-server.sh exports JOB_DECIDER_ADDR).
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** clients/typescript (the tests run from dist/test). */
export const packageDir = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
/** The repository root. */
export const repoRoot = resolve(packageDir, "..", "..");

/** The live server's host:port; the tests need one and say so plainly when it is missing. */
export function serverAddress(): string {
  const address = process.env["JOB_DECIDER_ADDR"];
  if (!address) {
    throw new Error("JOB_DECIDER_ADDR is not set: run the tests through tools/with-server.sh");
  }
  return address;
}

/** A bundled example's file path, e.g. example("kep-3329-failjob-exit-code-42", "job.json"). */
export function example(name: string, file: string): string {
  return join(repoRoot, "examples", name, file);
}

/** A JSON file, parsed. */
export function readJson(path: string): unknown {
  return JSON.parse(readFileSync(path, "utf8"));
}

/** The bundled examples that come as kubectl JSON (job.json and pods.json). */
export const jsonExamples = ["kep-3329-failjob-exit-code-42", "indexed-job-mid-run"];

/** The job-decider binary tools/with-server.sh runs (JOB_DECIDER_BIN, else the debug build). */
export function cliBin(): string {
  return process.env["JOB_DECIDER_BIN"] || join(repoRoot, "target", "debug", "job-decider");
}

/**
 * What `job-decider decide -o json` prints for an example: the proto3 JSON of the
 * DecideJobResponse the server's own decision path gives, used as the expected answer.
 */
export function cliDecide(name: string, now?: string): unknown {
  const bin = cliBin();
  const args = ["decide", "--job", example(name, "job.json"), "--pods", example(name, "pods.json"), "-o", "json"];
  if (now !== undefined) {
    args.push("--now", now);
  }
  return JSON.parse(execFileSync(bin, args, { encoding: "utf8" }));
}

// The language-neutral client conformance suite (conformance/clients/README.md) through the live
// server: every line of cases.jsonl, called with createJobDeciderClient and compared as the
// suite says.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { type DescMessage, type JsonValue, type MessageShape, equals, fromJson } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import {
  DecideError,
  DecideJobRequestSchema,
  DecideJobResponseSchema,
  DecideJobSetRequestSchema,
  DecideJobSetResponseSchema,
  ValidateJobRequestSchema,
  ValidateJobResponseSchema,
  createJobDeciderClient,
  type DecideJobResponse,
  type JobDeciderClient,
} from "@job-decider/client";
import { repoRoot, serverAddress } from "./support.js";

interface Case {
  name: string;
  method: "DecideJob" | "DecideJobSet" | "ValidateJob";
  request: JsonValue;
  response?: JsonValue;
  error?: { code: string; reason: string; violations: { field: string; reason: string }[] };
}

/** gRPC's own code name (INVALID_ARGUMENT) from Connect's enum (Code.InvalidArgument). */
function codeName(code: Code): string {
  return Code[code].replace(/([a-z])([A-Z])/g, "$1_$2").toUpperCase();
}

/** Each status write's uncounted UIDs sorted: the suite compares them as sets. */
function sortUncounted(response: DecideJobResponse): DecideJobResponse {
  for (const action of response.actions) {
    if (action.kind.case === "updateStatus") {
      const uncounted = action.kind.value.status?.uncountedTerminatedPods;
      uncounted?.succeeded.sort();
      uncounted?.failed.sort();
    }
  }
  return response;
}

/** Calls the case's method; the answer as a message of `schema`. */
async function call(client: JobDeciderClient, c: Case): Promise<{ schema: DescMessage; got: unknown }> {
  switch (c.method) {
    case "DecideJob":
      return {
        schema: DecideJobResponseSchema,
        got: sortUncounted(await client.decideJob(fromJson(DecideJobRequestSchema, c.request))),
      };
    case "DecideJobSet":
      return {
        schema: DecideJobSetResponseSchema,
        got: await client.decideJobSet(fromJson(DecideJobSetRequestSchema, c.request)),
      };
    case "ValidateJob":
      return {
        schema: ValidateJobResponseSchema,
        got: await client.validateJob(fromJson(ValidateJobRequestSchema, c.request)),
      };
  }
}

/** "" when the case's answer is the expected one, else what differs. */
async function run(client: JobDeciderClient, c: Case): Promise<string> {
  let answer: { schema: DescMessage; got: unknown };
  try {
    answer = await call(client, c);
  } catch (e) {
    const err = DecideError.from(e);
    if (c.error === undefined) {
      return `failed: ${err.message}`;
    }
    const got = {
      code: codeName(err.code),
      reason: err.errorInfo?.reason ?? "",
      violations: err.fieldViolations.map((v) => ({ field: v.field, reason: v.reason })),
    };
    return JSON.stringify(got) === JSON.stringify(c.error)
      ? ""
      : `error differs: want ${JSON.stringify(c.error)}, got ${JSON.stringify(got)}`;
  }
  if (c.error !== undefined) {
    return `succeeded, want ${JSON.stringify(c.error)}`;
  }
  const want = fromJson(answer.schema, c.response ?? {});
  return equals(answer.schema, answer.got as MessageShape<DescMessage>, want) ? "" : "answer differs";
}

test("every case of the client conformance suite passes", async () => {
  const client = createJobDeciderClient(serverAddress());
  const lines = readFileSync(join(repoRoot, "conformance", "clients", "cases.jsonl"), "utf8").split("\n");
  const failures: string[] = [];
  const methods = new Map<string, number>();
  for (const line of lines.filter((l) => l.length > 0)) {
    const c = JSON.parse(line) as Case;
    methods.set(c.method, (methods.get(c.method) ?? 0) + 1);
    const problem = await run(client, c);
    if (problem !== "") {
      failures.push(`${c.name}: ${problem}`);
    }
  }
  assert.deepEqual(failures, []);
  for (const method of ["DecideJob", "DecideJobSet", "ValidateJob"]) {
    assert.ok((methods.get(method) ?? 0) > 0, `no ${method} case: ${JSON.stringify([...methods])}`);
  }
});

// Bad requests against the live server, read through DecideError.
import assert from "node:assert/strict";
import { test } from "node:test";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { DecideError, JobDecider, createJobDeciderClient, decideJobRequest } from "@job-decider/client";
import { example, readJson, serverAddress } from "./support.js";

const name = "kep-3329-failjob-exit-code-42";

/** The bundled example's request with the Job's metadata.uid taken out. */
function jobWithoutUid() {
  const job = readJson(example(name, "job.json")) as { metadata: { uid?: string } };
  assert.ok(job.metadata.uid, "the example has a uid to take out");
  delete job.metadata.uid;
  return decideJobRequest(job, readJson(example(name, "pods.json")), { now: new Date("2025-06-02T10:00:00Z") });
}

/** Runs `call`, which must fail, and returns what it threw. */
async function rejection(call: () => Promise<unknown>): Promise<unknown> {
  try {
    await call();
  } catch (error) {
    return error;
  }
  assert.fail("the call succeeded");
}

test("a Job without metadata.uid: INVALID_ARGUMENT naming job.metadata.uid, with ErrorInfo", async () => {
  const client = createJobDeciderClient(serverAddress());
  const error = await rejection(() => client.decideJob(jobWithoutUid()));
  assert.ok(error instanceof DecideError, `threw ${String(error)}`);
  assert.equal(error.code, Code.InvalidArgument);
  assert.equal(error.codeName, "INVALID_ARGUMENT");
  assert.deepEqual(
    error.fieldViolations.map((v) => v.field),
    ["job.metadata.uid"],
  );
  const violation = error.fieldViolations[0]!;
  assert.equal(violation.reason, "FieldValueRequired");
  assert.match(violation.description, /Required value/);
  assert.match(error.rawMessage, /job\.metadata\.uid/);
  // ErrorInfo: the service's stable reason and domain (crates/api/src/status.rs).
  assert.equal(error.errorInfo?.reason, "INVALID_SNAPSHOT");
  assert.equal(error.errorInfo?.domain, "jobdecider.dev");
  assert.ok(error.cause instanceof ConnectError);
});

test("an empty request: a violation for each missing field, in the server's order", async () => {
  const client = createJobDeciderClient(serverAddress());
  const error = DecideError.from(await rejection(() => client.decideJob({})));
  assert.equal(error.code, Code.InvalidArgument);
  assert.deepEqual(
    error.fieldViolations.map((v) => v.field),
    ["job", "now"],
  );
});

test("DecideError.from reads the same details from a plain Connect client's ConnectError", async () => {
  const plain = createClient(JobDecider, createGrpcTransport({ baseUrl: `http://${serverAddress()}` }));
  const thrown = await rejection(() => plain.decideJob(jobWithoutUid()));
  assert.ok(thrown instanceof ConnectError);
  const error = DecideError.from(thrown);
  assert.equal(error.code, Code.InvalidArgument);
  assert.deepEqual(
    error.fieldViolations.map((v) => v.field),
    ["job.metadata.uid"],
  );
  assert.equal(error.errorInfo?.domain, "jobdecider.dev");
  assert.equal(DecideError.from(error), error);
});

test("no server at the address: UNAVAILABLE, with no details", async () => {
  // Port 1 on loopback: nothing listens there.
  const client = createJobDeciderClient("127.0.0.1:1");
  const error = await rejection(() => client.decideJob(jobWithoutUid()));
  assert.ok(error instanceof DecideError);
  assert.equal(error.code, Code.Unavailable);
  assert.deepEqual(error.fieldViolations, []);
  assert.equal(error.errorInfo, undefined);
});

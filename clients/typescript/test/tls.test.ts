// createJobDeciderClient over TLS ("https://host:port" and nodeOptions.ca), against a server
// this test starts with a self-signed certificate for 127.0.0.1 (made with openssl).
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { Code } from "@connectrpc/connect";
import { DecideError, createJobDeciderClient, requestFromKubectl } from "@job-decider/client";
import { example, readJson, repoRoot } from "./support.js";

const hasOpenssl = (() => {
  try {
    execFileSync("openssl", ["version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
})();

let dir = "";
let port = 0;
let server: ReturnType<typeof spawn> | undefined;

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((resolve) => s.listen(0, "127.0.0.1", resolve));
  const address = s.address();
  await new Promise((resolve) => s.close(resolve));
  assert.ok(address !== null && typeof address === "object");
  return address.port;
}

async function accepts(p: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(p, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

before(async () => {
  if (!hasOpenssl) {
    return;
  }
  dir = mkdtempSync(join(tmpdir(), "job-decider-tls-"));
  execFileSync("openssl", [
    "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1",
    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
    "-keyout", join(dir, "key.pem"), "-out", join(dir, "cert.pem"),
  ], { stdio: "ignore" });
  port = await freePort();
  const bin = process.env["JOB_DECIDER_BIN"] || join(repoRoot, "target", "debug", "job-decider");
  server = spawn(bin, [
    "serve", "--addr", `127.0.0.1:${port}`, "--metrics-addr", "127.0.0.1:0", "--log-level", "warn",
    "--tls-cert", join(dir, "cert.pem"), "--tls-key", join(dir, "key.pem"),
  ], { stdio: "inherit" });
  // Bounded wait: 200 tries, 50 ms apart.
  for (let i = 0; i < 200 && !(await accepts(port)); i++) {
    assert.equal(server.exitCode, null, "the TLS server exited");
    await sleep(50);
  }
});

after(() => {
  server?.kill();
  if (dir) {
    rmSync(dir, { recursive: true, force: true });
  }
});

const name = "kep-3329-failjob-exit-code-42";

test("an https:// address with the server's CA decides over TLS", { skip: !hasOpenssl && "openssl is not installed" }, async () => {
  const client = createJobDeciderClient(`https://127.0.0.1:${port}`, {
    transport: { nodeOptions: { ca: readFileSync(join(dir, "cert.pem")) } },
  });
  const response = await client.decideJob(
    requestFromKubectl(readJson(example(name, "job.json")), readJson(example(name, "pods.json"))),
  );
  assert.equal(response.actions[0]?.kind.case, "deletePods");
});

test("an https:// address without the CA fails: the certificate is not trusted", { skip: !hasOpenssl && "openssl is not installed" }, async () => {
  const client = createJobDeciderClient(`https://127.0.0.1:${port}`);
  await assert.rejects(client.decideJob({}), (error: unknown) => {
    assert.ok(error instanceof DecideError);
    // Connect reports a TLS verification failure as INTERNAL, with Node's reason as the message.
    assert.equal(error.code, Code.Internal, error.message);
    assert.match(error.rawMessage, /self-signed certificate/);
    return true;
  });
});

// createJobDeciderClient over mutual TLS ("https://host:port", nodeOptions ca, cert and key),
// against a server this test starts with certificates made with openssl: a test CA signs the
// server's (127.0.0.1) and the client's, and the server takes the CA as its client CA.
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { Code } from "@connectrpc/connect";
import { DecideError, createJobDeciderClient, decideJobRequest } from "@job-decider/client";
import { cliBin, example, readJson } from "./support.js";

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
  // A test CA, and a server (127.0.0.1) and a client certificate it signs.
  const openssl = (...args: string[]) => execFileSync("openssl", args, { cwd: dir, stdio: "ignore" });
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
  openssl("req", "-x509", ...ec, "-days", "1", "-subj", "/CN=job-decider test CA", "-keyout", "ca-key.pem", "-out", "ca.pem");
  for (const [who, extension] of [
    ["server", "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth"],
    ["client", "extendedKeyUsage=clientAuth"],
  ] as const) {
    writeFileSync(join(dir, `${who}.ext`), `basicConstraints=CA:FALSE\n${extension}\n`);
    openssl("req", ...ec, "-subj", `/CN=job-decider test ${who}`, "-keyout", `${who}-key.pem`, "-out", `${who}.csr`);
    openssl("x509", "-req", "-in", `${who}.csr`, "-CA", "ca.pem", "-CAkey", "ca-key.pem", "-CAcreateserial",
      "-days", "1", "-extfile", `${who}.ext`, "-out", `${who}.pem`);
  }
  port = await freePort();
  server = spawn(cliBin(), [
    "serve", "--addr", `127.0.0.1:${port}`, "--metrics-addr", "127.0.0.1:0", "--log-level", "warn",
    "--tls-cert", join(dir, "server.pem"), "--tls-key", join(dir, "server-key.pem"),
    "--tls-client-ca", join(dir, "ca.pem"),
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

const skip = !hasOpenssl && "openssl is not installed";
const file = (name: string) => readFileSync(join(dir, name));

test("an https:// address with the server's CA and a client certificate decides over mutual TLS", { skip }, async () => {
  const client = createJobDeciderClient(`https://127.0.0.1:${port}`, {
    transport: { nodeOptions: { ca: file("ca.pem"), cert: file("client.pem"), key: file("client-key.pem") } },
  });
  const response = await client.decideJob(
    decideJobRequest(readJson(example(name, "job.json")), readJson(example(name, "pods.json"))),
  );
  assert.equal(response.actions[0]?.kind.case, "deletePods");
});

test("without a client certificate the server refuses the call", { skip }, async () => {
  const client = createJobDeciderClient(`https://127.0.0.1:${port}`, { transport: { nodeOptions: { ca: file("ca.pem") } } });
  await assert.rejects(client.decideJob({}), (error: unknown) => {
    assert.ok(error instanceof DecideError);
    // The TLS 1.3 "certificate required" alert, reported by Connect as INTERNAL.
    assert.equal(error.code, Code.Internal, error.message);
    assert.match(error.rawMessage, /certificate required/);
    return true;
  });
});

test("without the server's CA the call fails: the certificate is not trusted", { skip }, async () => {
  const client = createJobDeciderClient(`https://127.0.0.1:${port}`);
  await assert.rejects(client.decideJob({}), (error: unknown) => {
    assert.ok(error instanceof DecideError);
    // Connect reports a TLS verification failure as INTERNAL, with Node's reason as the message.
    assert.equal(error.code, Code.Internal, error.message);
    assert.match(error.rawMessage, /unable to verify the first certificate/);
    return true;
  });
});

/** A directory laid out as a cert-manager Secret mounts: ca.crt, and tls.crt + tls.key when `client`. */
function secretDir(client: boolean): string {
  const secret = mkdtempSync(join(dir, "secret-"));
  writeFileSync(join(secret, "ca.crt"), file("ca.pem"));
  if (client) {
    writeFileSync(join(secret, "tls.crt"), file("client.pem"));
    writeFileSync(join(secret, "tls.key"), file("client-key.pem"));
  }
  return secret;
}

test("tlsDir (ca.crt, tls.crt, tls.key as cert-manager writes them) decides over mutual TLS to host:port", { skip }, async () => {
  const client = createJobDeciderClient(`127.0.0.1:${port}`, { tlsDir: secretDir(true) });
  const response = await client.decideJob(
    decideJobRequest(readJson(example(name, "job.json")), readJson(example(name, "pods.json"))),
  );
  assert.equal(response.actions[0]?.kind.case, "deletePods");
});

test("tlsDir with ca.crt only: TLS, and the server asks for the client certificate it lacks", { skip }, async () => {
  const client = createJobDeciderClient(`dns:///127.0.0.1:${port}`, { tlsDir: secretDir(false) });
  await assert.rejects(client.decideJob({}), (error: unknown) => {
    assert.ok(error instanceof DecideError);
    assert.match(error.rawMessage, /certificate required/);
    return true;
  });
});

test("tlsDir with a server name the certificate lacks: the call fails the name check", { skip }, async () => {
  const client = createJobDeciderClient(`127.0.0.1:${port}`, { tlsDir: secretDir(true), serverName: "elsewhere.example" });
  await assert.rejects(client.decideJob({}), (error: unknown) => {
    assert.ok(error instanceof DecideError);
    assert.match(error.rawMessage, /elsewhere\.example|altnames/i);
    return true;
  });
});

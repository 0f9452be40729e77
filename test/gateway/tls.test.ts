// https/wss to a jupyter_server whose certificate a private CA signed (made here with openssl): the
// backend works when given the CA, and says why when not.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { GatewayBackend } from "../../src/kernel/index.js";
import { describeFailure } from "../../src/tools/failure-text.js";
import { type JupyterServerHandle, startJupyterServer } from "./helpers.js";

let server: JupyterServerHandle;
let ca: Buffer;

/** A CA, and a certificate for 127.0.0.1 it signed. */
function makeCertificates(dir: string): { ca: string; cert: string; key: string } {
  const run = (...args: string[]) => execFileSync("openssl", args, { cwd: dir, stdio: "pipe" });
  run(
    "req",
    "-x509",
    "-newkey",
    "rsa:2048",
    "-nodes",
    "-days",
    "2",
    "-subj",
    "/CN=nbagent test CA",
    "-keyout",
    "ca.key",
    "-out",
    "ca.pem",
  );
  run(
    "req",
    "-newkey",
    "rsa:2048",
    "-nodes",
    "-subj",
    "/CN=127.0.0.1",
    "-keyout",
    "server.key",
    "-out",
    "server.csr",
  );
  writeFileSync(join(dir, "ext.cnf"), "subjectAltName=IP:127.0.0.1\n");
  run(
    "x509",
    "-req",
    "-in",
    "server.csr",
    "-CA",
    "ca.pem",
    "-CAkey",
    "ca.key",
    "-CAcreateserial",
    "-days",
    "2",
    "-extfile",
    "ext.cnf",
    "-out",
    "server.pem",
  );
  return { ca: join(dir, "ca.pem"), cert: join(dir, "server.pem"), key: join(dir, "server.key") };
}

before(async () => {
  const files = makeCertificates(mkdtempSync(join(tmpdir(), "nbagent-tls-")));
  ca = readFileSync(files.ca);
  server = await startJupyterServer({ certfile: files.cert, keyfile: files.key, ca });
});
after(async () => {
  await server?.stop();
});

test("https + wss with the private CA: a kernel starts and executes", async () => {
  assert.match(server.url, /^https:/);
  const backend = new GatewayBackend({ url: server.url, token: server.token, ca });
  try {
    const kernel = await backend.startKernel({});
    assert.equal((await kernel.execute("print('over tls'); 2 ** 10")).text, "over tls\n");
    assert.equal(backend.connection(kernel)?.protocol, "v1");
  } finally {
    await backend.dispose();
  }
});

test("without the CA the certificate is refused, and the error names the URL", async () => {
  const backend = new GatewayBackend({ url: server.url, token: server.token });
  await assert.rejects(backend.listKernels(), (err) =>
    /^could not reach the gateway at https:\/\/127\.0\.0\.1:\d+ \(GET \/api\/kernels\): .*(self.signed|unable to verify|local issuer)/i.test(
      describeFailure(err),
    ),
  );
});

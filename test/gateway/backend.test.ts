// The gateway backend against a real jupyter_server (started here with a token): start, execute,
// interrupt, restart in place, shutdown, attach from a second backend, kernelspecs.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { GatewayBackend, KernelGoneError, KernelStartError } from "../../src/kernel/index.js";
import { describeFailure } from "../../src/tools/failure-text.js";
import { type JupyterServerHandle, SERVER_PYTHON, startJupyterServer } from "./helpers.js";

let server: JupyterServerHandle;
let backend: GatewayBackend;

// A kernel that takes 3 s to start: the server holds its first WebSocket until it answers kernel_info.
const SLOW = {
  argv: [
    SERVER_PYTHON,
    "-c",
    "import time; time.sleep(3)\nfrom ipykernel.kernelapp import launch_new_instance; launch_new_instance()",
    "-f",
    "{connection_file}",
  ],
  display_name: "Slow Python",
  language: "python",
};

before(async () => {
  server = await startJupyterServer({ kernelspecs: { slow: SLOW } });
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
      assert.equal(backend.connection(kernel)?.protocol, "v1");
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

  test("the first WebSocket waits for a slow kernel's start (launch bound), not the connect bound", async () => {
    const quick = new GatewayBackend({ url: server.url, token: server.token, connectTimeoutMs: 300 });
    try {
      const kernel = await quick.startKernel({ kernelName: "slow" });
      assert.equal((await kernel.execute("6 * 7")).displays[0]?.text, "42");
      await kernel.shutdown();
      // A launch bound shorter than the start: an error that says what timed out; no kernel left behind.
      const impatient = new GatewayBackend({ url: server.url, token: server.token, launchTimeoutMs: 500 });
      const before = (await quick.listKernels()).map((k) => k.id);
      await assert.rejects(impatient.startKernel({ kernelName: "slow" }), (err: Error) => {
        assert.match(describeFailure(err), /500 ms/);
        return true;
      });
      assert.deepEqual(
        (await quick.listKernels()).map((k) => k.id),
        before,
      );
      await impatient.dispose();
    } finally {
      await quick.dispose();
    }
  });

  test("interrupt stops running code through REST; the kernel keeps its state", async () => {
    const kernel = await backend.startKernel({});
    try {
      await kernel.execute("x = 7");
      const seen: string[] = [];
      let interrupted = false;
      const running = kernel.execute("import time\nprint('sleeping', flush=True)\ntime.sleep(60)", {
        onChunk: (t) => {
          seen.push(t);
          // Once: the traceback that follows quotes the line with "sleeping" too, and a second
          // interrupt would land in the next execution.
          if (interrupted || !t.includes("sleeping")) return;
          interrupted = true;
          void kernel.interrupt();
        },
      });
      const r = await running;
      assert.equal(r.status, "error");
      assert.equal(r.error?.name, "KeyboardInterrupt");
      assert.equal(r.kernelRestarted, false);
      const after = await kernel.execute("x");
      assert.equal(after.displays[0]?.text, "7");
    } finally {
      await kernel.shutdown();
    }
  });

  test("restart keeps the kernel id and loses the state", async () => {
    const kernel = await backend.startKernel({});
    try {
      const id = kernel.kernelId;
      await kernel.execute("x = 7");
      await kernel.restart();
      assert.equal(kernel.kernelId, id);
      assert.ok(kernel.isAlive());
      const r = await kernel.execute("x");
      assert.equal(r.status, "error");
      assert.equal(r.error?.name, "NameError");
      assert.equal((await kernel.execute("1 + 1")).displays[0]?.text, "2");
    } finally {
      await kernel.shutdown();
    }
  });

  test("a second backend attaches to the same kernel and sees its state; detach leaves it running", async () => {
    const kernel = await backend.startKernel({});
    const other = new GatewayBackend({ url: server.url, token: server.token });
    try {
      await kernel.execute("shared = 41");
      const attached = await other.attachKernel(kernel.kernelId!);
      assert.equal(attached.kernelId, kernel.kernelId);
      assert.equal((await attached.execute("shared + 1")).displays[0]?.text, "42");
      await attached.detach();
      await other.dispose();
      assert.ok(await backend.getKernel(kernel.kernelId!), "detach did not stop the kernel");
      assert.equal((await kernel.execute("shared")).displays[0]?.text, "41");
    } finally {
      await other.dispose();
      await kernel.shutdown();
    }
  });

  test("attaching to a kernel the server does not have: KernelGoneError naming the id", async () => {
    const id = "00000000-0000-0000-0000-000000000000";
    await assert.rejects(backend.attachKernel(id), (err: Error) => {
      assert.ok(err instanceof KernelGoneError);
      assert.equal(err.kernelId, id);
      assert.match(describeFailure(err), /^the gateway at http:\/\/127\.0\.0\.1:\d+ has no kernel 0{8}-/);
      return true;
    });
  });

  test("a kernel deleted by someone else dies with a reason saying the server says it is gone", async () => {
    const kernel = await backend.startKernel({});
    const died = new Promise<string>((resolve) => kernel.onDeath(resolve));
    // jupyter_server keeps the socket open: the backend's periodic check notices (default 5 s)
    await new GatewayBackend({ url: server.url, token: server.token }).deleteKernel(kernel.kernelId!);
    const reason = await died;
    assert.match(reason, /says kernel [0-9a-f-]{36} no longer exists/);
    assert.equal(kernel.isAlive(), false);
    const r = await kernel.execute("1");
    assert.equal(r.codeStarted, false);
    assert.deepEqual(
      r.notices.map((n) => n.kind),
      ["kernel-not-running"],
    );
    await kernel.shutdown();
  });

  test("dispose() shuts down the kernels it started", async () => {
    const own = new GatewayBackend({ url: server.url, token: server.token });
    const kernel = await own.startKernel({});
    await own.dispose();
    assert.equal(await backend.getKernel(kernel.kernelId!), undefined);
  });

  test("an aborted start sends nothing and says it was cancelled", async () => {
    const before = (await backend.listKernels()).length;
    const controller = new AbortController();
    controller.abort();
    // The shared lifecycle refuses an aborted start before the backend is asked (its own wording).
    await assert.rejects(backend.startKernel({ signal: controller.signal }));
    assert.equal((await backend.listKernels()).length, before);
    await assert.rejects(backend.rest.request("POST", "api/kernels", { signal: controller.signal }), (err) =>
      /^POST \/api\/kernels to the gateway at http:\/\/127\.0\.0\.1:\d+ was cancelled$/.test(
        describeFailure(err),
      ),
    );
    assert.equal((await backend.listKernels()).length, before);
  });

  test("kernelspecs come from /api/kernelspecs", async () => {
    assert.ok((await backend.kernelSpecNames()).includes("python3"));
    const info = await backend.kernelSpecInfo("python3");
    assert.equal(info.language, "python");
    await assert.rejects(backend.kernelSpecInfo("nope"), (err: Error) => {
      assert.ok(err instanceof KernelStartError);
      assert.equal(err.failure.kind, "no-such-kernelspec");
      assert.match(
        describeFailure(err),
        /^the gateway at http:\/\/127\.0\.0\.1:\d+ has no kernelspec "nope" \(it has: .*python3/,
      );
      return true;
    });
  });
});

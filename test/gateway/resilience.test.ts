// The gateway backend through a reverse proxy that misbehaves on purpose: kernel creation answered
// 503 (one retry), channel WebSockets dropped mid-cell (reconnect, replay, full result), and a
// server that is refused without its token.
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { GatewayBackend, GatewayHttpError } from "../../src/kernel/index.js";
import { createRuntime } from "../../src/runtime/index.js";
import { describeFailure } from "../../src/tools/failure-text.js";
import { deathReasonText } from "../../src/tools/kernel-text.js";
import { createPythonTool } from "../../src/tools/python/python.js";
import { nbagent, waitFor } from "../run/helpers.js";
import { testSettings } from "../settings.js";
import { type JupyterServerHandle, type ProxyHandle, startJupyterServer, startProxy } from "./helpers.js";

let server: JupyterServerHandle;
let proxy: ProxyHandle;
let backend: GatewayBackend;

before(async () => {
  server = await startJupyterServer();
  proxy = await startProxy(server.url);
  backend = new GatewayBackend({ url: proxy.url, token: server.token });
});
after(async () => {
  await backend?.dispose();
  await proxy?.stop();
  await server?.stop();
});

const kernelPosts = () =>
  proxy.requests.filter((r) => r.method === "POST" && r.path === "/api/kernels").length;

describe("kernel creation answered with HTTP 5xx", () => {
  test("503 once: retried once, the kernel starts and works", async () => {
    proxy.fail503(1);
    const before = kernelPosts();
    const kernel = await backend.startKernel({});
    try {
      assert.equal(kernelPosts() - before, 2);
      assert.equal((await kernel.execute("6 * 7")).displays[0]?.text, "42");
    } finally {
      await kernel.shutdown();
    }
  });

  test("503 twice: a clear Error naming the status and the URL, no kernel left behind", async () => {
    proxy.fail503(2);
    const before = kernelPosts();
    const kernelsBefore = (await backend.listKernels()).length;
    await assert.rejects(backend.startKernel({}), (err: Error) => {
      assert.ok(err instanceof GatewayHttpError);
      assert.equal(err.status, 503);
      assert.equal(
        describeFailure(err),
        `the gateway at ${proxy.url} answered POST /api/kernels with HTTP 503 Service Unavailable: proxy: service unavailable (test) (tried twice: the first attempt got HTTP 503 too)`,
      );
      assert.ok(!err.message.includes(server.token));
      return true;
    });
    assert.equal(kernelPosts() - before, 2);
    assert.equal((await backend.listKernels()).length, kernelsBefore);
  });
});

describe("the channels WebSocket refused at the start", () => {
  test("a clear Error with the status, and the kernel just created is deleted again", async () => {
    const kernelsBefore = (await backend.listKernels()).length;
    proxy.refuseUpgrades(true);
    try {
      await assert.rejects(backend.startKernel({}), (err) =>
        /^the gateway at http:\/\/127\.0\.0\.1:\d+ refused the kernel's WebSocket \(GET \/api\/kernels\/[0-9a-f-]{36}\/channels\): HTTP 503 Service Unavailable$/.test(
          describeFailure(err),
        ),
      );
    } finally {
      proxy.refuseUpgrades(false);
    }
    assert.equal((await backend.listKernels()).length, kernelsBefore);
  });
});

describe("a dropped channels WebSocket is not a dead kernel", () => {
  test("dropped mid-cell: reconnects, and the cell's whole output and result arrive", async () => {
    const kernel = await backend.startKernel({});
    // The start waited for the server's own IOPub listener (settle): it no longer says "starting".
    assert.notEqual((await backend.getKernel(kernel.kernelId!))?.executionState, "starting");
    const flag = join(server.rootDir, "go-on");
    try {
      const transport = backend.connection(kernel)!;
      transport.onReconnect(() => writeFileSync(flag, ""));
      let dropped: Promise<number> | undefined;
      const r = await kernel.execute(
        `import os, time\nprint('before', flush=True)\nwhile not os.path.exists(${JSON.stringify(flag)}): time.sleep(0.02)\nprint('after')\n40 + 2`,
        {
          onChunk: (t) => {
            if (!t.includes("before")) return;
            dropped = (async () => {
              // The server replays losslessly only when it knows the kernel is busy: otherwise its
              // reconnect "nudge" swallows the first IOPub message (docs/backends.md). The start
              // settled, so the server has seen the kernel's statuses and sees this cell's busy.
              for (let i = 0; i < 500; i++) {
                if ((await backend.getKernel(kernel.kernelId!))?.executionState === "busy")
                  return proxy.closeChannels();
                await new Promise((res) => setTimeout(res, 20));
              }
              writeFileSync(flag, ""); // let the cell end; the assertion below fails
              return -1;
            })();
          },
        },
      );
      assert.equal(await dropped, 1, "the server saw the kernel busy, then the socket was dropped");
      assert.equal(r.status, "ok");
      assert.equal(r.text, "before\nafter\n");
      assert.equal(r.displays[0]?.text, "42");
      assert.equal(r.kernelDied, false);
      assert.equal(transport.reconnects, 1);
      assert.ok(kernel.isAlive());
      assert.equal((await kernel.execute("1 + 1")).displays[0]?.text, "2");
    } finally {
      await kernel.shutdown();
    }
  });

  test("output made while we were away is replayed by the server on reconnect", async () => {
    const kernel = await backend.startKernel({});
    const flag = join(server.rootDir, "away");
    let away: Promise<boolean> | undefined;
    try {
      const transport = backend.connection(kernel)!;
      const r = kernel.execute(
        `import os, time\nprint('before', flush=True)\nwhile not os.path.exists(${JSON.stringify(flag)}): time.sleep(0.02)\nprint('while away')\n'done'`,
        {
          onChunk: (t) => {
            if (!t.includes("before")) return;
            proxy.refuseUpgrades(true);
            proxy.closeChannels();
            away = (async () => {
              try {
                // Our side must have seen the close before the cell may finish (under load the
                // close can reach us after a REST answer does).
                while (transport.connected) await new Promise((res) => setTimeout(res, 20));
                writeFileSync(flag, "");
                // The cell finishes while no socket is connected: the server buffers its messages.
                while ((await backend.getKernel(kernel.kernelId!))?.executionState !== "idle")
                  await new Promise((res) => setTimeout(res, 50));
                return transport.connected;
              } finally {
                proxy.refuseUpgrades(false); // whatever happened, let the transport back in
              }
            })();
          },
        },
      );
      const result = await r;
      assert.equal(await away, false, "no socket was connected while the cell finished");
      assert.ok(existsSync(flag));
      assert.equal(result.status, "ok");
      assert.equal(result.text, "before\nwhile away\n");
      assert.equal(result.displays[0]?.text, "'done'");
      assert.ok(transport.reconnects >= 1);
    } finally {
      proxy.refuseUpgrades(false);
      await kernel.shutdown();
    }
  });
});

describe("what counts as dead", () => {
  test("a gateway unreachable past the give-up time: the kernel dies with a reason saying so", async () => {
    const lonely = await startProxy(server.url);
    const b = new GatewayBackend({ url: lonely.url, token: server.token, reconnectGiveUpMs: 300 });
    const kernel = await b.startKernel({});
    const id = kernel.kernelId!;
    try {
      const died = new Promise<string>((resolve) =>
        kernel.onDeath((reason, _limit, failure) => resolve(deathReasonText(reason, failure))),
      );
      await lonely.stop(); // drops the socket; nothing answers on that port any more
      assert.match(
        await died,
        /^the gateway at http:\/\/127\.0\.0\.1:\d+ stayed unreachable for \d+ s after the kernel's connection was lost \(last: could not reach the gateway .*ECONNREFUSED/,
      );
      const r = await kernel.execute("1");
      assert.equal(r.codeStarted, false);
    } finally {
      await b.dispose();
      await backend.deleteKernel(id); // it still runs on the server: the gateway was only unreachable
    }
  });

  test("a kernel that exits is restarted by the server: the execution ends as a death, not a hang", async () => {
    const kernel = await backend.startKernel({});
    try {
      const r = await kernel.execute("import os; os._exit(1)");
      assert.equal(r.kernelDied, true);
      assert.deepEqual(
        r.notices.map((n) => n.kind),
        ["kernel-died"],
      );
      await kernel.restart();
      assert.equal((await kernel.execute("3")).displays[0]?.text, "3");
    } finally {
      await kernel.shutdown();
    }
  });
});

describe("a kernel that dies while the channels socket is away", () => {
  // jupyter_server restarts a kernel whose process ended and says `restarting` only to the sockets
  // connected at that moment; the replay on reconnect does not say it. Before the identity check on
  // reconnect (docs/backends.md, "What counts as dead"), the cell waited out its whole timeout.
  const DIED =
    "its process ended while nbagent's connection to the gateway was down, and the gateway restarted it: when the connection came back, the kernel answered from a new process";
  const restarts = () => (server.log().match(/KernelRestarter: restarting kernel/g) ?? []).length;
  /** A cell that says it started, waits for `go`, and ends its kernel's process. */
  const dyingCell = (dir: string) =>
    `import os, time\nopen(${JSON.stringify(join(dir, "started"))}, 'w').close()\nwhile not os.path.exists(${JSON.stringify(join(dir, "go"))}): time.sleep(0.02)\nos._exit(1)`;
  /** The call after the death: the loss at its top (docs/kernel-state.md), then its own output. */
  const assertToldDeath = (next: string) => {
    assert.ok(next.startsWith("Note: This session's kernel died at "), next);
    assert.ok(
      next.includes(
        ` while cell 1 of a python call ran (${DIED}); it was restarted, and its state is lost. `,
      ),
      next,
    );
    assert.ok(next.endsWith("\nFalse"), next);
  };
  /** Once the cell runs: drop the socket and keep it away until the server has restarted the kernel. */
  async function dieWhileAway(away: ProxyHandle, dir: string): Promise<void> {
    await waitFor("the cell to start", () => existsSync(join(dir, "started")), 120_000);
    const before = restarts();
    away.refuseUpgrades(true);
    away.closeChannels();
    writeFileSync(join(dir, "go"), "");
    try {
      await waitFor("the server to restart the kernel", () => restarts() > before, 120_000);
    } finally {
      away.refuseUpgrades(false);
    }
  }

  test("the python tool: the call ends with the death, and the next call runs in the restarted kernel", async () => {
    const away = await startProxy(server.url);
    const dir = mkdtempSync(join(server.rootDir, "away-"));
    const rt = createRuntime({
      settings: testSettings(),
      stateRoot: join(dir, "state"),
      backend: new GatewayBackend({ url: away.url, token: server.token }),
    });
    try {
      const tool = createPythonTool({ cwd: dir, runtime: rt, updateIntervalMs: 0 });
      const text = (r: { content: unknown[] }) => (r.content[0] as { text: string }).text;
      await tool.execute("t", { cells: [{ code: "kept = 1" }] });
      const pending = tool.execute("t", { cells: [{ code: dyingCell(dir) }], timeout: 120 });
      await dieWhileAway(away, dir);
      const r = await pending;
      assert.equal(r.isError, true);
      assert.equal(
        text(r),
        `The kernel died while cell 1 ran (${DIED}). It was restarted: all state is gone (variables, imports), and cell 1 was not run again; its effects up to the crash may have happened.`,
      );
      assertToldDeath(text(await tool.execute("t", { cells: [{ code: "print('kept' in globals())" }] })));
    } finally {
      await rt.dispose();
      await away.stop();
    }
  });

  test("nbagent batch --gateway: the same text, and the next call works", async () => {
    const away = await startProxy(server.url);
    const dir = mkdtempSync(join(server.rootDir, "away-cli-"));
    const calls = [
      { tool: "python", params: { cells: [{ code: "kept = 1" }] } },
      { tool: "python", params: { cells: [{ code: dyingCell(dir) }], timeout: 120 } },
      { tool: "python", params: { cells: [{ code: "print('kept' in globals())" }] } },
    ];
    try {
      const run = nbagent(["batch", "--gateway", away.url], {
        cwd: dir,
        input: calls.map((c) => JSON.stringify(c)).join("\n"),
        env: { NBAGENT_STATE_DIR: join(dir, "state"), NBAGENT_GATEWAY_TOKEN: server.token },
      });
      await dieWhileAway(away, dir);
      const out = await run;
      const results = out.stdout
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l));
      assert.equal(results.length, 3, out.stderr);
      assert.equal(results[1].isError, true);
      assert.equal(
        results[1].content[0].text,
        `The kernel died while cell 1 ran (${DIED}). It was restarted: all state is gone (variables, imports), and cell 1 was not run again; its effects up to the crash may have happened.`,
      );
      assertToldDeath(results[2].content[0].text);
    } finally {
      await away.stop();
    }
  });
});

describe("headers", () => {
  test("the token and extra headers go on every REST call and on the WebSocket upgrade", async () => {
    const b = new GatewayBackend({
      url: proxy.url,
      token: server.token,
      headers: { "X-Nbagent-Test": "yes" },
    });
    const from = proxy.requests.length;
    const kernel = await b.startKernel({});
    const id = kernel.kernelId!;
    await kernel.execute("1");
    await b.dispose();
    // Other tests' backends use the same proxy meanwhile (their periodic checks on their own
    // kernels): only requests that are not about another kernel are this backend's.
    const seen = proxy.requests
      .slice(from)
      .filter((r) => !/\/api\/kernels\/[^/?]+/.test(r.path) || r.path.includes(id));
    assert.ok(seen.some((r) => r.upgrade) && seen.some((r) => r.method === "DELETE"));
    for (const r of seen) {
      assert.equal(r.headers["x-nbagent-test"], "yes", `${r.method} ${r.path}`);
      assert.equal(r.headers.authorization, `token ${server.token}`, `${r.method} ${r.path}`);
    }
  });
});

describe("authentication", () => {
  test("a request without the token is refused, and the error says so without leaking anything", async () => {
    const anonymous = new GatewayBackend({ url: server.url });
    await assert.rejects(anonymous.startKernel({}), (err: Error) => {
      assert.ok(err instanceof GatewayHttpError);
      assert.ok(err.status === 401 || err.status === 403, `status ${err.status}`);
      assert.match(
        describeFailure(err),
        /^the gateway at http:\/\/127\.0\.0\.1:\d+ answered POST \/api\/kernels with HTTP 40[13] Forbidden \(the token was missing or refused\)/,
      );
      return true;
    });
    const wrong = new GatewayBackend({ url: server.url, token: "not-the-token" });
    await assert.rejects(wrong.listKernels(), (err: Error) => {
      assert.match(describeFailure(err), /answered GET \/api\/kernels with HTTP 403/);
      assert.ok(!err.message.includes("not-the-token"));
      return true;
    });
  });

  test("an unreachable gateway: Error naming the URL", async () => {
    const nobody = new GatewayBackend({ url: "http://127.0.0.1:9" });
    await assert.rejects(nobody.listKernels(), (err) =>
      /^could not reach the gateway at http:\/\/127\.0\.0\.1:9 \(GET \/api\/kernels\): .*ECONNREFUSED/.test(
        describeFailure(err),
      ),
    );
  });
});

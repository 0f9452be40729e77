/**
 * The shared local gateway through the gateway backend (docs/backends.md): the kernels its
 * kernelspec starts (the watchdog wrapper, a lifeline FIFO, interrupts by message) work with the
 * shared lifecycle — execute, interrupt, restart in place, detach and attach from another backend.
 */
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { GatewayBackend } from "../../src/kernel/gateway/backend.js";
import {
  ensureLocalGateway,
  type LocalGatewayInfo,
  stopLocalGateway,
} from "../../src/kernel/gateway/local-server.js";
import { TEST_PYTHON } from "../python.js";

const PYTHON = TEST_PYTHON;
const root = mkdtempSync(join(tmpdir(), "nbagent-gw-backend-"));
let info: LocalGatewayInfo;
let backend: GatewayBackend;

before(async () => {
  info = await ensureLocalGateway({ python: PYTHON, stateRoot: root });
  backend = new GatewayBackend({ url: info.url, token: info.token });
});

after(async () => {
  await backend?.dispose();
  await stopLocalGateway({ python: PYTHON, stateRoot: root });
});

test("execute with the kernel's cwd, interrupt (by message), restart in place", async () => {
  const cwd = mkdtempSync(join(tmpdir(), "nbagent-gw-cwd-"));
  const kernel = await backend.startKernel({ cwd });
  try {
    const where = await kernel.execute("import os\nx = 7\nos.getcwd()");
    assert.equal(where.status, "ok");
    assert.equal(where.displays[0]?.text, `'${cwd}'`);
    let interrupted = false;
    const running = kernel.execute("import time\nprint('sleeping', flush=True)\ntime.sleep(60)", {
      onChunk: (t) => {
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
    assert.equal((await kernel.execute("x")).displays[0]?.text, "7", "state kept after the interrupt");
    const id = kernel.kernelId;
    await kernel.restart();
    assert.equal(kernel.kernelId, id);
    const gone = await kernel.execute("x");
    assert.equal(gone.error?.name, "NameError");
    assert.equal((await kernel.execute("6 * 7")).displays[0]?.text, "42");
  } finally {
    await kernel.shutdown();
  }
});

test("another backend (another process's view) attaches to the same kernel; detach leaves it running", async () => {
  const kernel = await backend.startKernel({});
  const other = new GatewayBackend({ url: info.url, token: info.token });
  try {
    await kernel.execute("x = 41");
    const attached = await other.attachKernel(kernel.kernelId!);
    assert.equal((await attached.execute("x + 1")).displays[0]?.text, "42");
    await attached.detach();
    await other.dispose();
    assert.ok(await backend.getKernel(kernel.kernelId!));
    assert.equal((await kernel.execute("x")).displays[0]?.text, "41");
  } finally {
    await other.dispose();
    await kernel.shutdown();
  }
});

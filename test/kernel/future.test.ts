// The request future (src/kernel/future.ts) against a real ipykernel: done = reply + idle, in either
// arrival order, exactly once; a released future routes nothing more; time limits are signals.
// The reply (shell) and the idle (IOPub) travel on different sockets, so which arrives first cannot
// be chosen for real: a pass-through transport holds one of them back until the other was delivered.
// Everything else is the real kernel's real messages.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, before, describe, test } from "node:test";
import {
  type ConnectedKernel,
  createLocalBackend,
  FutureDisposedError,
  type JupyterMessage,
  KernelClient,
  type KernelTransport,
  MessageFactory,
  type OutgoingChannel,
  TimeoutError,
} from "../../src/kernel/index.js";
import { localBackendOptions } from "../../src/runtime/settings.js";
import { testSettings } from "../settings.js";

const isReply = (m: JupyterMessage) => m.channel === "shell";
const isIdle = (m: JupyterMessage) =>
  m.channel === "iopub" &&
  m.header.msg_type === "status" &&
  (m.content as { execution_state?: string }).execution_state === "idle";

/** Delivers the kernel's messages in order, except that `held` ones wait until a `first` one was delivered. */
class HoldBack implements KernelTransport {
  private handler: (msg: JupyterMessage) => void = () => {};
  private readonly waiting: JupyterMessage[] = [];
  private firstSeen = new Set<string>();

  constructor(
    private readonly inner: KernelTransport,
    private readonly first: (m: JupyterMessage) => boolean,
    private readonly hold: (m: JupyterMessage) => boolean,
  ) {
    inner.onMessage((m) => this.receive(m));
  }

  private receive(m: JupyterMessage): void {
    const parent = m.parent_header.msg_id ?? "";
    if (this.hold(m) && !this.firstSeen.has(parent)) {
      this.waiting.push(m);
      return;
    }
    this.handler(m);
    if (this.first(m)) {
      this.firstSeen.add(parent);
      for (const w of this.waiting.filter((x) => x.parent_header.msg_id === parent)) {
        this.waiting.splice(this.waiting.indexOf(w), 1);
        this.handler(w);
      }
    }
  }

  send(channel: OutgoingChannel, msg: JupyterMessage): void {
    this.inner.send(channel, msg);
  }
  onMessage(handler: (msg: JupyterMessage) => void): void {
    this.handler = handler;
  }
  onLost(): void {}
  stats() {
    return this.inner.stats();
  }
  async close(): Promise<void> {}
}

/** This test's own client on the kernel's transport (it takes over the transport's one receiver). */
function passThrough(): KernelClient {
  return new KernelClient(
    new HoldBack(
      kernel.client.transport,
      () => true,
      () => false,
    ),
    new MessageFactory(),
  );
}

const backend = createLocalBackend(localBackendOptions(testSettings()));
let kernel: ConnectedKernel;

before(async () => {
  kernel = await backend.startKernel({});
});
after(async () => {
  await backend.dispose();
});

/** Runs `code` as one future over `transport`, recording what the hooks saw, in order. */
async function run(client: KernelClient, code: string) {
  const seen: string[] = [];
  let doneCalls = 0;
  const future = client.future("shell", client.factory.executeRequest(code, { stopOnError: false }), {
    onIOPub: (m) => {
      if (isIdle(m)) seen.push("idle");
    },
    onReply: () => seen.push("reply"),
    onDone: () => {
      doneCalls++;
      seen.push("done");
    },
  });
  const reply = await future.done;
  // A later request's done proves every message of this one was dispatched: IOPub and shell are
  // each delivered in order, and the later one's reply and idle come after this one's.
  await client.future("shell", client.factory.executeRequest("0")).done;
  return { seen, doneCalls, reply, future };
}

describe("done = reply + idle", () => {
  test("reply before idle: done settles once, after the idle, with the reply", async () => {
    const shim = new HoldBack(kernel.client.transport, isReply, isIdle);
    const client = new KernelClient(shim, new MessageFactory());
    const r = await run(client, "6 * 7");
    assert.deepEqual(r.seen, ["reply", "idle", "done"]);
    assert.equal(r.doneCalls, 1);
    assert.equal(r.reply.header.msg_type, "execute_reply");
    assert.equal((r.reply.content as { status: string }).status, "ok");
    assert.equal(r.future.isDone, true);
    assert.equal(r.future.isDisposed, true);
  });

  test("idle before reply: done settles once, after the reply, with the reply", async () => {
    const shim = new HoldBack(kernel.client.transport, isIdle, isReply);
    const client = new KernelClient(shim, new MessageFactory());
    const r = await run(client, "6 * 7");
    assert.deepEqual(r.seen, ["idle", "reply", "done"]);
    assert.equal(r.doneCalls, 1);
    assert.equal(r.reply.header.msg_type, "execute_reply");
    assert.equal(r.future.isDone, true);
  });

  test("another request's idle does not complete it (parents are matched)", async () => {
    // A kernel_info on control is served while the execution runs: its busy/idle land in between.
    // The execution waits for a file the test writes once the control round trip is over. (It used
    // to wait in input() for an input_reply; that version hung once in a CI-layout run.)
    const client = passThrough();
    const flag = join(mkdtempSync(join(tmpdir(), "nbagent-future-")), "go-on");
    let infoDone = false;
    let execDoneWhenInfoDone: boolean | undefined;
    let infoError: string | undefined;
    const seen: string[] = [];
    const exec = client.future(
      "shell",
      client.factory.executeRequest(
        `import os, time\nprint('start', flush=True)\nwhile not os.path.exists(${JSON.stringify(flag)}): time.sleep(0.01)`,
        { stopOnError: false },
      ),
      {
        onIOPub: (m) => {
          if (m.header.msg_type === "stream") {
            seen.push("stream");
            // Released however it ends, so a failure is reported rather than a hang.
            void client
              .request("control", client.factory.kernelInfoRequest(), { timeoutMs: 60_000 })
              .then(
                () => {
                  infoDone = true;
                  execDoneWhenInfoDone = exec.isDone;
                },
                (err: Error) => {
                  infoError = err.message;
                },
              )
              .finally(() => writeFileSync(flag, ""));
          }
          if (isIdle(m)) seen.push("idle");
        },
      },
    );
    const reply = await exec.done;
    rmSync(dirname(flag), { recursive: true, force: true });
    assert.equal((reply.content as { status: string }).status, "ok");
    assert.equal(infoError, undefined);
    assert.equal(infoDone, true);
    assert.equal(execDoneWhenInfoDone, false);
    assert.deepEqual(seen, ["stream", "idle"]);
  });
});

describe("release", () => {
  test("a released future routes nothing more, and its done rejects", async () => {
    const client = passThrough();
    let after = 0;
    let released = false;
    const unroutedBefore = client.unrouted;
    // Released at its first message, whichever it is (busy, or the reply overtaking IOPub).
    const count = () => {
      if (released) after++;
      else {
        released = true;
        future.dispose();
      }
    };
    const future = client.future(
      "shell",
      client.factory.executeRequest("for i in range(5): print(i, flush=True)\n'last'", {
        stopOnError: false,
      }),
      { onIOPub: count, onReply: count, onStdin: count, onDone: count },
    );
    await assert.rejects(future.done, FutureDisposedError);
    await client.future("shell", client.factory.executeRequest("0")).done;
    assert.equal(released, true);
    assert.equal(after, 0);
    assert.equal(future.isDisposed, true);
    assert.equal(future.isDone, false);
    // The rest of its messages (streams, execute_result, idle, reply, …) arrived and went nowhere.
    assert.ok(client.unrouted - unroutedBefore >= 3, `unrouted grew by ${client.unrouted - unroutedBefore}`);
  });

  test("an aborted signal releases it with the signal's reason; one aborted before sends nothing", async () => {
    const client = passThrough();
    const controller = new AbortController();
    const reason = new Error("caller gave up");
    const future = client.future(
      "shell",
      client.factory.executeRequest("import time\ntime.sleep(0.2)"),
      { onIOPub: (m) => m.header.msg_type === "status" && controller.abort(reason) },
      { signal: controller.signal },
    );
    await assert.rejects(future.done, (e) => e === reason);
    assert.equal(future.isDisposed, true);

    let sent = 0;
    const counting = new KernelClient(
      {
        send: () => {
          sent++;
        },
        onMessage: () => {},
        onLost: () => {},
        stats: () => ({ invalidSignatures: 0, malformed: 0 }),
        close: async () => {},
      },
      new MessageFactory(),
    );
    const early = counting.future(
      "shell",
      counting.factory.kernelInfoRequest(),
      {},
      { signal: controller.signal },
    );
    await assert.rejects(early.done, (e) => e === reason);
    assert.equal(sent, 0);
  });

  test("request(): its time limit rejects with a TimeoutError naming the reply", async () => {
    const client = passThrough();
    // The code takes at least 300 ms, so a 1 ms limit always runs out first.
    await assert.rejects(
      client.request("shell", client.factory.executeRequest("import time\ntime.sleep(0.3)"), 1),
      (e: Error) => {
        assert.ok(e instanceof TimeoutError);
        assert.equal(e.ms, 1);
        assert.equal(e.message, "no execute_reply within 1 ms");
        return true;
      },
    );
    const info = await client.request("shell", client.factory.kernelInfoRequest(), { timeoutMs: 60_000 });
    assert.equal(info.header.msg_type, "kernel_info_reply");
  });
});

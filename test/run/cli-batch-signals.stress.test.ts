/**
 * `nbagent batch` (the bundled command, as installed) ended from outside: real SIGTERM and SIGINT,
 * and a reader that closes stdout (EPIPE). Each case must end the batch with its exit status
 * (docs/cli.md) and shut its kernels down: the kernel's process (found on the host by a file it
 * holds open: inside its PID namespace os.getpid() is 1) is gone.
 */
import assert from "node:assert/strict";
import { type ChildProcessWithoutNullStreams, execFile } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { setTimeout as delay } from "node:timers/promises";
import { promisify } from "node:util";
import {
  holdProbeCode,
  type Json,
  kernelHostPid,
  ROOT,
  resultText,
  spawnNbagent,
  tempDir,
} from "./helpers.js";

const exec = promisify(execFile);
// Its own bundle, under dist/ so it finds the assets there: rebuilding dist/cli in place would
// remove the chunks other tests' running nbagent processes still load.
const OUT = join(ROOT, "dist", `test-cli-batch-signals-${process.pid}`);
const BUNDLE = join(OUT, "nbagent.js");

before(async () => {
  await exec(process.execPath, ["scripts/copy-assets.mjs"], { cwd: ROOT });
  await exec(process.execPath, ["scripts/bundle.mjs", "cli", OUT], { cwd: ROOT });
});
after(async () => {
  await rm(OUT, { recursive: true, force: true });
});

interface Batch {
  child: ChildProcessWithoutNullStreams;
  /** Resolves with the next result line on stdout. */
  nextResult: () => Promise<Json>;
  send: (call: { tool: string; params: Json }) => void;
  stderr: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

async function startBatch(): Promise<Batch & { dir: string }> {
  const dir = await tempDir("nbagent-batch-sig-");
  const child = spawnNbagent(["batch", "--cwd", dir], {
    cwd: dir,
    bundle: BUNDLE,
    env: { NBAGENT_STATE_DIR: join(dir, "state") },
  });
  let out = "";
  let err = "";
  const waiting: ((line: string) => void)[] = [];
  const ready: string[] = [];
  child.stdout.setEncoding("utf8").on("data", (d: string) => {
    out += d;
    for (let nl = out.indexOf("\n"); nl >= 0; nl = out.indexOf("\n")) {
      const line = out.slice(0, nl);
      out = out.slice(nl + 1);
      const w = waiting.shift();
      if (w) w(line);
      else ready.push(line);
    }
  });
  child.stderr.setEncoding("utf8").on("data", (d: string) => {
    err += d;
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on("close", (code, signal) => resolve({ code, signal })),
  );
  return {
    dir,
    child,
    exited,
    stderr: () => err,
    send: (call) => child.stdin.write(`${JSON.stringify(call)}\n`),
    nextResult: () => {
      const line = ready.shift();
      if (line !== undefined) return Promise.resolve(JSON.parse(line));
      return new Promise((resolve, reject) => {
        waiting.push((l) => resolve(JSON.parse(l)));
        exited.then(() => reject(new Error(`batch exited before answering; stderr: ${err}`)));
      });
    },
  };
}

/** A process is gone when it no longer exists or is only a zombie waiting for its parent's wait(). */
function gone(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ESRCH") return true;
    throw err;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z");
  } catch {
    return true;
  }
}

/** Waits for a file the kernel writes (an event from the call, not a guess at a duration). */
async function fileAppears(path: string): Promise<void> {
  while (!existsSync(path)) await delay(20);
}

/** Makes the kernel hold a probe file in `dir`; kernelOf(dir) then gives its host pid. */
const pidCall = (dir: string) => ({
  tool: "python",
  params: { cells: [{ code: holdProbeCode(join(dir, "probe")) }] },
});
const kernelOf = (dir: string) => kernelHostPid(join(dir, "probe"));

test("SIGTERM while batch waits for its next line ends it with 143 and shuts its kernel down", async () => {
  const b = await startBatch();
  b.send(pidCall(b.dir));
  const first = await b.nextResult();
  assert.equal(first.isError, false, resultText(first));
  const kernelPid = await kernelOf(b.dir);
  assert.ok(!gone(kernelPid), `a live kernel pid, got ${kernelPid}`);
  // stdin stays open: batch is idle, waiting for a line that never comes.
  b.child.kill("SIGTERM");
  const { code, signal } = await b.exited;
  assert.equal(signal, null);
  assert.equal(code, 143, b.stderr());
  assert.match(b.stderr(), /^nbagent batch: interrupted; 1 line answered, the rest not read\n$/);
  assert.ok(gone(kernelPid), `kernel ${kernelPid} still running after batch exited`);
});

test("SIGINT during a running call interrupts it, writes its partial result, exits 130, kernel gone", async () => {
  const b = await startBatch();
  b.send(pidCall(b.dir));
  assert.equal(resultText(await b.nextResult()).trim(), "held");
  const kernelPid = await kernelOf(b.dir);
  const marker = join(b.dir, "started");
  b.send({
    tool: "python",
    params: {
      cells: [
        {
          code: `import time\nprint("before the wait", flush=True)\nopen(${JSON.stringify(marker)}, "w").close()\ntime.sleep(600)\nprint("never")`,
        },
      ],
    },
  });
  await fileAppears(marker);
  b.child.kill("SIGINT");
  const partial = await b.nextResult();
  const { code } = await b.exited;
  const text = resultText(partial);
  assert.match(text, /before the wait/);
  assert.match(text, /KeyboardInterrupt/);
  // batch exits after the signal and its kernels go with it: the text must not promise kept state.
  assert.match(
    text,
    /Cell 1 was interrupted: nbagent is exiting \(received SIGINT\) and shuts its kernels down, so this kernel.s state is lost\./,
  );
  assert.doesNotMatch(text, /keeps its state/);
  assert.doesNotMatch(text, /^never$/m);
  assert.equal(partial.details.cells[0].status, "aborted");
  assert.equal(code, 130, b.stderr());
  assert.match(b.stderr(), /interrupted; 2 lines answered, the rest not read/);
  assert.ok(gone(kernelPid), `kernel ${kernelPid} still running after batch exited`);
});

test("a reader closing stdout (EPIPE) ends batch quietly with 141 and shuts its kernel down", async () => {
  const b = await startBatch();
  b.send(pidCall(b.dir));
  // Like `| head -c 1`: read one byte of the first answer, then close the pipe.
  await new Promise<void>((resolve) => b.child.stdout.once("data", () => resolve()));
  const kernelPid = await kernelOf(b.dir);
  const closed = new Promise((resolve) => b.child.stdout.once("close", resolve));
  b.child.stdout.destroy();
  await closed;
  assert.ok(!gone(kernelPid));
  // The next answer hits the closed pipe.
  b.send({ tool: "python", params: { cells: [{ code: "print('to nobody')" }] } });
  b.send({ tool: "python", params: { cells: [{ code: "open('not-run', 'w').close()" }] } });
  const { code, signal } = await b.exited;
  assert.equal(signal, null);
  assert.equal(code, 141, b.stderr());
  assert.equal(b.stderr(), "", "no stack trace, no words: the reader chose to stop");
  assert.ok(gone(kernelPid), `kernel ${kernelPid} still running after batch exited`);
  assert.ok(!existsSync(join(b.dir, "not-run")), "no call runs after the output closed");
});

/**
 * The real `pi` command (pi-coding-agent's CLI, print mode with JSON events) run with
 * `-e <nbagent package dir>` and a scripted model (fixtures/scripted-model.ts): a turn whose tool
 * call reaches our tool and whose result reaches the model; the kernels are gone when pi exits, at
 * the end of its prompt or on SIGTERM while a cell runs.
 */
import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { before, test } from "node:test";
import { promisify } from "node:util";
import { marker, pidsWithEnv } from "../run/helpers.js";
import { ROOT, tempDir } from "./helpers.js";

const exec = promisify(execFile);
const LONG = { timeout: 180_000 };
const PI = join(ROOT, "node_modules/@mariozechner/pi-coding-agent/dist/cli.js");
const SCRIPTED = join(ROOT, "test/pi/fixtures/scripted-model.ts");

before(async () => {
  await exec(process.execPath, ["scripts/copy-assets.mjs"], { cwd: ROOT });
  await exec(process.execPath, ["scripts/bundle.mjs", "pi"], { cwd: ROOT });
});

type Event = { type: string; [key: string]: unknown };

/** `pi -p --mode json` in `cwd` with nbagent and the scripted model playing `calls`. */
function runPi(
  cwd: string,
  calls: unknown[],
  env: Record<string, string>,
  onEvent: (e: Event) => void = () => {},
) {
  const child = spawn(
    process.execPath,
    [
      PI,
      "-p",
      "--mode",
      "json",
      "--no-session",
      "--no-extensions",
      "--no-skills",
      "--no-prompt-templates",
      "--no-themes",
      "--no-context-files",
      "-e",
      ROOT,
      "-e",
      SCRIPTED,
      "--provider",
      "scripted",
      "--model",
      "scripted-1",
      "Go.",
    ],
    {
      cwd,
      env: {
        ...process.env,
        ...env,
        PI_CODING_AGENT_DIR: join(cwd, ".pi-agent"),
        PI_OFFLINE: "1",
        NBAGENT_PI_SCRIPT: JSON.stringify(calls),
      },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  const events: Event[] = [];
  let stderr = "";
  child.stderr.on("data", (d: Buffer) => {
    stderr += d.toString("utf8");
  });
  createInterface({ input: child.stdout }).on("line", (line) => {
    if (!line.startsWith("{")) return;
    const e = JSON.parse(line) as Event;
    events.push(e);
    onEvent(e);
  });
  const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) =>
    child.on("close", (code, signal) => resolve({ code, signal })),
  );
  return { child, events, exited, stderr: () => stderr };
}

function resultText(e: Event): string {
  const result = e.result as { content: { type: string; text?: string }[] };
  return result.content.map((c) => c.text ?? "").join("\n");
}

test(
  "`pi -p -e <nbagent>`: the scripted model's python call runs, its result reaches the model, no kernel outlives pi",
  LONG,
  async () => {
    const cwd = await tempDir("nbagent-pi-cli-");
    const { name, value } = marker();
    const pi = runPi(
      cwd,
      [{ name: "python", arguments: { cells: [{ code: "import os\nprint(6 * 7, os.getcwd())" }] } }],
      {
        [name]: value,
      },
    );
    const { code } = await pi.exited;
    assert.equal(code, 0, pi.stderr());
    const end = pi.events.find((e) => e.type === "tool_execution_end");
    assert.ok(end, pi.stderr());
    assert.equal(end.toolName, "python");
    assert.equal(end.isError, false);
    assert.equal(resultText(end), `42 ${cwd}`);
    assert.ok(pi.events.some((e) => e.type === "tool_execution_update"));
    const finalMessage = pi.events.filter((e) => e.type === "message_end").at(-1)?.message as {
      role: string;
      content: { text?: string }[];
    };
    assert.equal(finalMessage.role, "assistant");
    assert.equal(finalMessage.content[0]?.text, `the tool said: 42 ${cwd}`);
    assert.deepEqual(await pidsWithEnv(name, value), []);
  },
);

test("SIGTERM to pi while a cell runs: pi ends its session and no kernel is left", LONG, async () => {
  const cwd = await tempDir("nbagent-pi-cli-term-");
  const { name, value } = marker();
  const loop =
    "import time\nfor i in range(6000):\n    print('sleeping', i, flush=True)\n    time.sleep(0.1)";
  let running!: () => void;
  const cellRuns = new Promise<void>((resolve) => {
    running = resolve;
  });
  const pi = runPi(
    cwd,
    [{ name: "python", arguments: { cells: [{ code: loop }], timeout: 900 } }],
    { [name]: value },
    (e) => {
      if (e.type !== "tool_execution_update") return;
      const partial = e.partialResult as { content: { text?: string }[] };
      if (partial.content.some((c) => c.text?.includes("sleeping 0"))) running();
    },
  );
  await Promise.race([cellRuns, pi.exited.then(() => assert.fail(`pi exited first: ${pi.stderr()}`))]);
  // The kernel (and pi itself) carry the marker; pi's own pid is not a kernel.
  const kernels = (await pidsWithEnv(name, value)).filter((pid) => pid !== pi.child.pid);
  assert.ok(kernels.length > 0, "no kernel carries the marker");
  pi.child.kill("SIGTERM");
  await pi.exited;
  assert.deepEqual(await pidsWithEnv(name, value), []);
});

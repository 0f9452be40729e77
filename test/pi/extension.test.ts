/**
 * nbagent inside pi-coding-agent (docs/pi.md), loaded the way `pi -e <nbagent package dir>` loads it
 * (the package's pi manifest → dist/pi/index.js through pi's jiti), with a scripted model: the
 * model's tool calls reach our tools, their results go back to it, pi's own tool rows draw them with
 * our views, live while cells run; pi's abort interrupts the kernel; ending pi's session shuts the
 * kernels down.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { promisify } from "node:util";
import { fauxAssistantMessage, fauxText, fauxToolCall } from "@mariozechner/pi-ai";
import { marker, pidsWithEnv, readNb, validate } from "../run/helpers.js";
import { bind, drawn, type Pi, ROOT, startPi, tempDir, textOf, toolResults } from "./helpers.js";

const exec = promisify(execFile);
const LONG = { timeout: 180_000 };
const open: Pi[] = [];

before(async () => {
  await exec(process.execPath, ["scripts/copy-assets.mjs"], { cwd: ROOT });
  await exec(process.execPath, ["scripts/bundle.mjs", "pi"], { cwd: ROOT });
});

after(async () => {
  for (const pi of open) await pi.close();
});

async function pi(cwd: string, responses: Parameters<typeof startPi>[2]): Promise<Pi> {
  const p = await startPi(cwd, [ROOT], responses);
  open.push(p);
  assert.deepEqual(p.loadErrors, []);
  return p;
}

/** A model step that calls one tool. */
function call(name: string, args: Record<string, unknown>) {
  return fauxAssistantMessage(fauxToolCall(name, args), { stopReason: "toolUse" });
}

/** A last model step that repeats what the last tool result said (so the test sees it reached the model). */
function echo() {
  return (context: { messages: { role: string; content: unknown }[] }) => {
    const last = context.messages.at(-1) as { role: string; content: { type: string; text?: string }[] };
    assert.equal(last.role, "toolResult");
    return fauxAssistantMessage(fauxText(`the tool said: ${textOf(last)}`));
  };
}

function lastAssistantText(p: Pi): string {
  const last = p.runtime.session.messages.at(-1) as {
    role: string;
    content: { type: string; text?: string }[];
  };
  assert.equal(last.role, "assistant");
  return textOf(last);
}

test(
  "a scripted turn: the model's python call reaches the tool, pi draws it, the result goes back",
  LONG,
  async () => {
    const cwd = await tempDir("nbagent-pi-");
    const p = await pi(cwd, [
      call("python", { cells: [{ code: "import os\nprint(6 * 7, os.getcwd())", title: "answer" }] }),
      call("python", { cells: [{ code: "print(os.environ['PI_SESSION_FILE'])" }] }),
      echo(),
    ]);
    const names = p.runtime.session.getAllTools().map((t) => t.name);
    for (const name of ["notebook", "python", "artifact", "runs", "kernels"])
      assert.ok(names.includes(name), String(names));

    await p.runtime.session.prompt("What is six times seven?");
    const [result, sessionFile] = toolResults(p);
    assert.equal(result.isError, false);
    assert.equal(textOf(result), `42 ${cwd}`);
    // The kernel knows pi's session file (PI_SESSION_FILE, as the original pi tools gave it).
    const file = p.runtime.session.sessionFile;
    assert.ok(file);
    assert.equal(textOf(sessionFile), file);
    assert.equal(lastAssistantText(p), `the tool said: ${file}`);

    const lines = drawn(p.rows.get(result.toolCallId));
    // pi's box around the row: one column of padding on the left.
    assert.deepEqual(lines.slice(0, 4), [
      " python 1 cell",
      " [1/1] answer",
      " │ import os",
      " │ print(6 * 7, os.getcwd())",
    ]);
    assert.match(lines[4], /^ ✓ \[1\/1\] answer · \d+(ms|\.\ds)$/);
    assert.equal(lines[5], ` │ 42 ${cwd}`);
    assert.match(lines[6], /^ took \d/);
    for (const width of [40, 120]) {
      const row = p.rows.get(result.toolCallId)!.component.render(width);
      assert.ok(
        row.every((l) => visible(l) <= width),
        `a line wider than ${width}`,
      );
    }
  },
);

test(
  "the notebook tool through pi: create, run, read; a bad call is pi's failed result, nothing written",
  LONG,
  async () => {
    const cwd = await tempDir("nbagent-pi-nb-");
    const p = await pi(cwd, [
      call("notebook", {
        action: "insert",
        notebook_path: "analysis.ipynb",
        cell_index: 0,
        content: "x = 6 * 7\nx",
      }),
      call("notebook", { action: "run", notebook_path: "analysis.ipynb", all: true }),
      call("notebook", { action: "edit", notebook_path: "missing.ipynb", cell_index: 0, content: "y = 1" }),
      call("python", { cells: [] }),
      echo(),
    ]);
    await p.runtime.session.prompt("Make a notebook and run it.");
    const [insert, run, bad, invalid] = toolResults(p);

    assert.equal(insert.isError, false, textOf(insert));
    assert.equal(run.isError, false, textOf(run));
    assert.match(textOf(run), /42/);
    assert.equal(await validate(join(cwd, "analysis.ipynb")), "ok");
    const nb = await readNb(join(cwd, "analysis.ipynb"));
    assert.deepEqual(nb.cells[0].outputs[0].data["text/plain"], ["42"]);

    // The tool's own Error: — pi marks it failed (tool_result hook) and the row draws it as an error.
    assert.equal(bad.isError, true);
    assert.match(textOf(bad), /^Error: /);
    assert.ok(!existsSync(join(cwd, "missing.ipynb")));
    const badRow = drawn(p.rows.get(bad.toolCallId));
    assert.ok(
      badRow.some((l) => l.includes("missing.ipynb")),
      badRow.join("\n"),
    );
    // Bad input pi's own schema check catches: a failed result naming the field; nothing ran.
    assert.equal(invalid.isError, true);
    assert.match(textOf(invalid), /cells/);

    const runRow = drawn(p.rows.get(run.toolCallId));
    assert.ok(
      runRow.some((l) => l.includes("notebook") && l.includes("analysis.ipynb")),
      runRow.join("\n"),
    );
    assert.ok(
      runRow.some((l) => l.includes("42")),
      runRow.join("\n"),
    );
    assert.match(lastAssistantText(p), /^the tool said: /);
  },
);

test(
  "artifact and runs through pi: a cut output read back whole, a background run waited for",
  LONG,
  async () => {
    const cwd = await tempDir("nbagent-pi-runs-");
    const flag = join(cwd, "go");
    const waiting = [
      "import os, time",
      `while not os.path.exists(${JSON.stringify(flag)}):`,
      "    time.sleep(0.05)",
      "print('released')",
    ].join("\n");
    let runId = "";
    const p = await pi(cwd, [
      call("python", {
        cells: [{ code: "for i in range(1, 20001):\n    print(f'line {i:05d} ' + 'x' * 20)" }],
      }),
      (context) => {
        const text = textOf(context.messages.at(-1) as { content: { type: string; text?: string }[] });
        const id = /artifact:\/\/([A-Za-z0-9_-]+)/.exec(text)?.[1];
        assert.ok(id, text.slice(-300));
        return call("artifact", { id, offset: 19999, limit: 2 });
      },
      // The cell cannot end before the test writes the flag: the call returns a run id after 0.5 s.
      call("python", { cells: [{ code: waiting }], wait: 0.5, timeout: 120 }),
      (context) => {
        const text = textOf(context.messages.at(-1) as { content: { type: string; text?: string }[] });
        runId = /\b(r\d+)\b/.exec(text)?.[1] ?? "";
        assert.ok(runId, text);
        writeFileSync(flag, "");
        return call("runs", { run_id: runId, wait: 100 });
      },
      echo(),
    ]);
    await p.runtime.session.prompt("Print a lot, then wait.");
    const [cut, page, started, waited] = toolResults(p);
    assert.equal(cut.isError, false);
    assert.equal(page.isError, false, textOf(page));
    assert.match(textOf(page), /^19999\tline 19999 x{20}\n20000\tline 20000 x{20}\n/m);
    assert.equal(started.isError, false, textOf(started));
    assert.match(textOf(started), new RegExp(runId));
    assert.equal(waited.isError, false, textOf(waited));
    assert.match(textOf(waited), /released/);
    for (const r of [cut, page, started, waited]) {
      const lines = drawn(p.rows.get(r.toolCallId));
      assert.ok(lines.length > 1, `${r.toolName}: ${lines.join("\n")}`);
    }
    assert.ok(drawn(p.rows.get(page.toolCallId)).some((l) => l.includes("line 20000")));
    assert.ok(drawn(p.rows.get(waited.toolCallId)).some((l) => l.includes("released")));
  },
);

test(
  "while a cell runs pi's row shows its output; pi's abort interrupts the kernel, which keeps its state",
  LONG,
  async () => {
    const cwd = await tempDir("nbagent-pi-abort-");
    const loop = [
      "import time",
      "interrupted = False",
      "try:",
      "    for i in range(6000):",
      "        print('sleeping', i, flush=True)",
      "        time.sleep(0.1)",
      "    interrupted = 'no: the loop ran to its end'",
      "except KeyboardInterrupt:",
      "    interrupted = True",
      "    raise",
    ].join("\n");
    const p = await pi(cwd, [
      call("python", { cells: [{ code: "kept = 'state from before'" }] }),
      // A timeout past the loop's 600 s: only the abort can stop the cell.
      call("python", { cells: [{ code: loop, title: "loop" }], timeout: 900 }),
    ]);
    let aborted = false;
    p.runtime.session.subscribe((event) => {
      if (event.type !== "tool_execution_update" || aborted) return;
      const row = p.rows.get(event.toolCallId);
      // Aborts once pi's row (drawn from the partial result) shows the running cell's output.
      if (row?.updates.at(-1)?.some((l) => /│ sleeping \d+$/.test(l))) {
        aborted = true;
        void p.runtime.session.abort();
      }
    });
    await p.runtime.session.prompt("Loop.");
    assert.ok(aborted, "no update showed the cell's output");
    const [, stopped] = toolResults(p);
    const row = p.rows.get(stopped.toolCallId)!;
    const during = row.updates.find((u) => u.some((l) => /│ sleeping \d+$/.test(l)))!;
    // The running cell, with its spinner and running time, then its output so far.
    assert.ok(
      during.some((l) => /^ \S \[1\/1\] loop running \d/.test(l)),
      during.join("\n"),
    );
    assert.match(
      textOf(stopped),
      /\nCell 1 was interrupted: the call was cancelled; the kernel keeps its state\.$/,
    );
    assert.ok(drawn(row).some((l) => l.includes("interrupted")));

    p.faux.setResponses([call("python", { cells: [{ code: "print(kept, interrupted)" }] }), echo()]);
    await p.runtime.session.prompt("Still there?");
    const last = toolResults(p).at(-1)!;
    assert.equal(textOf(last), "state from before True");
  },
);

test("ending pi's session shuts its kernels down; the next session starts fresh", LONG, async () => {
  const cwd = await tempDir("nbagent-pi-end-");
  const { name, value } = marker();
  process.env[name] = value;
  try {
    const p = await pi(cwd, [call("python", { cells: [{ code: "kept = 1\nprint('up')" }] }), echo()]);
    await p.runtime.session.prompt("Start a kernel.");
    assert.equal(textOf(toolResults(p)[0]), "up");
    assert.ok((await pidsWithEnv(name, value)).length > 0, "no kernel process carries the marker");

    // /new: pi emits session_shutdown to this extension instance and loads a new one.
    await p.runtime.newSession();
    assert.deepEqual(await pidsWithEnv(name, value), []);

    await bind(p);
    p.faux.setResponses([call("python", { cells: [{ code: "print('kept' in globals())" }] }), echo()]);
    await p.runtime.session.prompt("Is it kept?");
    assert.equal(textOf(toolResults(p).at(-1)!), "False");

    // quit
    open.splice(open.indexOf(p), 1);
    await p.close();
    assert.deepEqual(await pidsWithEnv(name, value), []);
  } finally {
    delete process.env[name];
  }
});

function visible(line: string): number {
  // pi's lines carry its colours; what counts is what the terminal shows.
  return [...line.replace(/\x1b\[[0-9;]*m/g, "")].length;
}

/**
 * What every transport must show (issue 9), written once and run over stdio and over HTTP: tools
 * listed with schemas and annotations, a notebook created, edited and run (text and a PNG back),
 * progress while a cell runs, cancellation that interrupts the kernel and keeps its state, artifacts
 * read as resources, and bad input answered clearly while the server keeps serving.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { CallToolResultSchema, type Progress } from "@modelcontextprotocol/sdk/types.js";
import { createToolbox } from "../../src/tools/index.js";
import { holdProbeCode, kernelHostPid } from "../run/helpers.js";
import { testSettings } from "../settings.js";
import { readNb, textOf, validate, writeNb } from "./helpers.js";

const LONG = { timeout: 120_000 };

export async function listsTools(client: Client): Promise<void> {
  const { tools } = await client.listTools();
  const listed = new Map(tools.map((t) => [t.name, t]));
  const toolbox = createToolbox({ settings: testSettings(), cwd: process.cwd() });
  try {
    assert.deepEqual([...listed.keys()].sort(), toolbox.tools.map((t) => t.name).sort());
    for (const tool of toolbox.tools) {
      const l = listed.get(tool.name)!;
      assert.deepEqual(l.inputSchema, JSON.parse(JSON.stringify(tool.parameters)), tool.name);
      assert.equal(l.description, tool.description);
      assert.equal(l.title, tool.label);
      assert.equal(l.annotations?.title, tool.label);
    }
  } finally {
    await toolbox.dispose();
  }
  assert.equal(listed.get("notebook")?.annotations?.readOnlyHint, false);
  assert.equal(listed.get("notebook")?.annotations?.destructiveHint, true);
  assert.equal(listed.get("python")?.annotations?.readOnlyHint, false);
  assert.equal(listed.get("python")?.annotations?.openWorldHint, false);
  assert.equal(listed.get("artifact")?.annotations?.readOnlyHint, true);
  assert.equal(listed.get("runs")?.annotations?.destructiveHint, false);
  assert.equal(listed.get("kernels")?.annotations?.destructiveHint, true);
  const { resourceTemplates } = await client.listResourceTemplates();
  assert.deepEqual(
    resourceTemplates.map((t) => t.uriTemplate),
    ["artifact://{id}"],
  );
}

/** Edits a notebook through MCP, runs it, and gets the text and the plot back as MCP image content. */
export async function editsAndRunsNotebook(client: Client, dir: string): Promise<void> {
  const path = await writeNb(join(dir, `nb-${randomUUID().slice(0, 8)}.ipynb`), [["code", "x = 1"]]);
  const name = path.slice(dir.length + 1);
  const insert = await client.callTool({
    name: "notebook",
    arguments: {
      action: "insert",
      notebook_path: name,
      cell_index: 1,
      content:
        "%matplotlib inline\nimport matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.show()\nprint('plotted', x)",
    },
  });
  assert.equal(insert.isError, undefined, textOf(insert));
  const edit = await client.callTool({
    name: "notebook",
    arguments: { action: "edit", notebook_path: name, cell_index: 0, content: "x = 41 + 1" },
  });
  assert.equal(edit.isError, undefined, textOf(edit));
  const run = await client.callTool(
    { name: "notebook", arguments: { action: "run", notebook_path: name, timeout: 100 } },
    undefined,
    LONG,
  );
  assert.equal(run.isError, undefined, textOf(run));
  assert.match(textOf(run), /plotted 42/);
  const content = run.content as { type: string; data?: string; mimeType?: string }[];
  const images = content.filter((c) => c.type === "image");
  assert.equal(images.length, 1, JSON.stringify(content.map((c) => c.type)));
  assert.equal(images[0].mimeType, "image/png");
  assert.equal(Buffer.from(images[0].data!, "base64").subarray(1, 4).toString("latin1"), "PNG");

  assert.equal(await validate(path), "ok");
  const nb = await readNb(path);
  assert.deepEqual(nb.cells[0].source, ["x = 41 + 1"]);
  const outputs = nb.cells[1].outputs as { data?: Record<string, unknown>; text?: string[] }[];
  assert.ok(outputs.some((o) => o.data?.["image/png"]));
  assert.ok(outputs.some((o) => o.text?.join("").includes("plotted 42")));
}

/**
 * A cell that waits until the test has seen a progress notification carrying its output: it can only
 * finish if progress arrives while it runs.
 */
export async function reportsProgress(client: Client, dir: string): Promise<void> {
  const flag = join(dir, `go-${randomUUID()}`);
  // It prints while it waits: a tool reports output at most every 250 ms, so a line printed just
  // after another report shows up with the next one.
  const code = [
    "import os, time",
    `while not os.path.exists(${JSON.stringify(flag)}):`,
    "    print('waiting for the test', flush=True)",
    "    time.sleep(0.05)",
    "print('released')",
  ].join("\n");
  const seen: Progress[] = [];
  const result = await client.callTool(
    { name: "python", arguments: { cells: [{ code: "pass" }, { code, title: "wait" }], timeout: 100 } },
    undefined,
    {
      ...LONG,
      onprogress: (p) => {
        seen.push(p);
        if (p.message?.includes("waiting for the test")) writeFileSync(flag, "");
      },
    },
  );
  assert.equal(result.isError, undefined, textOf(result));
  assert.match(textOf(result), /waiting for the test\nreleased$/);
  const during = seen.find((p) => p.message?.includes("waiting for the test"));
  assert.ok(during, JSON.stringify(seen));
  assert.equal(during.message, "cell 2/2 · wait: waiting for the test");
  assert.equal(during.total, 2);
  assert.ok(during.progress >= 1 && during.progress < 2, JSON.stringify(during));
  for (let i = 1; i < seen.length; i++)
    assert.ok(seen[i].progress > seen[i - 1].progress, JSON.stringify(seen));
}

/** Cancelling a call interrupts its cell; the session's kernel keeps its state for the next call. */
/**
 * A cancel the cell ignores (SIGINT ignored): the kernel is restarted and its state lost; the
 * cancelled call has no result, so the next call on the session says so at the top, once
 * (docs/kernel-state.md).
 */
export async function cancelIgnoredIsTold(client: Client): Promise<void> {
  const session = `deaf-${randomUUID().slice(0, 8)}`;
  const set = await client.callTool({
    name: "python",
    arguments: { session, cells: [{ code: "kept = 1" }] },
  });
  assert.equal(set.isError, undefined, textOf(set));
  const abort = new AbortController();
  const code =
    "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nprint('deaf', flush=True)\ntime.sleep(600)";
  const cancelled = client.callTool(
    { name: "python", arguments: { session, cells: [{ code }], timeout: 900 } },
    undefined,
    {
      signal: abort.signal,
      onprogress: (p) => {
        if (p.message?.includes("deaf")) abort.abort(new Error("the test cancels"));
      },
    },
  );
  await assert.rejects(cancelled, /the test cancels/);
  const next = await client.callTool({
    name: "python",
    arguments: { session, cells: [{ code: "print(kept)" }] },
  });
  assert.match(
    textOf(next),
    /^Note: This session's kernel was restarted at \d\d:\d\d:\d\d: a python call was cancelled while cell 1 ran, and cell 1 did not stop when interrupted, so the kernel was restarted and its state is lost\. This call runs in the new kernel: variables, imports and other state from earlier calls are gone\.\n[\s\S]*NameError: name 'kept' is not defined/,
  );
  const again = await client.callTool({
    name: "python",
    arguments: { session, cells: [{ code: "print(2)" }] },
  });
  assert.equal(textOf(again), "2", "said once");
}

export async function cancelInterruptsKernel(client: Client): Promise<void> {
  const session = `cancel-${randomUUID().slice(0, 8)}`;
  const before = await client.callTool({
    name: "python",
    arguments: { session, cells: [{ code: "kept = 'state from before'" }] },
  });
  assert.equal(before.isError, undefined, textOf(before));
  const abort = new AbortController();
  const code = [
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
  const cancelled = client.callTool(
    // A timeout past the loop's 600 s: only the cancellation can stop the cell.
    { name: "python", arguments: { session, cells: [{ code }], timeout: 900 } },
    undefined,
    {
      signal: abort.signal,
      onprogress: (p) => {
        if (p.message?.includes("sleeping")) abort.abort(new Error("the test cancels"));
      },
    },
  );
  await assert.rejects(cancelled, /the test cancels/);
  // Queued behind the cancelled call: it runs only once that call's cell has stopped.
  const next = await client.callTool({
    name: "python",
    arguments: { session, cells: [{ code: "print(kept, interrupted)" }] },
  });
  assert.equal(next.isError, undefined, textOf(next));
  assert.equal(textOf(next).trim(), "state from before True");
}

/** A cut output names artifact://<id>; the resource holds the whole output, page by page. */
export async function readsArtifactResource(client: Client): Promise<void> {
  const result = await client.callTool({
    name: "python",
    arguments: { cells: [{ code: "for i in range(1, 20001):\n    print(f'line {i:05d} ' + 'x' * 20)" }] },
  });
  const text = textOf(result);
  const uri = /artifact:\/\/[A-Za-z0-9_-]+/.exec(text)?.[0];
  assert.ok(uri, text.slice(-500));
  const { resources } = await client.listResources();
  assert.equal(resources[0]?.uri, uri);

  const first = (await client.readResource({ uri })).contents[0] as {
    text: string;
    _meta?: Record<string, unknown>;
  };
  assert.ok(first.text.startsWith("line 00001 xxxx"), first.text.slice(0, 50));
  const next = first._meta?.nextUri as string;
  const shownLines = first.text.split("\n").filter((l) => l.startsWith("line ")).length;
  assert.equal(next, `${uri}?offset=${shownLines + 1}`);
  assert.match(first.text, new RegExp(`more follows: read ${next.replace(/[?]/g, "\\?")}\\]\\n$`));
  assert.equal(first._meta?.hasMore, true);

  const second = (await client.readResource({ uri: next })).contents[0] as { text: string };
  assert.ok(second.text.startsWith(`line ${String(shownLines + 1).padStart(5, "0")} `));

  const last = (await client.readResource({ uri: `${uri}?offset=19999&limit=5` })).contents[0] as {
    text: string;
    _meta?: Record<string, unknown>;
  };
  assert.equal(last.text, `line 19999 ${"x".repeat(20)}\nline 20000 ${"x".repeat(20)}\n`);
  assert.equal(last._meta?.hasMore, false);

  await assert.rejects(
    client.readResource({ uri: "artifact://no-such-artifact" }),
    (err: Error & { code?: number }) => {
      assert.equal(err.code, -32002);
      assert.match(err.message, /Artifact not found: artifact:\/\/no-such-artifact/);
      return true;
    },
  );
  await assert.rejects(client.readResource({ uri: `${uri}?offset=0` }), (err: Error & { code?: number }) => {
    assert.equal(err.code, -32602);
    assert.match(err.message, /offset must be a whole number from 1/);
    return true;
  });
}

/** Wrong tool names, schema violations and non-object arguments get clear errors; serving goes on. */
export async function answersBadInput(client: Client): Promise<void> {
  await assert.rejects(client.callTool({ name: "nope", arguments: {} }), (err: Error & { code?: number }) => {
    assert.equal(err.code, -32602);
    assert.match(err.message, /Unknown tool 'nope'\. Tools: notebook, python/);
    return true;
  });
  const invalid = await client.callTool({ name: "python", arguments: { cells: "print(1)" } });
  assert.equal(invalid.isError, true);
  assert.equal(textOf(invalid), 'Error: cells must be a non-empty array; got "print(1)".');
  await assert.rejects(
    client.request(
      { method: "tools/call", params: { name: "python", arguments: [1, 2] } },
      CallToolResultSchema,
    ),
    (err: Error & { code?: number }) => {
      assert.equal(err.code, -32602);
      return true;
    },
  );
  const ok = await client.callTool({
    name: "python",
    arguments: { cells: [{ code: "print('still serving')" }] },
  });
  assert.equal(textOf(ok).trim(), "still serving");
}

/** A call far beyond the size limit is refused (how depends on the transport); serving goes on. */
export async function refusesHugeCall(client: Client, check: (err: Error & { code?: number }) => void) {
  const code = `s = '${"x".repeat(5 * 1024 * 1024)}'`;
  await assert.rejects(
    client.callTool({ name: "python", arguments: { cells: [{ code }] } }),
    (err: Error) => {
      check(err);
      return true;
    },
  );
  const ok = await client.callTool({
    name: "python",
    arguments: { cells: [{ code: "print('after huge')" }] },
  });
  assert.equal(textOf(ok).trim(), "after huge");
}

/** Whether a process is alive (a zombie is not). */
export function alive(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z /.test(readFileSync(`/proc/${pid}/stat`, "latin1"));
  } catch {
    return false;
  }
}

/** The host pid of the session's kernel (it is pid 2 of its own namespace: found by a file it holds). */
export async function kernelPid(client: Client, session?: string): Promise<number> {
  const probe = join(await mkdtemp(join(tmpdir(), "nbagent-probe-")), "probe");
  const r = await client.callTool({
    name: "python",
    arguments: { ...(session ? { session } : {}), cells: [{ code: holdProbeCode(probe) }] },
  });
  assert.equal(textOf(r).trim(), "held", textOf(r));
  return kernelHostPid(probe);
}

/**
 * A call longer than its wait budget comes back with a run id and goes on; the runs tool, called
 * over MCP, returns the call's own result once it is done (docs/runs.md). The cell waits for a file
 * the test writes after the first answer, so the order is fixed whatever the machine's speed.
 */
export async function outlivesTheCall(client: Client, dir: string): Promise<void> {
  const session = `runs-${randomUUID()}`;
  const gate = join(dir, `gate-${session}`);
  await client.callTool(
    { name: "python", arguments: { session, cells: [{ code: "ready = 1" }] } },
    undefined,
    LONG,
  );
  const first = await client.callTool(
    {
      name: "python",
      arguments: {
        session,
        timeout: 600,
        wait: 1,
        cells: [
          {
            code: `import os, time\nprint('started', flush=True)\nwhile not os.path.exists(${JSON.stringify(gate)}): time.sleep(0.02)\nprint('finished', ready)`,
          },
        ],
      },
    },
    undefined,
    LONG,
  );
  const text = textOf(first);
  assert.equal(first.isError, undefined, text);
  const id = /^Still running after 1 s: run (r\d+), python call;/.exec(text)?.[1];
  assert.ok(id, text);
  assert.match(text, new RegExp(`call the runs tool: \\{"run_id":"${id}"\\}`));
  writeFileSync(gate, "");
  const done = await client.callTool({ name: "runs", arguments: { run_id: id, wait: 600 } }, undefined, LONG);
  assert.equal(done.isError, undefined, textOf(done));
  assert.match(
    textOf(done),
    // The line the first look showed is not sent again (docs/runs.md).
    new RegExp(
      `^Run ${id} \\(python call\\) finished after \\d+ s\\. Its result:\\n(${/\nstarted\n/.test(text) ? "… \\[line 1 shown before\\]" : "started"})\\nfinished 1$`,
    ),
  );
}

/**
 * The kernels tool over MCP (docs/kernels-tool.md): the list shows a session busy with a background
 * run (which cell, for how long, its memory) and the run in it; interrupt by the run's id ends the
 * run with KeyboardInterrupt; restart gives a new kernel whose state is gone, which the next call
 * says at its top. The cell waits for a
 * file that is never written, so it is busy whenever the list is asked.
 */
export async function managesKernels(client: Client, dir: string): Promise<void> {
  const session = `kernels-${randomUUID()}`;
  const call = (name: string, args: Record<string, unknown>) =>
    client.callTool({ name, arguments: args }, undefined, LONG);
  await call("python", { session, cells: [{ code: "kept = 1" }] });
  const never = join(dir, `never-${session}`);
  const first = await call("python", {
    session,
    wait: 1,
    cells: [
      { code: `import os, time\nwhile not os.path.exists(${JSON.stringify(never)}): time.sleep(0.02)` },
    ],
  });
  const id = /^Still running after 1 s: run (r\d+), python call;/.exec(textOf(first))?.[1];
  assert.ok(id, textOf(first));
  let listed = "";
  do listed = textOf(await call("kernels", {}));
  while (
    !new RegExp(
      `"${session}" \\[local\\]: busy for \\d+ s: run ${id} \\(python call\\), cell 1 running`,
    ).test(listed)
  );
  assert.match(
    listed,
    new RegExp(
      `\\n- python session "${session}" \\[local\\]: busy for \\d+ s: run ${id} \\(python call\\), cell 1 running; memory [\\d.]+ (MiB|GiB)\\.\\n`,
    ),
  );
  assert.match(
    listed,
    new RegExp(`\\n- run ${id} \\(python call\\): running for \\d+ s, in python session "${session}"\\.\\n`),
  );
  const stopped = await call("kernels", { action: "interrupt", run_id: id });
  assert.equal(stopped.isError, undefined, textOf(stopped));
  assert.match(
    textOf(stopped),
    new RegExp(
      `^Interrupted run ${id} \\(python call\\), which had held python session "${session}" for \\d+ s \\(cell 1 running\\)\\. `,
    ),
  );
  const end = textOf(await call("runs", { run_id: id, wait: 600 }));
  assert.match(end, /KeyboardInterrupt/);
  assert.match(
    end,
    /the call was cancelled \(interrupted through the kernels tool\); the kernel keeps its state\.$/,
  );
  const restarted = await call("kernels", { action: "restart", session_id: session });
  assert.match(
    textOf(restarted),
    new RegExp(`^Restarted python session "${session}": it runs a new kernel\\. Its state is lost: `),
  );
  const after = await call("python", { session, cells: [{ code: "kept" }] });
  assert.match(
    textOf(after),
    /^Note: This session's kernel was restarted at \d\d:\d\d:\d\d on request \(the kernels tool's restart\), so its state is lost\./,
  );
  assert.match(textOf(after), /NameError: name 'kept' is not defined/);
  const bad = await call("kernels", { action: "interrupt", session_id: "no-such-session" });
  assert.equal(bad.isError, true);
  assert.match(
    textOf(bad),
    /^Error: no live python session "no-such-session" here\. Valid targets: session_id .*"/,
  );
}

/**
 * Rich outputs the model sees (issue 19): an updated display shows once, in its latest state, where
 * it was shown; a read of a cell returns its saved image as image content, labelled in the text.
 */
export async function updatesDisplaysAndReadsImages(client: Client, dir: string): Promise<void> {
  const py = await client.callTool(
    {
      name: "python",
      arguments: {
        cells: [
          {
            code: 'print("before")\nh = display("step 0", display_id=True)\nprint("after")\nfor i in range(1, 4): h.update(f"step {i}")',
          },
        ],
      },
    },
    undefined,
    LONG,
  );
  // (a session's first call may start with notes about its kernel)
  assert.match(textOf(py), /(^|\n)before\n'step 3'\nafter$/);
  assert.doesNotMatch(textOf(py), /step [012]/);

  const path = await writeNb(join(dir, `img-${randomUUID().slice(0, 8)}.ipynb`), [
    [
      "code",
      "from PIL import Image\nfrom IPython.display import display\ndisplay(Image.new('RGB', (4, 3), 'red'))",
    ],
  ]);
  const name = path.slice(dir.length + 1);
  const run = await client.callTool(
    { name: "notebook", arguments: { action: "run", notebook_path: name } },
    undefined,
    LONG,
  );
  assert.equal(run.isError, undefined, textOf(run));
  const read = await client.callTool({
    name: "notebook",
    arguments: { action: "read", notebook_path: name, cell_index: 0 },
  });
  const content = read.content as { type: string; text?: string; data?: string; mimeType?: string }[];
  assert.deepEqual(
    content.map((c) => c.type),
    ["text", "image"],
  );
  assert.match(
    content[0].text!,
    // the image's label stands instead of PIL's repr (<PIL.Image.Image …>), as in python results
    /\n-- output 0 · display_data\n\[image 1 · cell 0 · 4×3\]$/,
  );
  assert.equal(content[1].mimeType, "image/png");
  assert.equal(Buffer.from(content[1].data!, "base64").subarray(1, 4).toString("latin1"), "PNG");
}

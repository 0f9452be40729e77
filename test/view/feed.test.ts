/**
 * The view's notebook feed end to end (src/view/notebook-feed.ts, docs/view.md "Notebooks in the
 * view"): a real host (`nbagent mcp` over stdio, driven by the MCP SDK client as an agent's client
 * drives it) and a real ViewHub in this process, on the user's view socket folder. Every message
 * waited for is this test's own (its files, its host's sessions): other hosts may be running.
 * No sleeps, no time bounds: each step waits for the messages themselves.
 */
import assert from "node:assert/strict";
import type { ChildProcessWithoutNullStreams } from "node:child_process";
import { execFileSync } from "node:child_process";
import { realpathSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { viewSocketDir } from "../../src/view/host.js";
import { type HubMessage, ViewHub } from "../../src/view/hub.js";
import type { ViewMessage } from "../../src/view/protocol.js";
import { ownedStdioServer, tempDir, textOf, writeNb } from "../mcp/helpers.js";
import { TEST_PYTHON } from "../python.js";

const LONG = { timeout: 120_000 };

let dir: string;
let hub: ViewHub;
let client: Client;
let child: ChildProcessWithoutNullStreams;
let hostId: string;
const messages: HubMessage[] = [];
const waiters = new Set<() => void>();

async function waitFor<T extends HubMessage>(pred: (m: HubMessage) => m is T, from?: number): Promise<T>;
async function waitFor(pred: (m: HubMessage) => boolean, from?: number): Promise<HubMessage>;
async function waitFor(pred: (m: HubMessage) => boolean, from = 0): Promise<HubMessage> {
  for (;;) {
    const found = messages.slice(from).find(pred);
    if (found) return found;
    await new Promise<void>((resolve) => waiters.add(resolve));
  }
}

/** The notebook messages about `path`, from `from` on. */
const about = (path: string, from = 0): ViewMessage[] =>
  messages.slice(from).flatMap((m) => (m.type === "notebook" && m.message.path === path ? [m.message] : []));

/** Waits for a notebook message about `path` that matches. */
async function waitNb(path: string, pred: (m: ViewMessage) => boolean, from = 0): Promise<ViewMessage> {
  const m = await waitFor((x) => x.type === "notebook" && x.message.path === path && pred(x.message), from);
  return (m as { message: ViewMessage }).message;
}

const call = (name: string, args: Record<string, unknown>) =>
  client.callTool({ name, arguments: args }, undefined, LONG);

before(async () => {
  dir = realpathSync(await tempDir("nbagent-feed-"));
  const sockets = viewSocketDir();
  assert.ok(sockets, "the user has a socket root");
  hub = new ViewHub(sockets);
  hub.listen((m) => {
    messages.push(m);
    for (const w of [...waiters]) {
      waiters.delete(w);
      w();
    }
  });
  hub.start();
  const owned = await ownedStdioServer(["--cwd", dir]);
  client = owned.client;
  child = owned.child;
  const added = await waitFor((m) => m.type === "host-added" && m.host.pid === child.pid);
  hostId = (added as { host: { id: string } }).host.id;
});

after(async () => {
  hub?.close();
  if (child && child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
});

test("the notebook tool's read shows the file; its insert comes as cell-inserted with the new cell", async () => {
  const path = join(dir, "edit.ipynb");
  await writeNb(path, [["code", "x = 1"]]);
  const from = messages.length;
  await call("notebook", { action: "read", notebook_path: "edit.ipynb" });
  const shown = await waitNb(path, (m) => m.kind === "notebook", from);
  assert.equal(shown.kind === "notebook" && shown.title, "edit.ipynb");
  assert.deepEqual(shown.kind === "notebook" && shown.cells.map((c) => [c.cell_type, c.source]), [
    ["code", "x = 1"],
  ]);
  const inserted = await call("notebook", {
    action: "insert",
    notebook_path: "edit.ipynb",
    cell_index: 1,
    cell_type: "markdown",
    content: "# Results",
  });
  const id = /\(id ([^)]+)\)/.exec(textOf(inserted))?.[1];
  assert.ok(id, textOf(inserted));
  const m = await waitNb(path, (x) => x.kind === "cell-inserted", from);
  assert.deepEqual(m, {
    kind: "cell-inserted",
    path,
    index: 1,
    cell: { id, cell_type: "markdown", source: "# Results" },
  });
  // An edit and a delete, by id.
  await call("notebook", { action: "edit", notebook_path: "edit.ipynb", cell_id: id, content: "# Findings" });
  assert.deepEqual(await waitNb(path, (x) => x.kind === "cell-edited", from), {
    kind: "cell-edited",
    path,
    id,
    source: "# Findings",
  });
  await call("notebook", { action: "delete", notebook_path: "edit.ipynb", cell_id: id });
  assert.deepEqual(await waitNb(path, (x) => x.kind === "cell-deleted", from), {
    kind: "cell-deleted",
    path,
    id,
  });
});

test("a notebook run: the cell marked running, its lines arriving before it ends, then idle with its count", async () => {
  const path = join(dir, "run.ipynb");
  const go = join(dir, "go");
  await writeNb(path, [
    [
      "code",
      `import os, time\nprint("first line", flush=True)\nwhile not os.path.exists(${JSON.stringify(go)}):\n    time.sleep(0.05)\nprint("second line")`,
    ],
  ]);
  const from = messages.length;
  const running = call("notebook", { action: "run", notebook_path: "run.ipynb" });
  const started = await waitNb(path, (m) => m.kind === "cell-running" && m.state === "running", from);
  const id = (started as { id: string }).id;
  const first = await waitNb(
    path,
    (m) => m.kind === "output-appended" && JSON.stringify(m.output).includes("first line"),
    from,
  );
  assert.deepEqual(first, {
    kind: "output-appended",
    path,
    id,
    output: { output_type: "stream", name: "stdout", text: "first line\n" },
  });
  // Still running: no idle yet (the cell waits for the file this test writes only now).
  assert.equal(
    about(path, from).some((m) => m.kind === "cell-running" && m.state === "idle"),
    false,
  );
  writeFileSync(go, "");
  assert.match(textOf(await running), /second line/);
  const idle = await waitNb(path, (m) => m.kind === "cell-running" && m.state === "idle", from);
  assert.deepEqual(idle, { kind: "cell-running", path, id, state: "idle", execution_count: 1 });
  const seen = about(path, from);
  assert.ok(
    seen.findIndex((m) => JSON.stringify(m).includes("second line")) < seen.indexOf(idle),
    "the second line arrived before the cell ended",
  );
  // The run's save brings nothing new: the live outputs are the file's, not drawn again. (A later
  // change of the file is read after the save's read: once it is here, the save's read is done.)
  const afterIdle = messages.length;
  await call("notebook", {
    action: "insert",
    notebook_path: "run.ipynb",
    cell_index: 1,
    content: "done = True",
  });
  await waitNb(path, (m) => m.kind === "cell-inserted", afterIdle);
  assert.deepEqual(
    about(path, afterIdle).map((m) => m.kind),
    ["cell-inserted"],
  );
  const snap = hub.state().notebooks.find((n) => n.path === path);
  assert.ok(snap?.kind === "notebook");
  assert.deepEqual(snap.cells[0].outputs, [
    { output_type: "stream", name: "stdout", text: "first line\nsecond line\n" },
  ]);
  assert.equal(snap.cells[0].execution_count, 1);
});

test("another program's nbformat.write comes as a patch", async () => {
  const path = join(dir, "other.ipynb");
  await writeNb(path, [["code", "a = 1"]]);
  const from = messages.length;
  await call("notebook", { action: "read", notebook_path: "other.ipynb" });
  await waitNb(path, (m) => m.kind === "notebook", from);
  execFileSync(TEST_PYTHON, [
    "-c",
    "import sys, nbformat\n" +
      "nb = nbformat.read(sys.argv[1], as_version=4)\n" +
      "cell = nbformat.v4.new_markdown_cell('written by someone else')\n" +
      "cell.id = 'other-writer'\n" +
      "nb.cells.insert(0, cell)\n" +
      "nb.cells[1].source = 'a = 2'\n" +
      "nbformat.write(nb, sys.argv[1])\n",
    path,
  ]);
  const inserted = await waitNb(path, (m) => m.kind === "cell-inserted", from);
  assert.deepEqual(inserted, {
    kind: "cell-inserted",
    path,
    index: 0,
    cell: { id: "other-writer", cell_type: "markdown", source: "written by someone else" },
  });
  const edited = await waitNb(path, (m) => m.kind === "cell-edited", from);
  assert.equal(edited.kind === "cell-edited" && edited.source, "a = 2");
  // A write cut midway (invalid JSON) changes nothing; the next whole write is read.
  const before = about(path, from).length;
  writeFileSync(path, '{"cells": [');
  execFileSync(TEST_PYTHON, [
    "-c",
    "import sys, nbformat\n" +
      "nb = nbformat.v4.new_notebook()\n" +
      "c = nbformat.v4.new_code_cell('b = 3')\n" +
      "c.id = 'after-cut'\n" +
      "nb.cells = [c]\n" +
      "nbformat.write(nb, sys.argv[1])\n",
    path,
  ]);
  await waitNb(path, (m) => m.kind === "cell-inserted" && m.cell.id === "after-cut", from);
  const kinds = about(path, from)
    .slice(before)
    .map((m) => m.kind);
  assert.ok(!kinds.includes("notebook-closed") && !kinds.includes("notebook"), kinds.join(","));
  const snap = hub.state().notebooks.find((n) => n.path === path);
  assert.deepEqual(snap?.kind === "notebook" && snap.cells.map((c) => c.id), ["after-cut"]);
});

test("a notebook the agent's code replaced by a link to another file, or by a FIFO: closed, the other file never read", async () => {
  const secret = join(dir, "..", `secret-${process.pid}.ipynb`);
  await writeNb(secret, [["code", "the secret"]]);
  for (const [name, plant] of [
    [
      "linked.ipynb",
      (p: string) =>
        `os.remove(${JSON.stringify(p)}); os.symlink(${JSON.stringify(secret)}, ${JSON.stringify(p)})`,
    ],
    ["piped.ipynb", (p: string) => `os.remove(${JSON.stringify(p)}); os.mkfifo(${JSON.stringify(p)})`],
  ] as const) {
    const path = join(dir, name);
    await writeNb(path, [["code", "mine"]]);
    const from = messages.length;
    await call("notebook", { action: "read", notebook_path: name });
    await waitNb(path, (m) => m.kind === "notebook", from);
    // The kernel plants it, as code the agent runs could (in a session of its own: the default
    // session's notebook is the next test's).
    const r = await call("python", { session: "planter", cells: [{ code: `import os\n${plant(path)}` }] });
    assert.equal(textOf(r), "(no output)");
    await waitNb(path, (m) => m.kind === "notebook-closed", from);
    const said = JSON.stringify(about(path, from));
    assert.doesNotMatch(said, /the secret/);
  }
  // The view still answers (a FIFO read would have held the feed).
  assert.ok(hub.state().hosts.some((h) => h.host.id === hostId));
});

test("a python session's notebook grows with each call; a new viewer gets the same cells from the host's export", async () => {
  const from = messages.length;
  await call("python", { cells: [{ code: "x = 41" }] });
  await call("python", { cells: [{ code: "print(x + 1)" }] });
  const prefix = `session:${hostId}:`;
  const path = (
    (await waitFor((m) => m.type === "notebook" && m.message.path.startsWith(prefix), from)) as {
      message: ViewMessage;
    }
  ).message.path;
  await waitNb(path, (m) => m.kind === "cell-running" && m.state === "idle" && m.execution_count === 2, from);
  const snap = hub.state().notebooks.find((n) => n.path === path);
  assert.ok(snap?.kind === "notebook");
  assert.equal(snap.title, "python session default");
  assert.deepEqual(snap.session, { hostId, key: { kind: "python", sessionId: "default", cwd: dir } });
  assert.deepEqual(
    snap.cells.map((c) => [c.id, c.source, c.execution_count, c.outputs]),
    [
      ["cell-1", "x = 41", 1, []],
      ["cell-2", "print(x + 1)", 2, [{ output_type: "stream", name: "stdout", text: "42\n" }]],
    ],
  );
  // A viewer that comes now has only the host's export to go by.
  const late = new ViewHub(viewSocketDir()!);
  const lateMessages: HubMessage[] = [];
  let wake: (() => void) | undefined;
  late.listen((m) => {
    lateMessages.push(m);
    wake?.();
  });
  late.start();
  try {
    for (;;) {
      const n = late.state().notebooks.find((x) => x.path === path);
      if (n?.kind === "notebook" && n.cells.length === 2) {
        assert.deepEqual(
          n.cells.map((c) => [c.id, c.source, c.execution_count, c.outputs]),
          snap.cells.map((c) => [c.id, c.source, c.execution_count, c.outputs]),
        );
        break;
      }
      await new Promise<void>((resolve) => {
        wake = resolve;
      });
    }
  } finally {
    late.close();
  }
});

test("a matplotlib figure arrives as an image/png output; a huge one is bounded and says so", async () => {
  const from = messages.length;
  await call("python", {
    session: "plots",
    cells: [
      {
        code:
          "import matplotlib\nmatplotlib.use('module://matplotlib_inline.backend_inline')\n" +
          "import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.show()",
      },
      {
        code: "from IPython.display import display\ndisplay({'text/plain': 'huge', 'image/png': 'A' * (3 * 2**20)}, raw=True)",
      },
    ],
  });
  const prefix = `session:${hostId}:`;
  const image = await waitFor(
    (m) =>
      m.type === "notebook" &&
      m.message.path.startsWith(prefix) &&
      m.message.path.includes("plots") &&
      m.message.kind === "output-appended" &&
      m.message.output.output_type === "display_data" &&
      "image/png" in m.message.output.data,
    from,
  );
  const png = (image as { message: { output: { data: Record<string, string> } } }).message.output.data[
    "image/png"
  ];
  assert.ok(Buffer.from(png, "base64").subarray(1, 4).toString() === "PNG", "a PNG image");
  const huge = await waitFor(
    (m) =>
      m.type === "notebook" &&
      m.message.path.includes("plots") &&
      m.message.kind === "output-appended" &&
      JSON.stringify(m.message.output).includes("huge"),
    from,
  );
  assert.deepEqual((huge as { message: { output: unknown } }).message.output, {
    output_type: "display_data",
    data: {
      "text/plain":
        "huge\n[left out of the view: image/png (3.0 MiB); the notebook file or the call's result has it]",
    },
    metadata: {},
  });
});

test("a host that ends closes its session notebooks and the files only it touched", async () => {
  // What the page shows now (the files an earlier test replaced by a link or a FIFO are closed already).
  const open = hub.state().notebooks.map((n) => n.path);
  const files = open.filter((p) => p.startsWith(dir));
  const sessions = open.filter((p) => p.startsWith(`session:${hostId}:`));
  assert.ok(files.length >= 3 && sessions.length >= 2, `${files} ${sessions}`);
  const from = messages.length;
  // The agent's client goes away (it closes the server's stdin): the host ends.
  await client.close();
  child.stdin.end();
  await waitFor((m) => m.type === "host-removed" && m.hostId === hostId, from);
  for (const path of [...files, ...sessions]) await waitNb(path, (m) => m.kind === "notebook-closed", from);
  assert.deepEqual(
    hub.state().notebooks.filter((n) => n.path.startsWith(dir) || n.path.startsWith(`session:${hostId}:`)),
    [],
  );
});

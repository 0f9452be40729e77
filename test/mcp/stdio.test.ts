/**
 * `nbagent mcp` over stdio with the official SDK client: the shared scenarios (scenarios.ts), a call
 * too large for the transport, and the process's end — stdin closing or SIGTERM during a running
 * cell — leaving no kernel behind.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, test } from "node:test";
import {
  marker,
  ownedStdioServer,
  pidsWithEnv,
  readNb,
  type StdioServer,
  stdioServer,
  tempDir,
  textOf,
  validate,
} from "./helpers.js";
import {
  alive,
  answersBadInput,
  cancelIgnoredIsTold,
  cancelInterruptsKernel,
  editsAndRunsNotebook,
  kernelPid,
  listsTools,
  managesKernels,
  outlivesTheCall,
  readsArtifactResource,
  refusesHugeCall,
  reportsProgress,
  updatesDisplaysAndReadsImages,
} from "./scenarios.js";

let server: StdioServer;
let dir: string;

before(async () => {
  dir = await tempDir("nbagent-mcp-stdio-");
  server = await stdioServer(["--cwd", dir]);
});

after(async () => {
  await server?.client.close();
});

test("lists the toolbox's tools with their schemas, descriptions and annotations", () =>
  listsTools(server.client));
test("creates, edits and runs a notebook: text and a PNG as MCP image content", () =>
  editsAndRunsNotebook(server.client, dir));
test("sends progress while a cell runs", () => reportsProgress(server.client, dir));
test("an updated display shows once in its latest state; read returns a cell's saved image", () =>
  updatesDisplaysAndReadsImages(server.client, dir));
test("cancellation interrupts the kernel and keeps its state", () => cancelInterruptsKernel(server.client));
test("a cancel the cell ignores: the next call says the kernel's state is lost", () =>
  cancelIgnoredIsTold(server.client));
test("artifacts are resources, read page by page", () => readsArtifactResource(server.client));
test("a call past its wait budget returns a run id; the runs tool gets its result", () =>
  outlivesTheCall(server.client, dir));
test("the kernels tool lists a busy run's kernel, interrupts the run and restarts the session", () =>
  managesKernels(server.client, dir));
test("bad input gets clear errors and the server keeps serving", () => answersBadInput(server.client));
test("a call past the size limit is refused with its id, and the server keeps serving", () =>
  refusesHugeCall(server.client, (err) => {
    assert.equal(err.code, -32600);
    assert.match(err.message, /Request too large: \d+ bytes \(limit 4194304\)/);
  }));

test("export_notebook writes the session's cells as a notebook; a bad target is an Error:", async () => {
  const call = (args: Record<string, unknown>) => server.client.callTool({ name: "python", arguments: args });
  const ran = await call({ session: "nb", cells: [{ code: "v = 6\nprint(v)" }, { code: "v * 7" }] });
  // The server's earlier tests keep kernels: this new session may take an idle one's slot, and then
  // its result says so first (docs/kernel-state.md).
  assert.equal(
    textOf(ran).replace(/^Note: to make room for this call's kernel, .*\n/, ""),
    "[1/2]\n6\n[2/2]\n42",
  );
  const only = await call({ session: "nb", export_notebook: "mcp-session.ipynb" });
  assert.equal(textOf(only), "Exported this session's 2 cells to mcp-session.ipynb (with their outputs).");
  assert.equal(await validate(join(dir, "mcp-session.ipynb")), "ok");
  const nb = await readNb(join(dir, "mcp-session.ipynb"));
  assert.deepEqual(
    nb.cells.map((c: { source: string[]; execution_count: number }) => [
      c.source.join(""),
      c.execution_count,
    ]),
    [
      ["v = 6\nprint(v)", 1],
      ["v * 7", 2],
    ],
  );
  const again = await call({ session: "nb", export_notebook: "mcp-session.ipynb" });
  assert.equal(again.isError, true);
  assert.equal(
    textOf(again),
    "Error: cannot export to mcp-session.ipynb: it already exists, and an export never replaces a file. Nothing was written; pass a new path.",
  );
});

test("stdin closing ends the server and shuts its kernels down", async () => {
  const mark = marker();
  const owned = await ownedStdioServer(["--cwd", dir], { [mark.name]: mark.value });
  const pid = await kernelPid(owned.client);
  const running = await pidsWithEnv(mark.name, mark.value);
  assert.ok(running.includes(pid) && running.includes(owned.child.pid!), String(running));
  owned.child.stdin.end();
  assert.deepEqual(await owned.exited, [0, null]);
  assert.equal(alive(pid), false);
  assert.deepEqual(await pidsWithEnv(mark.name, mark.value), []);
});

test("SIGTERM during a running cell ends the server and shuts its kernels down", async () => {
  const mark = marker();
  const owned = await ownedStdioServer(["--cwd", dir], { [mark.name]: mark.value });
  const pid = await kernelPid(owned.client);
  const running = owned.client.callTool(
    {
      name: "python",
      arguments: {
        cells: [
          {
            code: "import time\nfor i in range(6000):\n    print('long', i, flush=True)\n    time.sleep(0.1)",
          },
        ],
      },
    },
    undefined,
    {
      onprogress: (p) => {
        if (p.message?.includes("long")) owned.child.kill("SIGTERM");
      },
    },
  );
  await assert.rejects(running, /Connection closed/);
  assert.deepEqual(await owned.exited, [0, null]);
  assert.equal(alive(pid), false);
  assert.deepEqual(await pidsWithEnv(mark.name, mark.value), []);
});

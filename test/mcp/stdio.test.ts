/**
 * `nbagent mcp` over stdio with the official SDK client: the shared scenarios (scenarios.ts), a call
 * too large for the transport, and the process's end — stdin closing or SIGTERM during a running
 * cell — leaving no kernel behind.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { marker, ownedStdioServer, pidsWithEnv, type StdioServer, stdioServer, tempDir } from "./helpers.js";
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

/**
 * A proxy between nbagent and a real jupyter_server that passes HTTP but not WebSockets (a
 * corporate proxy's usual gap): the REST calls work, the kernel's WebSocket never opens. The python
 * tool's Error says that, naming the request and the bound (docs/backends.md), and the kernel nbagent
 * asked for is not left running on the server.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, request, type Server } from "node:http";
import type { Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { batch, resultText } from "../run/helpers.js";
import { type JupyterServerHandle, startJupyterServer } from "./helpers.js";

const dir = mkdtempSync(join(tmpdir(), "nbagent-ws-blocked-"));
let server: JupyterServerHandle;
let proxy: Server;
let proxyUrl = "";
const held: Socket[] = [];
let upgrades = 0;

before(async () => {
  server = await startJupyterServer();
  const target = new URL(server.url);
  proxy = createServer((req, res) => {
    const out = request(
      { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    out.on("error", () => res.destroy());
    req.pipe(out);
  });
  // An upgrade request is taken and never answered.
  proxy.on("upgrade", (_req, socket: Socket) => {
    upgrades++;
    held.push(socket);
  });
  await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
  const port = (proxy.address() as { port: number }).port;
  proxyUrl = `http://127.0.0.1:${port}${target.pathname}`;
});

after(async () => {
  for (const s of held) s.destroy();
  await new Promise((resolve) => proxy?.close(resolve));
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

test("a proxy that does not pass WebSockets: the Error names the kernel's WebSocket and its bound, and no kernel is left on the server", async () => {
  const { results, stderr } = await batch(dir, [{ tool: "python", params: { cells: [{ code: "1" }] } }], {
    NBAGENT_GATEWAY_URL: proxyUrl,
    NBAGENT_GATEWAY_TOKEN: server.token,
    NBAGENT_START_SECONDS: "3",
  });
  assert.equal(results.length, 1, stderr);
  const text = resultText(results[0]);
  assert.ok(upgrades > 0, "nbagent asked the proxy for the kernel's WebSocket");
  assert.match(
    text,
    /^Error: could not start the Python kernel: the gateway at http:\/\/127\.0\.0\.1:\d+\S* did not open the kernel's WebSocket \(GET \/api\/kernels\/[0-9a-f-]+\/channels\S*\) within 3000 ms/,
    text,
  );
  assert.doesNotMatch(text, new RegExp(server.token), "the token is never in the text");
  const left = await fetch(`${server.url}/api/kernels`, {
    headers: { Authorization: `token ${server.token}` },
  });
  assert.deepEqual(await left.json(), [], "the kernel nbagent asked for was shut down");
});

/**
 * One nbagent-like process for the cross-process tests: says "ready", waits for "go", calls
 * ensureLocalGateway, prints what it got, then on "run" executes code through the gateway.
 * Usage: node --import tsx local-server-worker.ts STATE_ROOT PYTHON
 */
import { createInterface } from "node:readline";
import { ensureLocalGateway, type LocalGatewayInfo } from "../../src/kernel/gateway/local-server.js";
import { createKernel, execute, rest } from "./local-server-client.js";

const [stateRoot, python] = process.argv.slice(2);
let info: LocalGatewayInfo | undefined;
const say = (o: unknown) => process.stdout.write(`${JSON.stringify(o)}\n`);

const lines = createInterface({ input: process.stdin });
say({ ready: process.pid });
for await (const line of lines) {
  try {
    if (line === "go") {
      info = await ensureLocalGateway({ python, stateRoot });
      say({ pid: info.pid, url: info.url, token: info.token });
    } else if (line === "run" && info) {
      const id = await createKernel(info);
      const r = await execute(info, id, "x = 41\nprint(x + 1)");
      await rest(info, "DELETE", `/api/kernels/${id}`);
      say({ text: r.text });
    } else if (line === "exit") break;
  } catch (err) {
    say({ error: (err as Error).message });
  }
}

// freePorts/freePort (src/sys/free-ports.ts): ports the OS picked, distinct, released and bindable.
import assert from "node:assert/strict";
import { createServer } from "node:net";
import { test } from "node:test";
import { freePort, freePorts } from "../../src/sys/free-ports.js";

function bind(port: number): Promise<void> {
  const server = createServer();
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => server.close(() => resolve()));
  });
}

test("freePorts gives distinct ports that are free again once returned", async () => {
  const ports = await freePorts(5, "127.0.0.1");
  assert.equal(ports.length, 5);
  assert.equal(new Set(ports).size, 5);
  for (const port of ports) {
    assert.ok(Number.isInteger(port) && port > 0 && port < 65536, String(port));
    await bind(port);
  }
});

test("freePort gives one free port on 127.0.0.1; a host that cannot be bound rejects", async () => {
  await bind(await freePort());
  await assert.rejects(freePorts(1, "192.0.2.1"));
});

/**
 * How a host's view socket writes (src/view/host.ts, docs/view.md "Cost"): events that come within
 * VIEW_WRITE_MS of the last write go together in the next one — a fast run's hundreds of events a
 * second are not one system call each for the host, nor one read for the viewer — and every event
 * still comes, once, in order. A toolbox of the bus alone (no kernel).
 */
import assert from "node:assert/strict";
import { connect } from "node:net";
import { test } from "node:test";
import type { HostMessage } from "../../src/view/wire.js";
import { busHost } from "./streams.js";

test("events of consecutive turns go to a viewer in a few writes, each once and in order", async (t) => {
  const viewed = await busHost(t);
  if (!viewed) return t.skip("no socket root: hosts have no view socket here");
  const { bus, host } = viewed;
  const socket = connect(host.path);
  t.after(() => socket.destroy());
  socket.setEncoding("utf8");
  const N = 40;
  let buf = "";
  let chunks = 0;
  const got: HostMessage[] = [];
  let wake: (() => void) | undefined;
  socket.on("data", (d: string) => {
    chunks++;
    buf += d;
    const lines = buf.split("\n");
    buf = lines.pop() ?? "";
    for (const l of lines) got.push(JSON.parse(l) as HostMessage);
    wake?.();
  });
  const until = async (n: number) => {
    while (got.length < n) await new Promise<void>((r) => (wake = r));
  };
  await until(1);
  assert.equal(got[0].type, "snapshot");
  chunks = 0;
  // One event per turn of the event loop, as a run's kernel messages come: between two turns the
  // viewer's socket is read, so one write per event would be one read per event.
  for (let i = 0; i < N; i++) {
    bus.emit({ type: "notebook-opened", path: `/n${i}.ipynb` });
    await new Promise((r) => setImmediate(r));
  }
  await until(1 + N);
  assert.deepEqual(
    got
      .slice(1)
      .map((m) => (m.type === "event" && m.event.type === "notebook-opened" ? m.event.path : m.type)),
    Array.from({ length: N }, (_, i) => `/n${i}.ipynb`),
  );
  assert.ok(chunks <= N / 2, `${N} events came in ${chunks} reads`);
});

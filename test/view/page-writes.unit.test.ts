/**
 * How `nbagent view` writes a page's stream (src/view/server.ts, docs/view.md "Cost"): with
 * `?batch=1` the hub's messages that come within BATCH_WRITE_MS of the last write go together in
 * the next one, each once and in order — a fast run's events are a few writes a second for the
 * browser, not one per turn; without it, the stream is not held back. A host of the bus alone (no kernel), a real hub and server.
 */
import assert from "node:assert/strict";
import type { AddressInfo } from "node:net";
import { test } from "node:test";
import { viewSocketDir } from "../../src/view/host.js";
import { ViewHub } from "../../src/view/hub.js";
import { createViewServer } from "../../src/view/server.js";
import { busHost, readEvents } from "./streams.js";

interface Block {
  event: string;
  paths: string[];
}

/** Reads an SSE stream: per event (the state first), its name and the notebook-opened paths it carries. */
async function reader(url: string, token: string, signal: AbortSignal, onBlock: (b: Block) => void) {
  const res = await fetch(url, { headers: { Authorization: `Bearer ${token}` }, signal });
  assert.equal(res.status, 200);
  await readEvents(res, (event, data) => {
    const msgs = (Array.isArray(data) ? data : [data]) as {
      type: string;
      event?: { type: string; path: string };
    }[];
    const paths = msgs.flatMap((m) =>
      m.type === "event" && m.event?.type === "notebook-opened" && m.event.path.startsWith("/pw-")
        ? [m.event.path]
        : [],
    );
    onBlock({ event, paths: event === "state" ? [] : paths });
  });
}

test("a page's batched stream: a fast burst in a few writes, each message once and in order; a lone one at once", async (t) => {
  const viewed = await busHost(t);
  if (!viewed) return t.skip("no socket root: hosts have no view socket here");
  const { bus, host } = viewed;
  const hub = new ViewHub(viewSocketDir()!);
  t.after(() => hub.close());
  const hubHas = new Promise<void>((resolve) =>
    hub.listen((m) => {
      if (m.type === "host-added" && m.host.id === host.info.id) resolve();
    }),
  );
  hub.start();
  await hubHas;
  const server = createViewServer({ hub, token: "t0k" });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  t.after(() => server.close());
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const abort = new AbortController();
  t.after(() => abort.abort());
  // Both streams, the page's and a plain one; a message is counted in the blocks that carry it.
  const batched: Block[] = [];
  const plain: Block[] = [];
  let wake = () => {};
  let states = 0;
  const seen = (list: Block[]) => list.flatMap((b) => b.paths);
  for (const [path, list] of [
    ["/api/events?batch=1", batched],
    ["/api/events", plain],
  ] as const)
    reader(`${base}${path}`, "t0k", abort.signal, (b) => {
      if (b.event === "state") states++;
      else if (b.paths.length) list.push(b);
      wake();
    }).catch(() => {});
  // Both readers connected: the server listens to the hub for a stream once it wrote its state.
  while (states < 2) await new Promise<void>((r) => (wake = r));
  const until = async (n: number) => {
    while (seen(batched).length < n || seen(plain).length < n) await new Promise<void>((r) => (wake = r));
  };
  // A first message, to both.
  bus.emit({ type: "notebook-opened", path: "/pw-first" });
  await until(1);
  // A burst: an event every 2 ms or so, as a run's cells come — the host writes its socket at most
  // every 5 ms, so the plain stream (a write per host write) gets many writes, the page's few.
  const N = 60;
  for (let i = 0; i < N; i++) {
    bus.emit({ type: "notebook-opened", path: `/pw-${i}` });
    await new Promise((r) => setTimeout(r, 2));
  }
  await until(1 + N);
  const expected = ["/pw-first", ...Array.from({ length: N }, (_, i) => `/pw-${i}`)];
  assert.deepEqual(seen(batched), expected, "the page's stream: every message once, in order");
  assert.deepEqual(seen(plain), expected, "the plain stream: the same");
  assert.ok(
    batched.every((b) => b.event === "batch"),
    "the page's stream is batch events",
  );
  assert.ok(
    batched.length * 3 <= plain.length,
    `the burst came to the page in ${batched.length} writes, to a plain reader in ${plain.length}`,
  );
});

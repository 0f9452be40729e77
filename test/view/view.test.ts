/**
 * `nbagent view` end to end (docs/view.md): an agent session through the official MCP SDK client
 * (`nbagent mcp` over stdio, as an MCP client starts it) while `nbagent view --no-open --port 0`
 * runs; everything is asserted over the view's HTTP API with its token, by waiting for the events
 * themselves (no sleeps, no time bounds).
 */
import assert from "node:assert/strict";
import type { ChildProcessWithoutNullStreams } from "node:child_process";
import { existsSync, readdirSync, writeFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { VIEW_NICE } from "../../src/cli/view-command.js";
import { socketRoot } from "../../src/kernel/local/connection-file.js";
import { ownedStdioServer, tempDir, textOf, writeNb } from "../mcp/helpers.js";
import { threadNices } from "../sys/thread-nices.js";
import { startView, type ViewProcess } from "./browser.js";
import { readEvents } from "./streams.js";

const LONG = { timeout: 120_000 };

interface Msg {
  type: string;
  hostId?: string;
  host?: { id: string; pid: number };
  event?: Record<string, unknown> & { type: string; seq: number };
}

let dir: string;
let view: ViewProcess;
let base: string;
let token: string;
let client: Client;
let child: ChildProcessWithoutNullStreams;
let hostId: string;
const messages: Msg[] = [];
const waiters = new Set<() => void>();
let events: AbortController;

/** The first message (from `from` on) that matches, once it has come. */
async function waitFor(pred: (m: Msg) => boolean, from = 0): Promise<Msg> {
  for (;;) {
    const found = messages.slice(from).find(pred);
    if (found) return found;
    await new Promise<void>((resolve) => waiters.add(resolve));
  }
}

/** This host's events of one type, in order. */
const hostEvents = (type: string) =>
  messages
    .filter((m) => m.hostId === hostId && m.type === "event" && m.event?.type === type)
    .map((m) => m.event!);

const auth = () => ({ Authorization: `Bearer ${token}` });

async function state(): Promise<{ hosts: { host: { id: string; pid: number } }[] }> {
  const r = await fetch(`${base}/api/state`, { headers: auth() });
  assert.equal(r.status, 200);
  return (await r.json()) as never;
}

before(async () => {
  dir = await tempDir("nbagent-view-");
  view = await startView();
  ({ base, token } = view);
  // The live stream, read as a page reads it.
  events = new AbortController();
  const res = await fetch(`${base}/api/events`, { headers: auth(), signal: events.signal });
  assert.equal(res.headers.get("content-type"), "text/event-stream; charset=utf-8");
  readEvents(res, (event, value) => {
    if (event === "state")
      for (const h of (value as { hosts: { host: Msg["host"] }[] }).hosts)
        messages.push({ type: "host-added", host: h.host });
    else messages.push(value as Msg);
    for (const w of [...waiters]) {
      waiters.delete(w);
      w();
    }
  }).catch(() => {});
  const owned = await ownedStdioServer(["--cwd", dir]);
  client = owned.client;
  child = owned.child;
  const added = await waitFor((m) => m.type === "host-added" && m.host?.pid === child.pid);
  hostId = added.host!.id;
});

after(async () => {
  events?.abort();
  if (child && child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  await view?.stop();
});

test("the agent's host appears in /api/state with its pid and kind", async () => {
  const s = await state();
  const h = s.hosts.find((x) => x.host.pid === child.pid) as unknown as {
    host: { kind: string; cwd: string };
  };
  assert.ok(h, JSON.stringify(s));
  assert.equal(h.host.kind, "mcp-stdio");
  assert.equal(h.host.cwd, dir);
});

test("a python call's call-started and call-ended carry its parameters and the exact result text", async () => {
  const from = messages.length;
  const result = await client.callTool(
    { name: "python", arguments: { cells: [{ code: "print(6 * 7)" }] } },
    undefined,
    LONG,
  );
  const started = await waitFor((m) => m.hostId === hostId && m.event?.type === "call-started", from);
  assert.equal(started.event!.tool, "python");
  assert.deepEqual(started.event!.params, { cells: [{ code: "print(6 * 7)" }] });
  const ended = await waitFor(
    (m) => m.hostId === hostId && m.event?.type === "call-ended" && m.event.callId === started.event!.callId,
    from,
  );
  const texts = (result.content as { type: string; text?: string }[])
    .filter((c) => c.type === "text")
    .map((c) => c.text);
  assert.deepEqual(ended.event!.texts, texts);
  assert.match(String(texts[0]), /42/);
  assert.equal(ended.event!.images, 0);
  // The session's kernel started and went busy, then idle, before the call ended.
  const changes = hostEvents("session").map((e) => e.change);
  for (const c of ["started", "busy", "idle"]) assert.ok(changes.includes(c), changes.join());
  // And /api/state keeps the call for a viewer that connects later.
  const s = (await state()) as unknown as {
    hosts: { host: { id: string }; calls: { callId: string; ended?: { texts: string[] } }[] }[];
  };
  const call = s.hosts
    .find((h) => h.host.id === hostId)!
    .calls.find((c) => c.callId === started.event!.callId);
  assert.deepEqual(call?.ended?.texts, texts);
});

test("with ?batch=1 the stream carries the same messages, each write one `batch` event: their JSON array", async () => {
  const abort = new AbortController();
  const res = await fetch(`${base}/api/events?batch=1`, { headers: auth(), signal: abort.signal });
  assert.equal(res.status, 200);
  /** Every event of the batched stream after its state: its name and its data, parsed. */
  const blocks: { event: string; data: unknown }[] = [];
  const batched: Msg[] = [];
  let wake = () => {};
  const reading = readEvents(res, (event, data) => {
    if (event === "state") return;
    blocks.push({ event, data });
    // (a message not in a batch is kept too: the assertions below say what form it came in)
    if (Array.isArray(data)) batched.push(...(data as Msg[]));
    else batched.push(data as Msg);
    wake();
  }).catch(() => {});
  // Its headers came: the server listens to the hub for it (src/view/server.ts, in the same turn),
  // so the python call below is in both streams whole.
  const from = messages.length;
  const result = await client.callTool(
    {
      name: "python",
      arguments: { cells: [{ code: 'for i in range(5):\n    print("batched", i, flush=True)' }] },
    },
    undefined,
    LONG,
  );
  assert.match(textOf(result), /batched 4/);
  const started = await waitFor((m) => m.hostId === hostId && m.event?.type === "call-started", from);
  const callId = started.event!.callId;
  const isEnd = (m: Msg) =>
    m.hostId === hostId && m.event?.type === "call-ended" && m.event.callId === callId;
  await waitFor(isEnd, from);
  while (!batched.some(isEnd)) await new Promise<void>((resolve) => (wake = resolve));
  abort.abort();
  await reading;
  /** This host's messages from the call's start to its end, as sent. */
  const span = (list: Msg[]) => {
    const ofHost = list.filter((m) => m.hostId === hostId);
    const a = ofHost.findIndex((m) => m.event?.type === "call-started" && m.event.callId === callId);
    const b = ofHost.findIndex(isEnd);
    assert.ok(a >= 0 && b > a, "the call's start and end are both in the stream");
    return ofHost.slice(a, b + 1).map((m) => JSON.stringify(m));
  };
  assert.deepEqual(span(batched), span(messages.slice(from)));
  assert.ok(blocks.length > 0);
  for (const b of blocks) {
    assert.equal(b.event, "batch", "every event after the state is a batch");
    assert.ok(Array.isArray(b.data) && b.data.length > 0, "a batch is a non-empty list of messages");
  }
  assert.ok(span(batched).filter((m) => m.includes('"cell-output"')).length >= 1);
});

test("a cell's output streams to the view while it runs, before it ends", async () => {
  const from = messages.length;
  const go = join(dir, "go-stream");
  const running = client.callTool(
    {
      name: "python",
      arguments: {
        cells: [
          {
            code: `import os, time\nprint("first line", flush=True)\nwhile not os.path.exists(${JSON.stringify(go)}):\n    time.sleep(0.02)\nprint("second line", flush=True)`,
          },
        ],
      },
    },
    undefined,
    LONG,
  );
  const cell = await waitFor(
    (m) =>
      m.hostId === hostId && m.event?.type === "cell-started" && String(m.event.code).includes("first line"),
    from,
  );
  const cellRun = cell.event!.cellRun;
  const first = await waitFor(
    (m) =>
      m.hostId === hostId &&
      m.event?.type === "cell-output" &&
      m.event.cellRun === cellRun &&
      JSON.stringify(m.event.output).includes("first line"),
    from,
  );
  // The cell still runs: it waits for the file this test writes only now.
  assert.equal(
    messages.some(
      (m) => m.hostId === hostId && m.event?.type === "cell-ended" && m.event.cellRun === cellRun,
    ),
    false,
  );
  writeFileSync(go, "");
  const result = await running;
  assert.match(textOf(result), /first line\nsecond line/);
  const ended = await waitFor(
    (m) => m.hostId === hostId && m.event?.type === "cell-ended" && m.event.cellRun === cellRun,
    from,
  );
  const second = await waitFor(
    (m) =>
      m.hostId === hostId &&
      m.event?.type === "cell-output" &&
      m.event.cellRun === cellRun &&
      JSON.stringify(m.event.output).includes("second line"),
    from,
  );
  assert.ok(cell.event!.seq < first.event!.seq);
  assert.ok(first.event!.seq < second.event!.seq);
  assert.ok(second.event!.seq < ended.event!.seq);
  assert.equal(ended.event!.status, "ok");
});

test("a notebook run tells the view the notebook was saved, with the cells it wrote", async () => {
  const from = messages.length;
  const path = join(dir, "saved.ipynb");
  await writeNb(path, [
    ["markdown", "# t"],
    ["code", "x = 1\nprint(x)"],
  ]);
  const run = await client.callTool(
    { name: "notebook", arguments: { action: "run", notebook_path: "saved.ipynb" } },
    undefined,
    LONG,
  );
  assert.equal(run.isError, undefined, textOf(run));
  const saved = await waitFor((m) => m.hostId === hostId && m.event?.type === "notebook-saved", from);
  assert.equal(saved.event!.path, path);
  const cellIds = saved.event!.cellIds as string[];
  assert.equal(cellIds.length, 1);
  // The id of the code cell, as the file has it.
  const nb = JSON.parse(await import("node:fs/promises").then((f) => f.readFile(path, "utf8")));
  assert.deepEqual(cellIds, [nb.cells[1].id]);
  // Its cell events carry the cell's id.
  const started = await waitFor(
    (m) => m.hostId === hostId && m.event?.type === "cell-started" && m.event.cellId === nb.cells[1].id,
    from,
  );
  assert.ok(started.event!.seq < saved.event!.seq);
});

test("an interrupt POSTed to /api/action stops the running cell and the agent's result says it came from the view", async () => {
  const from = messages.length;
  const running = client.callTool(
    {
      name: "python",
      arguments: { cells: [{ code: 'import time\nprint("waiting", flush=True)\ntime.sleep(600)' }] },
    },
    undefined,
    LONG,
  );
  const cell = await waitFor(
    (m) =>
      m.hostId === hostId && m.event?.type === "cell-started" && String(m.event.code).includes("waiting"),
    from,
  );
  await waitFor(
    (m) =>
      m.hostId === hostId &&
      m.event?.type === "cell-output" &&
      m.event.cellRun === cell.event!.cellRun &&
      JSON.stringify(m.event.output).includes("waiting"),
    from,
  );
  // A second call waits behind it: the interrupt stops the one holding the kernel, not this one.
  const busyAt = messages.length;
  const queued = client.callTool(
    { name: "python", arguments: { cells: [{ code: 'print("after")' }] } },
    undefined,
    LONG,
  );
  await waitFor((m) => m.hostId === hostId && m.event?.type === "call-started", busyAt);
  const r = await fetch(`${base}/api/action`, {
    method: "POST",
    headers: { ...auth(), "Content-Type": "application/json" },
    body: JSON.stringify({ host: hostId, action: "interrupt", key: cell.event!.key }),
  });
  assert.equal(r.status, 200);
  const answer = (await r.json()) as { kind: string; runId?: string };
  assert.equal(answer.kind, "interrupted");
  const result = await running;
  const text = textOf(result);
  assert.match(
    text,
    /Cell 1 was interrupted: the call was cancelled \(interrupted from the view, by a person \(nbagent view\)\); the kernel keeps its state\./,
  );
  assert.match(text, /KeyboardInterrupt/);
  const after = textOf(await queued);
  assert.match(after, /^after$/m);
  assert.doesNotMatch(after, /interrupted/);
});

test("with CPU-bound cells on every core, the view (at a lower priority) still answers and stops a spinning cell", async () => {
  assert.ok([...threadNices(view.process.pid!).values()].every((n) => n >= VIEW_NICE));
  // Two spinning kernels at the agent's priority keep the two cores of CI busy (more would evict
  // this file's other sessions: at most 4 live).
  const spinning = Math.min(availableParallelism(), 2);
  const from = messages.length;
  const calls = Array.from({ length: spinning }, (_, i) =>
    client.callTool(
      {
        name: "python",
        arguments: {
          session: `spin${i}`,
          cells: [{ code: 'print("spinning", flush=True)\nwhile True:\n    pass' }],
        },
      },
      undefined,
      LONG,
    ),
  );
  const keys: unknown[] = [];
  for (let i = 0; i < spinning; i++) {
    const started = await waitFor(
      (m) =>
        m.hostId === hostId &&
        m.event?.type === "cell-started" &&
        (m.event.key as { sessionId?: string }).sessionId === `spin${i}`,
      from,
    );
    await waitFor(
      (m) =>
        m.event?.type === "cell-output" &&
        m.event.cellRun === started.event!.cellRun &&
        JSON.stringify(m.event.output).includes("spinning"),
      from,
    );
    keys.push(started.event!.key);
  }
  // Every spinning cell is stopped from the view, each call's result saying who stopped it.
  for (const [i, key] of keys.entries()) {
    const r = await fetch(`${base}/api/action`, {
      method: "POST",
      headers: { ...auth(), "Content-Type": "application/json" },
      body: JSON.stringify({ host: hostId, action: "interrupt", key }),
    });
    assert.equal(r.status, 200);
    assert.equal(((await r.json()) as { kind: string }).kind, "interrupted");
    const text = textOf(await calls[i]);
    assert.match(text, /interrupted from the view, by a person \(nbagent view\)/);
    assert.match(text, /KeyboardInterrupt/);
  }
});

test("a restart POSTed to /api/action restarts the kernel and the agent's next result says a person did it", async () => {
  const set = await client.callTool(
    { name: "python", arguments: { cells: [{ code: "kept = 1" }] } },
    undefined,
    LONG,
  );
  assert.equal(set.isError, undefined, textOf(set));
  const key = { kind: "python", sessionId: "default", cwd: dir };
  const r = await fetch(`${base}/api/action`, {
    method: "POST",
    headers: { ...auth(), "Content-Type": "application/json" },
    body: JSON.stringify({ host: hostId, action: "restart", key }),
  });
  assert.deepEqual(await r.json(), { kind: "restarted" });
  const next = textOf(
    await client.callTool(
      { name: "python", arguments: { cells: [{ code: "print('kept' in dir())" }] } },
      undefined,
      LONG,
    ),
  );
  assert.match(
    next,
    /^Note: .* was restarted at \d\d:\d\d:\d\d from the view, by a person \(nbagent view\), so its state is lost\. This call runs in the new kernel/,
  );
  assert.match(next, /^False$/m);
});

test("requests without the token, with a foreign Host or a foreign Origin are refused, saying why", async () => {
  const none = await fetch(`${base}/api/state`);
  assert.equal(none.status, 401);
  assert.match(await none.text(), /^Unauthorized: no token\. Open the URL `nbagent view` printed/);
  const wrong = await fetch(`${base}/api/state`, { headers: { Authorization: "Bearer nope" } });
  assert.equal(wrong.status, 401);
  const host = await new Promise<{ status: number; body: string }>((resolve, reject) => {
    // fetch() will not send a Host header of our choosing: a raw request does.
    import("node:http").then(({ request }) => {
      const u = new URL(base);
      const req = request(
        {
          host: u.hostname,
          port: u.port,
          path: "/api/state",
          headers: { ...auth(), Host: "evil.example:80" },
        },
        (res) => {
          let body = "";
          res.on("data", (d) => {
            body += d;
          });
          res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
        },
      );
      req.on("error", reject);
      req.end();
    });
  });
  assert.equal(host.status, 403);
  assert.match(host.body, /^Forbidden: Host evil\.example:80 is not allowed \(DNS-rebinding protection/);
  const origin = await fetch(`${base}/api/action`, {
    method: "POST",
    headers: { ...auth(), "Content-Type": "application/json", Origin: "http://127.0.0.1:1" },
    body: JSON.stringify({ host: hostId, action: "interrupt", runId: "r1" }),
  });
  assert.equal(origin.status, 403);
  assert.match(await origin.text(), /^Forbidden: Origin http:\/\/127\.0\.0\.1:1 is not allowed/);
  // An action with the cookie alone is refused: the page's content (an image, a link) carries it too.
  const login0 = await fetch(`${base}/?token=${token}`, { redirect: "manual" });
  const cookie0 = (login0.headers.get("set-cookie") ?? "").split(";")[0];
  const cookieOnly = await fetch(`${base}/api/action`, {
    method: "POST",
    headers: { cookie: cookie0, "Content-Type": "application/json" },
    body: JSON.stringify({ host: hostId, action: "interrupt", runId: "r1" }),
  });
  assert.equal(cookieOnly.status, 401);
  assert.match(await cookieOnly.text(), /^Unauthorized: an action needs the token in a header/);
  const nullOrigin = await fetch(`${base}/api/state`, { headers: { ...auth(), Origin: "null" } });
  assert.equal(nullOrigin.status, 403);
  // What the sandboxed output frame loads itself (it sends Origin: null and no cookie): its script
  // and style, files of the package, and nothing else.
  for (const f of ["frame.js", "frame.css"])
    assert.equal((await fetch(`${base}/${f}`, { headers: { Origin: "null" } })).status, 200, f);
  for (const f of ["frame.html", "", "page.js", "api/state"])
    assert.equal((await fetch(`${base}/${f}`, { headers: { Origin: "null" } })).status, 403, f);
  assert.equal((await fetch(`${base}/page.js`)).status, 401);
  // The token in the URL becomes a cookie: HttpOnly, SameSite=Strict.
  const login = await fetch(`${base}/?token=${token}`, { redirect: "manual" });
  assert.equal(login.status, 302);
  assert.equal(login.headers.get("location"), "/");
  assert.match(login.headers.get("set-cookie") ?? "", /HttpOnly; SameSite=Strict/);
  assert.match(login.headers.get("content-security-policy") ?? "", /default-src 'none'; script-src 'self'/);
  const cookie = (login.headers.get("set-cookie") ?? "").split(";")[0];
  const page = await fetch(`${base}/`, { headers: { cookie } });
  assert.equal(page.status, 200);
  // The page reads the token for its actions with its cookie.
  const t = await fetch(`${base}/api/token`, { headers: { cookie } });
  assert.deepEqual(await t.json(), { token });
});

test("a kernel cannot reach the hosts' sockets: it does not see the socket root", async () => {
  const root = socketRoot()!;
  const sock = readdirSync(join(root, "view")).find((n) => n.startsWith(`host-${hostId}`));
  assert.ok(sock);
  const path = join(root, "view", sock);
  const result = await client.callTool(
    {
      name: "python",
      arguments: {
        cells: [
          {
            code: `import socket\ns = socket.socket(socket.AF_UNIX)\ntry:\n    s.connect(${JSON.stringify(path)})\n    print("connected")\nexcept OSError as e:\n    print("refused:", type(e).__name__)`,
          },
        ],
      },
    },
    undefined,
    LONG,
  );
  assert.match(textOf(result), /refused: (FileNotFoundError|PermissionError|ConnectionRefusedError)/);
  assert.doesNotMatch(textOf(result), /connected/);
});

test("a SIGKILLed host disappears from /api/state and its dead socket is removed", async () => {
  const root = socketRoot()!;
  const sock = join(root, "view", `host-${hostId}.sock`);
  assert.ok(existsSync(sock));
  const from = messages.length;
  child.kill("SIGKILL");
  await waitFor((m) => m.type === "host-removed" && m.hostId === hostId, from);
  const s = await state();
  assert.equal(
    s.hosts.some((h) => h.host.id === hostId),
    false,
  );
  // The view found the socket refused and removed it (it tries once the host's connection closed).
  while (existsSync(sock)) await new Promise((resolve) => setImmediate(resolve));
});

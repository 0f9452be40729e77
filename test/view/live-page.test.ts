/**
 * The `nbagent view` page on the real server (docs/view.md "The page"), in real headless Chromium
 * (Debian's /usr/bin/chromium through playwright-core; no browser is downloaded): `nbagent view
 * --no-open` as a person starts it, an agent session through the official MCP SDK client on
 * `nbagent mcp` over stdio, and the page showing that host, its sessions and the exact texts its
 * calls returned, and acting on it (interrupt, restart, export) with the agent seeing the result.
 * Every wait is for the page or the agent to show something (no sleeps, no time bounds of ours);
 * everything is found by this test's own host (its pid, its id), since every nbagent process of the
 * user on this machine is in the view. Also: `nbagent mcp --http` serving the same page at /view.
 *
 * UPDATE_SCREENSHOTS=1 also writes docs/screenshots/view-session.png (a cell running, its call in
 * the timeline) and view-timeline.png (calls with their results).
 */
import assert from "node:assert/strict";
import { type ChildProcessWithoutNullStreams, execFile, spawn } from "node:child_process";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { promisify } from "node:util";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { FRAME_CSP, PAGE_CSP } from "../../src/view/csp.js";
import type { HubMessage as ServerHubMessage } from "../../src/view/hub.js";
import type { HubMessage as PageHubMessage } from "../../src/view/page/api.js";
import { FROM_SOURCE, ownedStdioServer, tempDir, textOf } from "../mcp/helpers.js";
import { launchChromium, SKIP_BROWSER, startView, type ViewProcess } from "./browser.js";

// The page's copy of the API's shapes (src/view/page/api.ts) must take what the server sends.
const fits = (m: ServerHubMessage): PageHubMessage => m;
void fits;

const exec = promisify(execFile);
const ROOT = new URL("../..", import.meta.url).pathname;
const SKIP = SKIP_BROWSER;
const LONG = { timeout: 120_000 };
const SHOTS = process.env.UPDATE_SCREENSHOTS === "1";

let browser: Browser;
let context: BrowserContext;
let page: Page;
let view: ViewProcess;
let base = "";
let token = "";
let dir = "";
let client: Client;
let child: ChildProcessWithoutNullStreams;
let hostId = "";
/** Every POST to api/action the page made: its headers and body. */
const posts: { authorization?: string; cookie?: string; body: unknown }[] = [];

/** This test's host in the sidebar (by its id once known, by its pid before). */
const host = () =>
  page.locator(hostId ? `.nb-host[data-host-id="${hostId}"]` : ".nb-host", {
    hasText: `pid ${child.pid}`,
  });
const pythonSession = () => host().locator(".nb-session", { hasText: "python session default" });

async function call(code: string) {
  return client.callTool({ name: "python", arguments: { cells: [{ code }] } }, undefined, LONG);
}

/** Waits until the page has said the answer to its `n`th action, and returns it. */
async function answer(n: number): Promise<string> {
  await page.waitForFunction((n) => document.getElementById("nb-answer")?.dataset.actions === String(n), n);
  return (await page.locator("#nb-answer").textContent()) ?? "";
}

const actionsTaken = () =>
  page.evaluate(() => Number(document.getElementById("nb-answer")?.dataset.actions ?? 0));

before(async () => {
  if (SKIP) return;
  await exec(process.execPath, ["scripts/bundle.mjs", "view"], { cwd: ROOT });
  dir = await tempDir("nbagent-live-page-");
  view = await startView();
  ({ base, token } = view);
  const owned = await ownedStdioServer(["--cwd", dir]);
  client = owned.client;
  child = owned.child;
  browser = await launchChromium();
  context = await browser.newContext({ viewport: { width: 1200, height: 900 }, acceptDownloads: true });
  page = await context.newPage();
  page.on("request", (r) => {
    if (r.method() === "POST" && new URL(r.url()).pathname.endsWith("/api/action"))
      posts.push({
        authorization: r.headers().authorization,
        cookie: r.headers().cookie,
        body: JSON.parse(r.postData() ?? "null"),
      });
  });
  // The URL `nbagent view` printed: the token becomes a cookie and leaves the address bar.
  await page.goto(`${base}/?token=${token}`);
  assert.equal(page.url(), `${base}/`);
});

after(async () => {
  await context?.close().catch(() => {});
  await browser?.close();
  if (child && child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  await view?.stop();
});

describe("the view page on nbagent view", { skip: SKIP }, () => {
  test("the agent's host appears with its kind, folder and pid, and its python session once it has a kernel", async () => {
    await host().waitFor();
    hostId = (await host().getAttribute("data-host-id")) ?? "";
    assert.match(hostId, new RegExp(`^${child.pid}-`));
    assert.equal(await host().locator(".nb-host-title").textContent(), `mcp-stdio · pid ${child.pid}`);
    assert.match(
      (await host().locator(".nb-host-meta").first().textContent()) ?? "",
      new RegExp(`^${dir} · since \\d\\d:\\d\\d:\\d\\d$`),
    );
    const text = (await host().textContent()) ?? "";
    assert.match(text, /no kernel yet/);
    const r = await call("x = 6 * 7");
    assert.equal(r.isError, undefined, textOf(r));
    await pythonSession().waitFor();
    // Idle once the call ended; its kernel's memory is shown when the host measured it.
    await page.waitForFunction(
      (id) =>
        document.querySelector(`.nb-host[data-host-id="${id}"] .nb-session .nb-badge`)?.textContent ===
        "idle",
      hostId,
    );
    assert.equal(await pythonSession().locator(".nb-act-interrupt").isDisabled(), true);
    assert.equal(await pythonSession().locator(".nb-act-restart").isDisabled(), false);
    assert.equal(await pythonSession().locator(".nb-act-export").count(), 1);
  });

  test("a call's exact result texts appear in the timeline, verbatim, with its parameters and the cell it ran", async () => {
    await host().locator(".nb-host-title").click();
    await page.waitForFunction((id) => document.getElementById("nb-timeline")?.dataset.hostId === id, hostId);
    // Text that markdown or HTML would change: it must reach the person as the model read it.
    const code = 'print("  *not emphasis*  <b>not bold</b>\\n\\tindented")\nprint(x)';
    const r = await call(code);
    const texts = (r.content as { type: string; text?: string }[])
      .filter((c) => c.type === "text")
      .map((c) => c.text ?? "");
    assert.match(texts[0], /\*not emphasis\*/);
    const item = page.locator(".nb-call", {
      has: page.locator(".nb-tl-code", { hasText: "not emphasis" }),
    });
    await item.locator(".nb-result-text").first().waitFor();
    const shown = await item.locator(".nb-result-text").evaluateAll((els) => els.map((e) => e.textContent));
    assert.deepEqual(shown, texts);
    assert.equal(await item.locator(".nb-result-text b").count(), 0);
    assert.equal(await item.locator(".nb-call-tool").textContent(), "python");
    assert.equal(
      await item.locator(".nb-call-params pre").textContent(),
      JSON.stringify({ cells: [{ code }] }, null, 2),
    );
    assert.equal(await item.locator(".nb-tl-code").textContent(), code);
    assert.match((await item.locator(".nb-tl-state").textContent()) ?? "", /^ok · \d/);
    assert.match((await item.locator(".nb-call-state").textContent()) ?? "", /^\d+(\.\d)? s$/);
  });

  test("a long result is folded but whole, and opens on demand", async () => {
    const r = await call('for i in range(300):\n    print(f"line {i}")');
    const text = textOf(r);
    const item = page.locator(".nb-call", { has: page.locator(".nb-tl-code", { hasText: "range(300)" }) });
    const pre = item.locator(".nb-result-text").first();
    await pre.waitFor();
    assert.equal(await pre.textContent(), text);
    const folded = await pre.evaluate((e) => e.scrollHeight > e.clientHeight + 10);
    assert.ok(folded, "the long text is folded");
    const unfold = item.locator(".nb-unfold");
    assert.match((await unfold.textContent()) ?? "", /^show all \d+ lines \([\d,]+ characters\)$/);
    await unfold.click();
    assert.equal(await pre.evaluate((e) => e.scrollHeight <= e.clientHeight + 1), true);
    assert.equal(await unfold.textContent(), "fold");
  });

  test("a call of many cells shows its latest 20 in the timeline, and all of them, in order, on demand", async () => {
    const cells = Array.from({ length: 25 }, (_, i) => ({ code: `print("many ${i}")` }));
    await client.callTool({ name: "python", arguments: { cells } }, undefined, LONG);
    const item = page.locator(".nb-call", { has: page.locator(".nb-tl-code", { hasText: "many 24" }) });
    await item.locator(".nb-call-result").waitFor();
    const codes = () => item.locator(".nb-tl-code").evaluateAll((els) => els.map((e) => e.textContent));
    assert.deepEqual(
      await codes(),
      cells.slice(5).map((c) => c.code),
    );
    const more = item.locator(".nb-tl-more");
    assert.equal(await more.textContent(), "5 earlier cells not shown · show all 25 cells");
    await more.locator("button").click();
    assert.deepEqual(
      await codes(),
      cells.map((c) => c.code),
    );
    assert.equal(await item.locator(".nb-tl-more").textContent(), "all 25 cells · fold");
    await item.locator(".nb-tl-more button").click();
    assert.equal((await codes()).length, 20);
  });

  test("a running cell shows as running on its session and in the timeline; Interrupt stops it and the agent's result says it came from the view", async () => {
    const go = join(dir, "never");
    const running = client.callTool(
      {
        name: "python",
        arguments: {
          cells: [
            {
              code: `import os, time\nprint("waiting for a person", flush=True)\nwhile not os.path.exists(${JSON.stringify(go)}):\n    time.sleep(0.05)`,
            },
          ],
        },
      },
      undefined,
      LONG,
    );
    const run = pythonSession().locator(".nb-running");
    await run.waitFor();
    assert.match((await run.textContent()) ?? "", /^running import os, time for \d+\.\d s$/);
    assert.equal(await pythonSession().locator(".nb-badge").textContent(), "busy");
    const item = page.locator(".nb-call.nb-call-open", {
      has: page.locator(".nb-tl-code", { hasText: "waiting for a person" }),
    });
    await item.locator(".nb-tl-tail", { hasText: "waiting for a person" }).waitFor();
    assert.match((await item.locator(".nb-call-state").textContent()) ?? "", /^running · \d+\.\d s$/);
    // Export waits for the cell to end.
    assert.equal(await pythonSession().locator(".nb-act-export").isDisabled(), true);
    if (SHOTS) {
      // (the test's own clicks above scrolled the timeline away from its end)
      await item.scrollIntoViewIfNeeded();
      await page.screenshot({ path: join(ROOT, "docs/screenshots/view-session.png") });
    }
    const n = await actionsTaken();
    const before = posts.length;
    await pythonSession().locator(".nb-act-interrupt").click();
    const said = await answer(n + 1);
    assert.match(
      said,
      new RegExp(
        `^Interrupt python session default \\(mcp-stdio · pid ${child.pid}\\): interrupted run r\\d+: the call's result says it was interrupted from the view\\.$`,
      ),
    );
    // The page sent the token in the header (the server refuses the cookie alone).
    assert.equal(posts.length, before + 1);
    assert.equal(posts[before].authorization, `Bearer ${token}`);
    assert.deepEqual(posts[before].body, {
      host: hostId,
      action: "interrupt",
      key: { kind: "python", sessionId: "default", cwd: dir },
    });
    const result = await running;
    assert.match(textOf(result), /interrupted from the view, by a person \(nbagent view\)/);
    // And the person sees those very texts in the timeline.
    const ended = page.locator(".nb-call", {
      has: page.locator(".nb-result-text", { hasText: "interrupted from the view" }),
    });
    await ended.waitFor();
    assert.deepEqual(
      await ended.locator(".nb-result-text").evaluateAll((els) => els.map((e) => e.textContent)),
      (result.content as { type: string; text?: string }[])
        .filter((c) => c.type === "text")
        .map((c) => c.text),
    );
    assert.match((await ended.locator(".nb-tl-state").textContent()) ?? "", /^(aborted|error) · /);
    await pythonSession().locator(".nb-running").waitFor({ state: "detached" });
  });

  test("Interrupt on an idle session is not offered; an action with the page's cookie alone is refused", async () => {
    assert.equal(await pythonSession().locator(".nb-act-interrupt").isDisabled(), true);
    const refused = await page.evaluate(
      async (body) => {
        const r = await fetch("api/action", {
          method: "POST",
          headers: { "Content-Type": "application/json" },
          body,
        });
        return { status: r.status, text: await r.text() };
      },
      JSON.stringify({
        host: hostId,
        action: "interrupt",
        key: { kind: "python", sessionId: "default", cwd: dir },
      }),
    );
    assert.equal(refused.status, 401);
    assert.match(refused.text, /^Unauthorized: an action needs the token in a header/);
    // The page's output frames load frame.html, served with the frame's own policy (sandboxed).
    const frame = await fetch(`${base}/frame.html`, { headers: { Authorization: `Bearer ${token}` } });
    assert.equal(frame.status, 200);
    assert.equal(frame.headers.get("content-security-policy"), FRAME_CSP);
    const index = await fetch(`${base}/`, { headers: { Authorization: `Bearer ${token}` } });
    assert.equal(index.headers.get("content-security-policy"), PAGE_CSP);
  });

  test("Restart asks first; confirmed, the kernel restarts and the agent's next result says a person did it", async () => {
    await call("kept = 1");
    const n = await actionsTaken();
    const before = posts.length;
    // Declined: nothing is sent.
    page.once("dialog", (d) => {
      assert.match(
        d.message(),
        /^Restart the kernel of python session default\? Its state \(variables, imports\) is lost\.$/,
      );
      void d.dismiss();
    });
    await pythonSession().locator(".nb-act-restart").click();
    assert.equal(posts.length, before);
    assert.equal(await actionsTaken(), n);
    page.once("dialog", (d) => void d.accept());
    await pythonSession().locator(".nb-act-restart").click();
    assert.equal(
      await answer(n + 1),
      `Restart python session default (mcp-stdio · pid ${child.pid}): restarted: its state is lost; the agent's next result on it says a person restarted it.`,
    );
    assert.equal(posts[before].authorization, `Bearer ${token}`);
    const next = textOf(await call("print('kept' in dir())"));
    assert.match(
      next,
      /^Note: .* was restarted at \d\d:\d\d:\d\d from the view, by a person \(nbagent view\), so its state is lost\./,
    );
    assert.match(next, /^False$/m);
  });

  test("Export as notebook asks the host for the session's notebook and says its answer (a download when it sends one)", async () => {
    await call("y = 2\nprint(y)");
    const n = await actionsTaken();
    const before = posts.length;
    const response = page.waitForResponse((r) => r.url().endsWith("/api/action"));
    const download = page.waitForEvent("download").catch(() => undefined);
    await pythonSession().locator(".nb-act-export").click();
    const got = (await (await response).json()) as {
      kind: string;
      notebook?: { cells: { source: unknown }[] };
    };
    assert.equal(posts[before].authorization, `Bearer ${token}`);
    assert.deepEqual(posts[before].body, {
      host: hostId,
      action: "export",
      key: { kind: "python", sessionId: "default", cwd: dir },
    });
    const said = await answer(n + 1);
    if (got.kind === "exported") {
      // The host side of export is there: the page saved what it sent.
      const d = await download;
      assert.ok(d);
      assert.equal(d.suggestedFilename(), "default.ipynb");
      const saved = JSON.parse(await readFile((await d.path()) ?? "", "utf8"));
      assert.deepEqual(saved, got.notebook);
      assert.match(said, /: exported: downloaded default\.ipynb\.$/);
    } else {
      // Not yet (the host side comes with the notebook feed): the page says what the host answered.
      assert.match(said, /^Export python session default \(mcp-stdio · pid \d+\): (not done|nothing|failed)/);
    }
  });

  test("a call gone to the background is listed as a run; its Interrupt stops it and the runs tool's result says so", async () => {
    const go = join(dir, "never-bg");
    const r = await client.callTool(
      {
        name: "python",
        arguments: {
          cells: [
            {
              code: `import os, time\nprint("in the background", flush=True)\nwhile not os.path.exists(${JSON.stringify(go)}):\n    time.sleep(0.05)`,
            },
          ],
          // the cell waits for a file nobody writes: it is still running after this wait, whatever the machine
          wait: 0.5,
        },
      },
      undefined,
      LONG,
    );
    const runId = /"run_id":"(r\d+)"/.exec(textOf(r))?.[1];
    assert.ok(runId, textOf(r));
    const row = host().locator(`.nb-run[data-run-id="${runId}"]`);
    await row.waitFor();
    assert.match((await row.textContent()) ?? "", new RegExp(`^run ${runId} · python call · \\d`));
    const n = await actionsTaken();
    const before = posts.length;
    await row.locator(".nb-act-interrupt").click();
    assert.equal(
      await answer(n + 1),
      `Interrupt run ${runId} (mcp-stdio · pid ${child.pid}): interrupted run ${runId}: the call's result says it was interrupted from the view.`,
    );
    assert.deepEqual(posts[before].body, { host: hostId, action: "interrupt", runId });
    assert.equal(posts[before].authorization, `Bearer ${token}`);
    const result = textOf(
      await client.callTool({ name: "runs", arguments: { run_id: runId } }, undefined, LONG),
    );
    assert.match(result, /interrupted from the view, by a person \(nbagent view\)/);
    await row.waitFor({ state: "detached" });
  });

  test("a page opened later (or reconnected) starts from the state: the host and its calls' texts are there", async () => {
    const r = await call('print("before the reload")');
    const text = textOf(r);
    await page.reload();
    await page.waitForFunction(() => document.body.dataset.states === "1");
    await host().waitFor();
    await host().locator(".nb-host-title").click();
    const item = page.locator(".nb-call", {
      has: page.locator(".nb-result-text", { hasText: "before the reload" }),
    });
    assert.equal(await item.locator(".nb-result-text").first().textContent(), text);
    if (SHOTS) await page.screenshot({ path: join(ROOT, "docs/screenshots/view-timeline.png") });
  });

  test("nbagent mcp --http serves the same view at /view, behind its own token", async () => {
    const [cmd, ...pre] = FROM_SOURCE;
    const http = spawn(cmd, [...pre, "mcp", "--http", "--port", "0", "--cwd", dir], { stdio: "pipe" });
    http.stdout.resume();
    try {
      let err = "";
      const lines = await new Promise<{ view: string; mcpToken: string }>((resolve, reject) => {
        http.stderr.on("data", (d: Buffer) => {
          err += d.toString("utf8");
          const v = /view: (http:\/\/127\.0\.0\.1:\d+\/view\/\?token=[0-9a-f]+) /.exec(err);
          const t = /token: (\S+) /.exec(err);
          if (v && t) resolve({ view: v[1], mcpToken: t[1] });
        });
        http.once("exit", (code) => reject(new Error(`nbagent mcp --http exited (${code}): ${err}`)));
      });
      const url = new URL(lines.view);
      const viewToken = url.searchParams.get("token") ?? "";
      assert.notEqual(viewToken, lines.mcpToken);
      const origin = url.origin;
      // The MCP token does not open the view, nor the view's token the MCP endpoint.
      const withMcp = await fetch(`${origin}/view/api/state`, {
        headers: { Authorization: `Bearer ${lines.mcpToken}` },
      });
      assert.equal(withMcp.status, 401);
      assert.match(
        await withMcp.text(),
        /^Unauthorized: no token\. Open the view's URL `nbagent mcp --http` logged at start/,
      );
      const mcpWithView = await fetch(`${origin}/mcp`, {
        method: "POST",
        headers: { Authorization: `Bearer ${viewToken}`, "Content-Type": "application/json" },
        body: "{}",
      });
      assert.equal(mcpWithView.status, 401);
      // Same checks as nbagent view's: a foreign Origin is refused.
      const foreign = await fetch(`${origin}/view/api/state`, {
        headers: { Authorization: `Bearer ${viewToken}`, Origin: "http://127.0.0.1:1" },
      });
      assert.equal(foreign.status, 403);
      // The page, on a context of its own: the token becomes a cookie for /view only.
      const ctx = await browser.newContext({ viewport: { width: 1200, height: 900 } });
      try {
        const p = await ctx.newPage();
        const login = await fetch(lines.view, { redirect: "manual" });
        assert.equal(login.headers.get("location"), "/view/");
        assert.match(login.headers.get("set-cookie") ?? "", /; HttpOnly; SameSite=Strict; Path=\/view$/);
        await p.goto(lines.view);
        assert.equal(p.url(), `${origin}/view/`);
        await p.waitForFunction(() => document.body.dataset.states === "1");
        // Every host of the user is there, this test's own among them.
        await p.locator(`.nb-host[data-host-id="${hostId}"]`).waitFor();
        // frame.html on its own path, with the frame's policy.
        const frame = await fetch(`${origin}/view/frame.html`, {
          headers: { Authorization: `Bearer ${viewToken}` },
        });
        assert.match(frame.headers.get("content-security-policy") ?? "", /^sandbox allow-scripts; /);
      } finally {
        await ctx.close();
      }
    } finally {
      const exited = new Promise((resolve) => http.once("exit", resolve));
      http.kill("SIGTERM");
      await exited;
    }
  });

  test("a host that ends disappears from the page", async () => {
    await host().waitFor();
    child.kill("SIGTERM");
    await host().waitFor({ state: "detached" });
    assert.equal(await page.locator(`.nb-host[data-host-id="${hostId}"]`).count(), 0);
  });
});

/**
 * An agent's notebooks in the live `nbagent view` page (docs/view.md "Notebooks in the view", issue
 * 31's "Must show"), in real headless Chromium (Debian's /usr/bin/chromium through playwright-core;
 * no browser is downloaded): `nbagent view --no-open` as a person starts it, and an agent session
 * through the official MCP SDK client (its StdioClientTransport starting `nbagent mcp`, as Claude
 * Code does). What the agent does to notebooks — inserts a cell, runs a notebook whose cell prints
 * while it waits, draws a plot and a formula, works in a python session — and what another program
 * writes to the file, appear in the page; the page's Interrupt stops a notebook run and the agent's
 * result says so; hostile outputs a real kernel produced run nothing in the page and reach nothing
 * of its API.
 *
 * Every wait is for the page or the agent to show something (a running cell waits for a file this
 * test creates once the page has shown its line): no sleeps, no time bounds of ours. Everything is
 * found by this test's own host and files (every nbagent process of the user is in the view), and
 * the only actions posted are to this test's own host.
 *
 * UPDATE_SCREENSHOTS=1 also writes docs/screenshots/view-agent-notebook.png (a notebook the agent
 * ran: a plot, LaTeX, and a cell still printing).
 */
import assert from "node:assert/strict";
import { execFile, execFileSync } from "node:child_process";
import { realpathSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { promisify } from "node:util";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { Browser, BrowserContext, Page, Request } from "playwright-core";
import { stdioServer, tempDir, textOf, writeNb } from "../mcp/helpers.js";
import { TEST_PYTHON } from "../python.js";
import { launchChromium, SKIP_BROWSER, startView, type ViewProcess } from "./browser.js";

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
let transport: StdioClientTransport;
let pid = 0;
let hostId = "";
/** Every request a frame of the page (not the page itself) made to the API. */
const fromFrames: Request[] = [];

/** This test's host in the sidebar. */
const host = () => page.locator(`.nb-host[data-host-id="${hostId}"]`);

/** A CSS attribute selector's quoted value (paths of session notebooks hold quotes). */
const quoted = (s: string) => JSON.stringify(s);

/** The notebook list's button for `path`. */
const listed = (path: string) => page.locator(`#nb-list button[data-path=${quoted(path)}]`);

/** Chooses the notebook `path` in the list and waits until the middle shows it. */
async function showNotebook(path: string): Promise<void> {
  await listed(path).click();
  await page.locator(`#nb-main > .nb-scroller[data-path=${quoted(path)}]`).waitFor();
}

/** A cell of the notebook shown. */
const cell = (id: string) => page.locator(`#nb-main .nb-cell[data-id=${quoted(id)}]`);
const prompt = (id: string) => cell(id).locator(":scope > .nb-input > .nb-prompt");

const call = (name: string, args: Record<string, unknown>) =>
  client.callTool({ name, arguments: args }, undefined, LONG);

/** Waits until the page has said the answer to its `n`th action, and returns it. */
async function answer(n: number): Promise<string> {
  await page.waitForFunction((n) => document.getElementById("nb-answer")?.dataset.actions === String(n), n);
  return (await page.locator("#nb-answer").textContent()) ?? "";
}

const actionsTaken = () =>
  page.evaluate(() => Number(document.getElementById("nb-answer")?.dataset.actions ?? 0));

/**
 * Python that waits for the file `name` to appear in the notebook's folder (the kernel's working
 * directory): the test creates it when it has seen what it waits for.
 */
const waitForFile = (name: string) => `while not os.path.exists(${JSON.stringify(name)}): time.sleep(0.02)`;

before(async () => {
  if (SKIP) return;
  await exec(process.execPath, ["scripts/bundle.mjs", "view"], { cwd: ROOT });
  // real paths: the view names a notebook file by its real path
  dir = realpathSync(await tempDir("nbagent-agent-notebook-"));
  view = await startView();
  ({ base, token } = view);
  const server = await stdioServer(["--cwd", dir]);
  client = server.client;
  transport = server.transport;
  pid = transport.pid ?? 0;
  assert.ok(pid > 0, "the SDK's transport started the server");
  browser = await launchChromium();
  context = await browser.newContext({ viewport: { width: 1200, height: 900 } });
  page = await context.newPage();
  page.on("request", (r) => {
    if (r.frame() !== page.mainFrame() && new URL(r.url()).pathname.includes("/api/")) fromFrames.push(r);
  });
  await page.goto(`${base}/?token=${token}`);
  assert.equal(page.url(), `${base}/`);
  const section = page.locator(".nb-host", { hasText: `mcp-stdio · pid ${pid}` });
  await section.waitFor();
  hostId = (await section.getAttribute("data-host-id")) ?? "";
  assert.match(hostId, new RegExp(`^${pid}-`));
});

after(async () => {
  await context?.close().catch(() => {});
  await browser?.close();
  await client?.close().catch(() => {});
  await view?.stop();
});

const ANALYSIS = "analysis.ipynb";
const PLOT =
  "import matplotlib\nmatplotlib.use('module://matplotlib_inline.backend_inline')\n" +
  "import matplotlib.pyplot as plt\n" +
  "xs = [x / 10 for x in range(-20, 21)]\n" +
  "plt.figure(figsize=(4, 2.2))\nplt.plot(xs, [x * x for x in xs])\nplt.title('y = x²')\nplt.show()";
const FORMULA =
  "from IPython.display import Latex, Math, display\n" +
  "display(Math(r'\\int_0^2 x^2\\,dx = \\frac{8}{3}'))\n" +
  "display(Latex(r'$\\sum_{k=1}^{n} k = \\frac{n(n+1)}{2}$'))";

describe("an agent's notebooks in the nbagent view page", { skip: SKIP }, () => {
  let analysis = "";
  let streamId = "";

  test("a notebook the agent reads is listed; the cell it inserts appears in the page", async () => {
    analysis = join(dir, ANALYSIS);
    await writeNb(analysis, [
      ["markdown", "# The square\nIts curve, and the area under it: $\\int_0^2 x^2\\,dx$."],
      ["code", PLOT],
      ["code", FORMULA],
    ]);
    await call("notebook", { action: "read", notebook_path: ANALYSIS });
    await listed(analysis).waitFor();
    assert.equal(await listed(analysis).textContent(), ANALYSIS);
    await showNotebook(analysis);
    assert.deepEqual(
      await page
        .locator("#nb-main .nb-cell")
        .evaluateAll((els) => els.map((e) => (e as HTMLElement).dataset.id)),
      ["c0", "c1", "c2"],
    );
    const code = `import os, time\nprint("step 1 of 2", flush=True)\n${waitForFile("go-1")}\nprint("step 2 of 2", flush=True)\n${waitForFile("go-2")}\nprint("done")`;
    const inserted = await call("notebook", {
      action: "insert",
      notebook_path: ANALYSIS,
      cell_index: 3,
      content: code,
    });
    streamId = /\(id ([^)]+)\)/.exec(textOf(inserted))?.[1] ?? "";
    assert.ok(streamId, textOf(inserted));
    await cell(streamId).waitFor();
    assert.equal(await cell(streamId).locator(".nb-source").textContent(), code);
    assert.equal(await prompt(streamId).textContent(), "[ ]:");
    assert.deepEqual(
      await page
        .locator("#nb-main .nb-cell")
        .evaluateAll((els) => els.map((e) => (e as HTMLElement).dataset.id)),
      ["c0", "c1", "c2", streamId],
    );
  });

  test("a notebook run: its plot and LaTeX render, and a cell's lines appear while it runs, marked [*]", async () => {
    let ended = false;
    const running = call("notebook", { action: "run", notebook_path: ANALYSIS }).finally(() => {
      ended = true;
    });
    // The first line, while the cell waits for go-1 (which only this test creates, below).
    const stream = cell(streamId).locator(".nb-stream-stdout");
    await stream.filter({ hasText: "step 1 of 2" }).waitFor();
    assert.equal(ended, false);
    assert.equal(await prompt(streamId).textContent(), "[*]:");
    assert.equal(await cell(streamId).evaluate((e) => e.classList.contains("nb-cell-running")), true);
    // The plot: an <img> of a PNG data: URL; the formulas: KaTeX's markup.
    const img = cell("c1").locator("img.nb-image");
    await img.waitFor();
    assert.match((await img.getAttribute("src")) ?? "", /^data:image\/png;base64,iVBORw0KGgo/);
    assert.ok(await img.evaluate((e) => (e as HTMLImageElement).naturalWidth > 100), "the PNG decoded");
    assert.equal(await cell("c1").locator(".nb-prompt").first().textContent(), "[1]:");
    const latex = cell("c2").locator(".nb-latex .katex");
    assert.equal(await latex.count(), 2);
    assert.match((await latex.first().locator("annotation").textContent()) ?? "", /\\int_0\^2 x\^2/);
    assert.match((await latex.nth(1).locator("annotation").textContent()) ?? "", /\\sum_\{k=1\}/);
    assert.equal(await cell("c2").locator(".nb-latex .katex-error").count(), 0);
    // The markdown cell's math too.
    assert.equal(await cell("c0").locator(".nb-markdown .katex").count(), 1);
    // A second line, still while it runs.
    writeFileSync(join(dir, "go-1"), "");
    await stream.filter({ hasText: "step 2 of 2" }).waitFor();
    assert.equal(ended, false);
    assert.equal(await prompt(streamId).textContent(), "[*]:");
    assert.equal(await stream.textContent(), "step 1 of 2\nstep 2 of 2\n");
    if (SHOTS) {
      await page.locator("#nb-main .nb-scroller").evaluate((e) => {
        e.scrollTop = e.scrollHeight;
      });
      await page.screenshot({ path: join(ROOT, "docs/screenshots/view-agent-notebook.png") });
    }
    writeFileSync(join(dir, "go-2"), "");
    const result = textOf(await running);
    assert.match(result, /done/);
    await prompt(streamId).filter({ hasText: "[3]:" }).waitFor();
    assert.equal(await cell(streamId).evaluate((e) => e.classList.contains("nb-cell-running")), false);
    assert.equal(await stream.textContent(), "step 1 of 2\nstep 2 of 2\ndone\n");
    // The run's save changed nothing the page shows: the image is still the one drawn.
    assert.equal(await cell("c1").locator("img.nb-image").count(), 1);
  });

  test("another program's nbformat.write appears in the page", async () => {
    execFileSync(TEST_PYTHON, [
      "-c",
      "import sys, nbformat\n" +
        "nb = nbformat.read(sys.argv[1], as_version=4)\n" +
        "cell = nbformat.v4.new_markdown_cell('**Reviewed** by someone else')\n" +
        "cell.id = 'by-another'\n" +
        "nb.cells.insert(1, cell)\n" +
        "nb.cells[0].source = '# The square, reviewed'\n" +
        "nbformat.write(nb, sys.argv[1])\n",
      analysis,
    ]);
    await cell("by-another").waitFor();
    assert.equal(await cell("by-another").locator(".nb-markdown strong").textContent(), "Reviewed");
    await cell("c0").locator(".nb-markdown h1", { hasText: "The square, reviewed" }).waitFor();
    assert.deepEqual(
      await page
        .locator("#nb-main .nb-cell")
        .evaluateAll((els) => els.map((e) => (e as HTMLElement).dataset.id)),
      ["c0", "by-another", "c1", "c2", streamId],
    );
    // the outputs stay as they were
    assert.equal(await cell("c1").locator("img.nb-image").count(), 1);
    assert.equal(await cell("c2").locator(".katex").count(), 2);
  });

  test("Interrupt from the page stops a running notebook cell; the agent's result says it came from the view", async () => {
    const path = join(dir, "stop.ipynb");
    await writeNb(path, [
      ["code", `import os, time\nprint("waiting for a person", flush=True)\n${waitForFile("never")}`],
      ["code", "print('not reached')"],
    ]);
    const running = call("notebook", { action: "run", notebook_path: "stop.ipynb" });
    await listed(path).waitFor();
    await showNotebook(path);
    await cell("c0").locator(".nb-stream-stdout", { hasText: "waiting for a person" }).waitFor();
    assert.equal(await prompt("c0").textContent(), "[*]:");
    const session = host().locator(".nb-session", { hasText: "stop.ipynb" });
    await session.locator(".nb-badge", { hasText: "busy" }).waitFor();
    const n = await actionsTaken();
    await session.locator(".nb-act-interrupt").click();
    assert.match(
      await answer(n + 1),
      new RegExp(
        `^Interrupt stop\\.ipynb \\(mcp-stdio · pid ${pid}\\): interrupted run r\\d+: the call's result says it was interrupted from the view\\.$`,
      ),
    );
    const result = textOf(await running);
    assert.match(
      result,
      /^Cell 0 was interrupted: the call was cancelled \(interrupted from the view, by a person \(nbagent view\)\); the kernel keeps its state\.\nCell 1 did not run\.$/m,
    );
    // The page: the cell ended with its KeyboardInterrupt, the next cell not run.
    await prompt("c0").filter({ hasText: "[1]:" }).waitFor();
    assert.equal(await cell("c0").evaluate((e) => e.classList.contains("nb-cell-running")), false);
    await cell("c0").locator(".nb-error", { hasText: "KeyboardInterrupt" }).waitFor();
    assert.equal(await cell("c1").locator(".nb-output").count(), 0);
    assert.equal(await prompt("c1").textContent(), "[ ]:");
    await session.locator(".nb-badge", { hasText: "idle" }).waitFor();
  });

  test("a python session's notebook grows in the page with each python call", async () => {
    const first = await call("python", { cells: [{ code: "x = 41\nprint('first call')" }] });
    assert.equal(first.isError, undefined, textOf(first));
    const prefix = `session:${hostId}:`;
    const button = page.locator("#nb-list button", { hasText: `python session default (pid ${pid})` });
    await button.waitFor();
    const path = (await button.getAttribute("data-path")) ?? "";
    assert.ok(path.startsWith(prefix), path);
    await showNotebook(path);
    await cell("cell-1").locator(".nb-stream-stdout", { hasText: "first call" }).waitFor();
    assert.equal(await page.locator("#nb-main .nb-cell").count(), 1);
    // The second call's cell appears as it starts, with its line, while it waits for a file.
    const code = `import os, time\nprint(x + 1, flush=True)\n${waitForFile("go-python")}`;
    let ended = false;
    const second = call("python", { cells: [{ code }] }).finally(() => {
      ended = true;
    });
    await cell("cell-2").locator(".nb-stream-stdout", { hasText: "42" }).waitFor();
    assert.equal(ended, false);
    assert.equal(await prompt("cell-2").textContent(), "[*]:");
    assert.equal(await cell("cell-2").locator(".nb-source").textContent(), code);
    writeFileSync(join(dir, "go-python"), "");
    assert.match(textOf(await second), /^42$/m);
    await prompt("cell-2").filter({ hasText: "[2]:" }).waitFor();
    assert.deepEqual(
      await page
        .locator("#nb-main .nb-cell")
        .evaluateAll((els) => els.map((e) => (e as HTMLElement).dataset.id)),
      ["cell-1", "cell-2"],
    );
    // The session's row has a Show button for this very notebook.
    const row = host().locator(".nb-session", { hasText: "python session default" });
    await row.locator(".nb-act-show").waitFor();
  });

  test("a call that queues shows as waiting at once; a page opened while a cell runs shows it running: its [*], its call's cell, its session's line", async () => {
    const code = `import os, time\nprint("late line", flush=True)\n${waitForFile("go-late")}`;
    const first = call("python", { cells: [{ code }], session: "late" });
    const row = (p: Page) =>
      p.locator(`.nb-host[data-host-id="${hostId}"] .nb-session`, { hasText: "python session late" });
    await row(page).locator(".nb-running", { hasText: "running import os, time for" }).waitFor();
    // A second call on the busy session queues: the page says so as it queues, not at the next turn.
    const second = call("python", { cells: [{ code: "print('after the wait')" }], session: "late" });
    await row(page).locator(".nb-session-notes", { hasText: "1 call waiting" }).waitFor();

    // A page that connects now: everything that runs is there from its state, before any new event.
    const late = await context.newPage();
    try {
      await late.goto(`${base}/`);
      await late.waitForFunction(() => document.body.dataset.states === "1");
      const lateRow = row(late);
      await lateRow.locator(".nb-running", { hasText: "running import os, time for" }).waitFor();
      assert.match((await lateRow.locator(".nb-session-notes").textContent()) ?? "", /1 call waiting/);
      // Its call in the timeline, with the cell it runs and the line it printed.
      await late.locator(`.nb-host[data-host-id="${hostId}"] .nb-host-title`).click();
      const running = late.locator(
        `#nb-timeline[data-host-id="${hostId}"] .nb-call-open .nb-tl-cell-running`,
      );
      await running.waitFor();
      assert.equal(await running.locator(".nb-tl-code").textContent(), code);
      assert.equal(await running.locator(".nb-tl-tail").textContent(), "late line");
      // The session's notebook: the running cell marked [*] at once.
      const listedLate = late.locator("#nb-list button", { hasText: `python session late (pid ${pid})` });
      await listedLate.click();
      const lastOne = late.locator("#nb-main .nb-cell").last();
      await lastOne.locator(".nb-stream-stdout", { hasText: "late line" }).waitFor();
      // The second call's cell comes after it: the running one is held by its id.
      const lastCell = late.locator(
        `#nb-main .nb-cell[data-id=${quoted((await lastOne.getAttribute("data-id")) ?? "")}]`,
      );
      assert.equal(await lastCell.locator(":scope > .nb-input > .nb-prompt").textContent(), "[*]:");
      assert.equal(await lastCell.evaluate((e) => e.classList.contains("nb-cell-running")), true);

      writeFileSync(join(dir, "go-late"), "");
      assert.match(textOf(await first), /late line/);
      assert.match(textOf(await second), /after the wait/);
      await lastCell.locator(":scope > .nb-input > .nb-prompt").filter({ hasText: "[1]:" }).waitFor();
      await lateRow.locator(".nb-badge", { hasText: "idle" }).waitFor();
      assert.equal(await lateRow.locator(".nb-session-notes").count(), 0, "no call waits any more");
    } finally {
      await late.close();
    }
  });

  test("hostile outputs of a real kernel run nothing in the page and cannot reach its API", async () => {
    const path = join(dir, "hostile.ipynb");
    // Each attack first marks, in its own document, that it ran (so the test knows it was tried).
    const attacks = [
      // a script in HTML: reaches for the page's window
      "display(HTML('<p>one</p><script>window.__tried = (window.__tried || 0) + 1; window.parent.__pwned = 1</script>'))",
      // an event handler in HTML
      "display(HTML('<img src=x onerror=\"window.__tried = (window.__tried || 0) + 1; parent.__pwned = 2\">'))",
      // the API: fetch the state and the token, load the state as an image, read the cookie
      "display(HTML('<script>window.__tried = (window.__tried || 0) + 1; window.__api = []; " +
        "const note = (what) => window.__api.push(what); " +
        'fetch("/api/state").then(() => note("state: read"), () => note("state: refused")); ' +
        'fetch("api/token").then(() => note("token: read"), () => note("token: refused")); ' +
        'const img = new Image(); img.onload = () => note("image: loaded"); img.onerror = () => note("image: failed"); img.src = "/api/state"; ' +
        'try { parent.__pwned = document.cookie } catch (e) { note("cookie: " + e.name) }' +
        "</script>'))",
      // JavaScript: navigates the page away
      "display(Javascript('window.__tried = (window.__tried || 0) + 1; parent.__pwned = 3; top.location = \"javascript:parent.__pwned = 4\"'))",
      // SVG with a script, a handler and a javascript: link
      'display(SVG(\'<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="60" height="20" onload="parent.__pwned = 5">' +
        '<script>parent.__pwned = 6</script><a xlink:href="javascript:parent.__pwned = 7"><text x="2" y="15">svg</text></a></svg>\'))',
      // Markdown with javascript: links and raw HTML handlers
      'display(Markdown(\'[x](javascript:window.__pwned=8) <a href="javascript:window.__pwned=9">y</a> <img src=x onerror="window.__pwned=10"> <b onmouseover="window.__pwned=11">z</b>\'))',
    ];
    await writeNb(path, [
      ["code", `from IPython.display import HTML, SVG, Javascript, Markdown, display\n${attacks.join("\n")}`],
    ]);
    const result = await call("notebook", { action: "run", notebook_path: "hostile.ipynb" });
    assert.equal(result.isError, undefined, textOf(result));
    await listed(path).waitFor();
    await showNotebook(path);
    await prompt("c0").filter({ hasText: "[1]:" }).waitFor();
    const outputs = cell("c0").locator(".nb-output");
    assert.equal(await outputs.count(), 6);
    // HTML and JavaScript in sandboxed frames; SVG an <img>; markdown as sanitized markup
    assert.equal(await cell("c0").locator("iframe.nb-frame[sandbox='allow-scripts']").count(), 4);
    assert.match(
      (await cell("c0").locator("img.nb-image").getAttribute("src")) ?? "",
      /^data:image\/svg\+xml/,
    );
    assert.equal(await cell("c0").locator(".nb-markdown b", { hasText: "z" }).count(), 1);
    // Every attack in a frame ran there (its own window says so) …
    const frames = page.frames().filter((f) => f !== page.mainFrame());
    assert.equal(frames.length, 4);
    for (const f of frames) await f.waitForFunction(() => (window as { __tried?: number }).__tried === 1);
    // The one that went for the API got nothing: fetch refused, the image not loaded, no cookie.
    const api: string[][] = [];
    for (const f of frames) {
      const got = await f.waitForFunction(() => {
        const notes = (window as { __api?: string[] }).__api;
        return notes === undefined ? [] : notes.length === 4 && notes;
      });
      const notes = (await got.jsonValue()) as string[];
      if (notes.length) api.push(notes.sort());
    }
    assert.deepEqual(api, [["cookie: SecurityError", "image: failed", "state: refused", "token: refused"]]);
    // … and nothing of it in the page.
    assert.equal(await page.evaluate(() => (window as { __pwned?: unknown }).__pwned), undefined);
    assert.equal(page.url(), `${base}/`);
    const unsafe = await page.evaluate(() =>
      Array.from(document.querySelectorAll("*")).flatMap((e) =>
        Array.from(e.attributes)
          .filter((a) => /^on/i.test(a.name) || /^\s*javascript:/i.test(a.value))
          .map((a) => `<${e.tagName.toLowerCase()} ${a.name}="${a.value}">`),
      ),
    );
    assert.deepEqual(unsafe, []);
    // The SVG image, sanitized: no script, handler or javascript: link in its data.
    const svg = decodeURIComponent(
      ((await cell("c0").locator("img.nb-image").getAttribute("src")) ?? "").replace(/^data:[^,]*,/, ""),
    );
    assert.doesNotMatch(svg, /<script|onload|javascript:/i);
    // As the browser saw it: fetch never left the frame (its policy, connect-src 'none'); the image's
    // request did, without the page's cookie (the frame's origin is opaque), and no answer reached it.
    const seen = await Promise.all(
      fromFrames.map(async (r) => ({
        path: new URL(r.url()).pathname,
        status: (await r.response())?.status(),
        failed: r.failure() !== null,
      })),
    );
    assert.deepEqual(seen, [{ path: "/api/state", status: undefined, failed: true }]);
  });
});

/**
 * The `nbagent view` page (docs/view.md) in real headless Chromium (Debian's /usr/bin/chromium,
 * driven by playwright-core; no browser is ever downloaded), served by a stand-in server
 * (./server.ts) with the real Content-Security-Policies: how it renders a notebook a real kernel
 * ran, how live patches change only what they must, a 20,000-cell notebook, and outputs that try to
 * reach the page. Skipped without chromium, except under CI, where scripts/setup.sh installs it.
 *
 * UPDATE_SCREENSHOTS=1 also writes docs/screenshots/view-notebook.png.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { copyFile, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { promisify } from "node:util";
import type { Browser, BrowserContext, Page } from "playwright-core";
import type { ViewCell, ViewMessage } from "../../src/view/protocol.js";
import { launchChromium, SKIP_BROWSER } from "./browser.js";
import { executedNotebook, hostileCells } from "./notebooks.js";
import { COOKIE, ViewTestServer } from "./server.js";

const exec = promisify(execFile);
const ROOT = new URL("../..", import.meta.url).pathname;
const SKIP = SKIP_BROWSER;

let browser: Browser;
let profile = "";
const contexts: BrowserContext[] = [];
const servers: ViewTestServer[] = [];

before(async () => {
  if (SKIP) return;
  await exec(process.execPath, ["scripts/bundle.mjs", "view"], { cwd: ROOT });
  profile = await mkdtemp(join(tmpdir(), "nbagent-view-"));
  // launch() gives the browser a fresh profile of its own (a new user-data-dir, removed on close)
  browser = await launchChromium();
});

after(async () => {
  for (const c of contexts) await c.close().catch(() => {});
  await browser?.close();
  for (const s of servers) await s.close();
  if (profile) await rm(profile, { recursive: true, force: true });
});

async function serve(options: { csp?: boolean } = {}): Promise<ViewTestServer> {
  const server = await new ViewTestServer(options).start();
  servers.push(server);
  return server;
}

/** Requests each page made to anywhere but its server (offline: none). */
const offsite = new WeakMap<Page, string[]>();

/** The page, open on the server, with the CSP violations of the page itself (not its frames) recorded. */
async function open(server: ViewTestServer, height = 900): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1200, height } });
  contexts.push(context);
  const page = await context.newPage();
  const elsewhere: string[] = [];
  page.on("request", (r) => {
    if (!r.url().startsWith(server.url) && !r.url().startsWith("data:")) elsewhere.push(r.url());
  });
  offsite.set(page, elsewhere);
  // tsx compiles this file keeping function names through a helper, __name, which the functions
  // given to page.evaluate then call in the page: an identity stands in for it there
  await page.addInitScript("globalThis.__name = (f) => f;");
  await page.addInitScript(() => {
    if (window !== window.top) return;
    const w = window as unknown as { __violations: string[] };
    w.__violations = [];
    document.addEventListener("securitypolicyviolation", (e) =>
      w.__violations.push(`${e.violatedDirective} ${e.blockedURI} ${e.sourceFile}:${e.lineNumber}`),
    );
  });
  await page.goto(server.url);
  await applied(page, server.messageCount);
  return page;
}

/** Waits until the page has taken `n` messages. */
async function applied(page: Page, n: number): Promise<void> {
  await page.waitForFunction((n) => document.body.dataset.applied === String(n), n);
}

async function send(page: Page, server: ViewTestServer, message: ViewMessage): Promise<void> {
  server.send(message);
  await applied(page, server.messageCount);
}

/** Waits for every output frame to have shown its HTML (it reported a height) and every image to load. */
async function settled(page: Page): Promise<void> {
  await page.waitForFunction(
    () =>
      Array.from(document.querySelectorAll<HTMLIFrameElement>("iframe.nb-frame")).every(
        (f) => f.style.height !== "",
      ) && Array.from(document.querySelectorAll<HTMLImageElement>("img")).every((i) => i.complete),
  );
  await page.evaluate(() => document.fonts.ready.then(() => undefined));
}

const code = (id: string, source: string, outputs: ViewCell["outputs"] = []): ViewCell => ({
  id,
  cell_type: "code",
  source,
  outputs,
  execution_count: null,
});

describe("the view page", { skip: SKIP }, () => {
  test("renders a notebook a real kernel ran as Jupyter does: math, highlighting, ANSI, images, tables", async () => {
    const server = await serve();
    server.send({ kind: "notebook", path: "analysis.ipynb", cells: await executedNotebook() });
    // tall enough that every cell is drawn (the view draws only what is near the viewport)
    const page = await open(server, 2200);
    await settled(page);
    const seen = await page.evaluate(() => {
      const q = (s: string) => document.querySelector(s);
      const cell = (i: number) => q(`[data-id="cell-${i}"]`)!;
      const png = cell(2).querySelector<HTMLImageElement>("img.nb-image");
      const svg = cell(4).querySelector<HTMLImageElement>('img[alt="image/svg+xml"]');
      const red = cell(1).querySelector(".nb-stream-stdout .ansi-red-fg");
      return {
        inlineMath: cell(0).querySelectorAll(".nb-math:not(.nb-math-display) .katex").length,
        displayMath: cell(0).querySelectorAll(".nb-math-display .katex-display").length,
        // `r_1` is a subscript in KaTeX, not markdown's emphasis
        subscript: cell(0).querySelectorAll(".katex .msupsub").length > 0 && !cell(0).querySelector("em"),
        markdownTable: cell(0).querySelector("table td")?.textContent,
        keyword: cell(1).querySelector(".nb-source .hljs-keyword")?.textContent,
        title: cell(1).querySelector(".nb-source .hljs-title")?.textContent,
        red: red?.textContent,
        redColor: red ? getComputedStyle(red).color : undefined,
        boldGreen: cell(1).querySelector(".ansi-green-fg.ansi-bold")?.textContent,
        png: png && { src: png.src.slice(0, 22), width: png.naturalWidth },
        latex: cell(4).querySelectorAll(".nb-latex .katex").length,
        markdownOutput: cell(4).querySelector(".nb-output .nb-markdown h2")?.textContent,
        json: cell(4).querySelector(".nb-json .nb-json-key")?.textContent,
        svg: svg && { src: svg.src.slice(0, 18), width: svg.naturalWidth },
        error: cell(5).querySelector(".nb-error")?.textContent?.includes("ZeroDivisionError"),
        errorColored: cell(5).querySelectorAll(".nb-error span[class*=ansi-]").length > 0,
        prompts: Array.from(document.querySelectorAll(".nb-input > .nb-prompt")).map((p) => p.textContent),
        violations: (window as unknown as { __violations: string[] }).__violations,
      };
    });
    assert.deepEqual(seen, {
      inlineMath: 1,
      displayMath: 1,
      subscript: true,
      markdownTable: "1",
      keyword: "def",
      title: "greet",
      red: "red",
      redColor: "rgb(231, 92, 88)",
      boldGreen: "bold green",
      png: { src: "data:image/png;base64,", width: seen.png?.width },
      latex: 1,
      markdownOutput: "A markdown output",
      json: "model: ",
      svg: { src: "data:image/svg+xml", width: 60 },
      error: true,
      errorColored: true,
      prompts: ["", "[1]:", "[2]:", "[3]:", "[4]:", "[5]:"],
      violations: [],
    });
    assert.ok((seen.png?.width ?? 0) > 100, `the PNG decoded: ${seen.png?.width}px wide`);
    // offline: fonts, styles and scripts all came from the server
    assert.deepEqual(offsite.get(page), []);
    assert.ok(
      await page.evaluate(() => {
        const faces: FontFace[] = [];
        document.fonts.forEach((f) => {
          faces.push(f);
        });
        return faces.some((f) => f.family.includes("KaTeX_Main") && f.status === "loaded");
      }),
      "KaTeX's font loaded from the package",
    );
    // pandas' table, inside its sandboxed frame
    const table = page.locator('[data-id="cell-3"] iframe.nb-frame').contentFrame();
    assert.deepEqual(await table.locator("tbody tr td").allTextContents(), ["1", "a", "2", "b", "3", "c"]);
    const shot = join(profile, "view-notebook.png");
    await page.screenshot({ path: shot, fullPage: false });
    if (process.env.UPDATE_SCREENSHOTS)
      await copyFile(shot, join(ROOT, "docs/screenshots/view-notebook.png"));
  });

  test("live patches change only what they must: insert, edit, move, delete, outputs while running", async () => {
    const server = await serve();
    const path = "live.ipynb";
    server.send({
      kind: "notebook",
      path,
      cells: [
        code("a", "a = 1"),
        code("b", "b = 2"),
        code("c", "for i in range(3): print(i)", [
          { output_type: "display_data", data: { "text/html": "<i>frame</i>" }, metadata: {} },
        ]),
        { id: "d", cell_type: "markdown", source: "# d" },
      ],
    });
    const page = await open(server);
    await settled(page);
    /** The ids in DOM order, and which cell elements are the very ones first drawn (marked below). */
    const state = () =>
      page.evaluate(() => {
        const cells = Array.from(document.querySelectorAll<HTMLElement>(".nb-cell"));
        return {
          order: cells.map((c) => c.dataset.id),
          kept: cells
            .filter((c) => (c as unknown as { __mark?: string }).__mark === c.dataset.id)
            .map((c) => c.dataset.id),
        };
      });
    await page.evaluate(() => {
      for (const c of Array.from(document.querySelectorAll<HTMLElement>(".nb-cell")))
        (c as unknown as { __mark?: string }).__mark = c.dataset.id;
      const frame = document.querySelector('[data-id="c"] iframe') as unknown as { __mark?: string };
      frame.__mark = "frame";
    });

    await send(page, server, { kind: "cell-inserted", path, index: 1, cell: code("x", "x = 0") });
    assert.deepEqual(await state(), { order: ["a", "x", "b", "c", "d"], kept: ["a", "b", "c", "d"] });

    await send(page, server, { kind: "cell-edited", path, id: "b", source: "b = 3  # edited" });
    assert.deepEqual(await state(), { order: ["a", "x", "b", "c", "d"], kept: ["a", "b", "c", "d"] });
    assert.equal(await page.textContent('[data-id="b"] .nb-source'), "b = 3  # edited");

    await send(page, server, { kind: "cell-moved", path, id: "d", to: 0 });
    assert.deepEqual(await state(), { order: ["d", "a", "x", "b", "c"], kept: ["d", "a", "b", "c"] });

    await send(page, server, { kind: "cell-deleted", path, id: "x" });
    assert.deepEqual(await state(), { order: ["d", "a", "b", "c"], kept: ["d", "a", "b", "c"] });

    // c runs: its prompt says so, its stream grows in one output, its frame stays (not reloaded)
    await send(page, server, { kind: "cell-running", path, id: "c", state: "running" });
    assert.equal(await page.textContent('[data-id="c"] .nb-input > .nb-prompt'), "[*]:");
    for (const i of [0, 1, 2])
      await send(page, server, {
        kind: "output-appended",
        path,
        id: "c",
        output: { output_type: "stream", name: "stdout", text: `tick ${i}\n` },
      });
    await send(page, server, { kind: "cell-running", path, id: "c", state: "idle", execution_count: 7 });
    const outputs = await page.evaluate(() => {
      const c = document.querySelector('[data-id="c"]')!;
      return {
        prompt: c.querySelector(".nb-input > .nb-prompt")?.textContent,
        outputs: Array.from(c.querySelectorAll(".nb-output")).map((o) => o.className),
        stream: c.querySelector(".nb-stream-stdout")?.textContent,
        frameKept: (c.querySelector("iframe") as unknown as { __mark?: string }).__mark === "frame",
      };
    });
    assert.deepEqual(outputs, {
      prompt: "[7]:",
      outputs: ["nb-output nb-output-display_data", "nb-output nb-output-stream"],
      stream: "tick 0\ntick 1\ntick 2\n",
      frameKept: true,
    });
    assert.deepEqual(await state(), { order: ["d", "a", "b", "c"], kept: ["d", "a", "b", "c"] });

    // clear_output(wait=True): the outputs stay until the next one comes, which replaces them
    await send(page, server, { kind: "outputs-cleared", path, id: "c", wait: true });
    assert.equal(await page.locator('[data-id="c"] .nb-output').count(), 2);
    await send(page, server, {
      kind: "output-appended",
      path,
      id: "c",
      output: { output_type: "stream", name: "stdout", text: "fresh\n" },
    });
    assert.deepEqual(await page.locator('[data-id="c"] .nb-output').allTextContents(), ["fresh\n"]);

    // a patch for a cell the page does not have is said, not guessed at
    await send(page, server, { kind: "cell-deleted", path, id: "nope" });
    assert.equal(
      await page.textContent("#nb-status"),
      "Out of step with the server: cell-deleted in live.ipynb: no cell nope",
    );
    assert.deepEqual(await state(), { order: ["d", "a", "b", "c"], kept: ["d", "a", "b", "c"] });
  });

  test("several notebooks: listed, one shown, the others kept up to date and drawn when chosen, a closed one gone", async () => {
    const server = await serve();
    server.send({ kind: "notebook", path: "first.ipynb", cells: [code("f1", "first = 1")] });
    server.send({ kind: "notebook", path: "second.ipynb", cells: [code("s1", "second = 1")] });
    const page = await open(server);
    const shown = () =>
      page.evaluate(() => ({
        list: Array.from(document.querySelectorAll("#nb-list button")).map(
          (b) => `${b.textContent}${b.classList.contains("nb-current") ? " (shown)" : ""}`,
        ),
        cells: Array.from(document.querySelectorAll<HTMLElement>("#nb-main .nb-cell")).map(
          (c) => c.dataset.id,
        ),
      }));
    assert.deepEqual(await shown(), { list: ["first.ipynb (shown)", "second.ipynb"], cells: ["f1"] });
    // a patch to the notebook not shown changes its model only
    await send(page, server, {
      kind: "cell-inserted",
      path: "second.ipynb",
      index: 1,
      cell: code("s2", "more"),
    });
    assert.deepEqual(await shown(), { list: ["first.ipynb (shown)", "second.ipynb"], cells: ["f1"] });
    await page.click("#nb-list button >> text=second.ipynb");
    assert.deepEqual(await shown(), { list: ["first.ipynb", "second.ipynb (shown)"], cells: ["s1", "s2"] });
    await send(page, server, { kind: "notebook-closed", path: "second.ipynb" });
    assert.deepEqual(await shown(), { list: ["first.ipynb (shown)"], cells: ["f1"] });
    // a patch for a notebook the page was never sent is said
    await send(page, server, { kind: "cell-deleted", path: "third.ipynb", id: "x" });
    assert.equal(
      await page.textContent("#nb-status"),
      "Out of step: cell-deleted for third.ipynb, which the page has not been sent",
    );
  });

  test("a 20,000-cell notebook keeps few cell elements in the DOM, and scrolling to the end shows the last cell", async () => {
    const server = await serve();
    const cells: ViewCell[] = Array.from({ length: 20000 }, (_, i) =>
      i % 10 === 0
        ? { id: `c${i}`, cell_type: "markdown", source: `## Section ${i}\n\nSome text about $x_{${i}}$.` }
        : code(`c${i}`, `value_${i} = ${i} * 2\nprint(value_${i})`, [
            { output_type: "stream", name: "stdout", text: `${i * 2}\n` },
          ]),
    );
    server.send({ kind: "notebook", path: "big.ipynb", cells });
    const page = await open(server);
    const count = () => page.evaluate(() => document.querySelectorAll(".nb-cell").length);
    const atStart = await count();
    assert.ok(atStart > 0 && atStart < 100, `${atStart} cell elements at the start`);
    assert.equal(await page.getAttribute(".nb-cell", "data-id"), "c0");

    await page.evaluate(() => {
      const s = document.querySelector<HTMLElement>(".nb-scroller")!;
      s.scrollTop = s.scrollHeight;
    });
    // the last cell is drawn and inside the viewport
    await page.waitForFunction(() => {
      const s = document.querySelector<HTMLElement>(".nb-scroller")!.getBoundingClientRect();
      const last = document.querySelector('[data-id="c19999"]');
      if (!last) return false;
      const r = last.getBoundingClientRect();
      return r.top >= s.top && r.bottom <= s.bottom + 1;
    });
    assert.equal(await page.textContent('[data-id="c19999"] .nb-stream-stdout'), "39998\n");
    const atEnd = await count();
    assert.ok(atEnd > 0 && atEnd < 100, `${atEnd} cell elements at the end`);

    // and the middle, by offset: the cells drawn are the ones there
    await page.evaluate(() => {
      const s = document.querySelector<HTMLElement>(".nb-scroller")!;
      s.scrollTop = s.scrollHeight / 2;
    });
    await page.waitForFunction(() => {
      const ids = Array.from(document.querySelectorAll<HTMLElement>(".nb-cell")).map((c) =>
        Number(c.dataset.id!.slice(1)),
      );
      return ids.length > 0 && ids[0] > 5000 && ids[ids.length - 1] < 15000;
    });
    const inMiddle = await count();
    assert.ok(inMiddle < 100, `${inMiddle} cell elements in the middle`);
    console.log(
      `# 20,000 cells: ${atStart} cell elements at the start, ${atEnd} at the end, ${inMiddle} in the middle`,
    );
  });

  test("an HTML output's own scripts run in its frame in order, an external one loaded first (as plotly's do)", async () => {
    const server = await serve();
    const html =
      '<div id="plot">not drawn</div><script src="/lib/plotlike.js"></script>' +
      "<script>document.getElementById('plot').textContent = 'drawn by ' + window.PlotLike.name + ' ' + new Function('return 6 * 7')()</script>";
    server.send({
      kind: "notebook",
      path: "plot.ipynb",
      cells: [
        code("p", "fig.show()", [{ output_type: "display_data", data: { "text/html": html }, metadata: {} }]),
      ],
    });
    const page = await open(server);
    const frame = page.locator('[data-id="p"] iframe.nb-frame').contentFrame();
    await frame.locator("#plot", { hasText: "drawn by" }).waitFor();
    assert.equal(await frame.locator("#plot").textContent(), "drawn by plotlike 42");
  });

  for (const csp of [true, false])
    test(`hostile outputs run nothing in the page and never call its API with its cookie${csp ? "" : " (even served without CSP)"}`, async () => {
      const server = await serve({ csp });
      server.send({ kind: "notebook", path: "hostile.ipynb", cells: hostileCells() });
      const page = await open(server, 2200);
      await settled(page);
      // the cookie is there for the taking, in the page
      assert.ok((await page.evaluate(() => document.cookie)).includes(COOKIE));

      // the frames' code did run — in an opaque origin, where the cookie is unreadable
      for (const id of ["html-script", "html-onerror", "javascript"]) {
        const frame = await (await page.$(`[data-id="${id}"] iframe.nb-frame`))!.contentFrame();
        assert.ok(frame, `${id} has its frame`);
        await frame.waitForFunction(() => (window as unknown as { __ran?: boolean }).__ran === true);
        const inside = await frame.evaluate(() => {
          let cookie: string;
          try {
            cookie = document.cookie;
          } catch (e) {
            cookie = `threw ${(e as Error).name}`;
          }
          return { origin: self.origin, cookie };
        });
        assert.deepEqual(inside, { origin: "null", cookie: "threw SecurityError" }, id);
      }
      const seen = await page.evaluate(() => ({
        pwned: (window as unknown as { __pwned?: unknown }).__pwned,
        javascriptLinks: document.querySelectorAll('[href^="javascript:" i]').length,
        links: Array.from(document.querySelectorAll<HTMLAnchorElement>(".nb-markdown a")).map((a) =>
          a.getAttribute("href"),
        ),
        handlers: Array.from(document.querySelectorAll("*")).filter((e) =>
          e.getAttributeNames().some((n) => n.startsWith("on")),
        ).length,
        scripts: document.querySelectorAll("#nb-main script").length,
        unsandboxed: document.querySelectorAll("#nb-main iframe:not([sandbox='allow-scripts'])").length,
        forms: document.querySelectorAll("#nb-main form").length,
        svg: decodeURIComponent(document.querySelector<HTMLImageElement>('[data-id="svg-script"] img')!.src),
      }));
      assert.equal(seen.pwned, undefined);
      assert.equal(seen.javascriptLinks, 0);
      assert.deepEqual(seen.links, [null]);
      assert.equal(seen.handlers, 0);
      assert.equal(seen.scripts, 0);
      assert.equal(seen.unsandboxed, 0);
      assert.equal(seen.forms, 0);
      assert.match(seen.svg, /^data:image\/svg\+xml;charset=utf-8,<svg [^>]*><rect [^>]*><\/rect><\/svg>$/);
      // clicking the neutralised links does nothing either
      await page.click("#raw-link");
      await page.click("text=markdown link");
      assert.equal(
        await page.evaluate(() => (window as unknown as { __pwned?: unknown }).__pwned),
        undefined,
      );
      // no request reached the API with the page's cookie
      const withCookie = server.api.filter((r) => r.cookie?.includes(COOKIE));
      assert.deepEqual(withCookie, [], JSON.stringify(server.api));
      // what did arrive came from the opaque origin, which the real server's API refuses (Origin: null)
      assert.ok(
        server.api.length > 0 && server.api.every((r) => r.origin === "null" || r.origin === undefined),
      );
      // the frames' CSP (connect-src 'none') stops their fetch() outright; images may load, cookie-less
      if (csp)
        assert.deepEqual(
          server.api.filter((r) => r.path !== "/api/image"),
          [],
        );
    });

  test("the state's notebooks are drawn, a session's under its title, and a reconnect starts again from the state", async () => {
    const server = await serve();
    const host = { id: "4242-ab", pid: 4242, kind: "mcp-stdio", cwd: "/work", startedAt: Date.now() };
    const key = { kind: "python", sessionId: "main", cwd: "/work" };
    const session = { key, started: true, alive: true, busy: false, waiting: 0, lastUsed: 0 };
    server.state = {
      hosts: [{ host, sessions: [session], runs: [], calls: [] }],
      notebooks: [
        {
          kind: "notebook",
          path: "session:4242-ab:main",
          title: "python session main",
          session: { hostId: host.id, key },
          cells: [code("s1", "print('from the session')")],
        },
        { kind: "notebook", path: "/work/other.ipynb", title: "other.ipynb", cells: [code("o1", "2 + 2")] },
      ],
    };
    const context = await browser.newContext({ viewport: { width: 1200, height: 900 } });
    contexts.push(context);
    const page = await context.newPage();
    await page.goto(server.url);
    await page.waitForFunction(() => document.body.dataset.states === "1");
    assert.deepEqual(await page.locator("#nb-list button").allTextContents(), [
      "python session main (pid 4242)",
      "other.ipynb",
    ]);
    // The first notebook is shown; the session's Show button shows its notebook again.
    assert.equal(await page.locator('#nb-main [data-id="s1"]').count(), 1);
    // The timeline's styles leave the notebook's cells alone (a code cell is not clipped).
    assert.deepEqual(
      await page
        .locator('#nb-main [data-id="s1"]')
        .evaluate((e) => [e.className, getComputedStyle(e).maxHeight, getComputedStyle(e).overflow]),
      ["nb-cell nb-cell-code", "none", "visible"],
    );
    await page.locator("#nb-list button", { hasText: "other.ipynb" }).click();
    assert.equal(await page.locator('#nb-main [data-id="o1"]').count(), 1);
    const row = page.locator('.nb-host[data-host-id="4242-ab"] .nb-session', {
      hasText: "python session main",
    });
    await row.locator(".nb-act-show").click();
    assert.equal(await page.locator('#nb-main [data-id="s1"]').count(), 1);
    // 1200 px: three columns side by side; narrower, the timeline goes under the notebook; narrower
    // still, the processes go above both. Every panel keeps room, none covers another.
    for (const [width, layout] of [
      [1200, "side|main|timeline"],
      [900, "side|main/timeline"],
      [600, "side/main/timeline"],
    ] as const) {
      await page.setViewportSize({ width, height: 900 });
      const boxes = await page.evaluate(() =>
        ["nb-side", "nb-main", "nb-timeline"].map((id) => {
          const r = document.getElementById(id)!.getBoundingClientRect();
          return {
            l: Math.round(r.left),
            t: Math.round(r.top),
            r: Math.round(r.right),
            b: Math.round(r.bottom),
          };
        }),
      );
      const [side, main, tl] = boxes;
      for (const b of boxes)
        assert.ok(b.r - b.l >= 150 && b.b - b.t >= 100, `${width}: ${JSON.stringify(boxes)}`);
      const seen =
        side.r <= main.l && main.r <= tl.l
          ? "side|main|timeline"
          : side.r <= main.l && main.b <= tl.t && side.r <= tl.l
            ? "side|main/timeline"
            : side.b <= main.t && main.b <= tl.t
              ? "side/main/timeline"
              : JSON.stringify(boxes);
      assert.equal(seen, layout, `at ${width} px`);
      assert.ok(Math.max(side.r, main.r, tl.r) <= width, `${width}: nothing past the right edge`);
    }
    await page.setViewportSize({ width: 1200, height: 900 });
    // The server goes away and comes back with another state: the page keeps nothing of the old one.
    server.state = {
      hosts: [{ host: { ...host, id: "5151-cd", pid: 5151 }, sessions: [], runs: [], calls: [] }],
      notebooks: [
        { kind: "notebook", path: "/work/new.ipynb", title: "new.ipynb", cells: [code("n1", "3")] },
      ],
    };
    server.dropStreams();
    await page.waitForFunction(() => document.body.dataset.states === "2");
    assert.deepEqual(await page.locator("#nb-list button").allTextContents(), ["new.ipynb"]);
    assert.deepEqual(await page.locator(".nb-host .nb-host-title").allTextContents(), [
      "mcp-stdio · pid 5151",
    ]);
    assert.equal(await page.locator('#nb-main [data-id="n1"]').count(), 1);
  });

  test("frame.html opened on its own is still in an opaque origin (its CSP sandboxes it)", async () => {
    const server = await serve();
    const context = await browser.newContext();
    contexts.push(context);
    const page = await context.newPage();
    await page.goto(`${server.url}frame.html`);
    assert.equal(await page.evaluate("self.origin"), "null");
  });
});

test("the page's bundle holds no eval and no new Function (its CSP allows neither), on any path", async () => {
  await exec(process.execPath, ["scripts/bundle.mjs", "view"], { cwd: ROOT });
  const bundle = await readFile(join(ROOT, "dist/view/page/page.js"), "utf8");
  assert.doesNotMatch(bundle, /\beval\(|new Function\b/);
});

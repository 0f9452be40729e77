/** The python tool end to end against real kernels: texts, truncation + artifact, images, progress. */
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { createRuntime } from "../../src/runtime/index.js";
import { createPythonTool, type PythonParams } from "../../src/tools/python/python.js";
import type { PythonToolDetails } from "../../src/tools/python/result.js";
import type { ToolResult } from "../../src/tools/types.js";
import { backendCases } from "../backends.js";
import { testSettings } from "../settings.js";
import { pythonToolOn } from "./python-fixture.js";

const root = mkdtempSync(join(tmpdir(), "nbagent-pytool-"));
const cwd = mkdtempSync(join(root, "work-"));
after(() => rmSync(root, { recursive: true, force: true }));

const text = (r: ToolResult<PythonToolDetails>) => (r.content[0] as { text: string }).text;

test("description lists the prelude helpers", async () => {
  const rt = createRuntime({ settings: testSettings(), stateRoot: join(root, "state") });
  const tool = createPythonTool({ cwd, runtime: rt });
  assert.match(tool.description, /run\(cmd, cwd=None, timeout=None\)/);
  assert.match(tool.description, /status\(op, \*\*data\)/);
  await rt.dispose();
});

// Every text below is the same on both backends unless a test says why not.
for (const backend of backendCases())
  describe(backend.name, () => {
    const py = pythonToolOn(backend, { root, cwd });

    const call = (
      params: unknown,
      signal?: AbortSignal,
      onUpdate?: (p: ToolResult<PythonToolDetails>) => void,
    ) => py.tool.execute("t", params as PythonParams, signal, onUpdate);

    test("bad params give an Error: result", async () => {
      const cases: [unknown, string][] = [
        [{}, 'Error: cells is required (unless export_notebook is given). Pass {"cells":[{"code":"..."}]}.'],
        [{ cells: [] }, "Error: cells must be a non-empty array; got []."],
        [{ cells: [{ code: 1 }] }, "Error: cells[0].code must be a string; got 1."],
        [{ cells: [{ code: "1" }], mode: "x" }, 'Error: mode must be one of "session", "per-call"; got "x".'],
        // The field at fault, not a whole-call example (issue 30 item 9).
        [
          { cells: [{ code: "1" }], timeout: "30" },
          'Error: timeout must be a number greater than 0; got "30".',
        ],
        [
          { cells: [{ source: "1" }] },
          'Error: Unknown parameter "source" (did you mean code?) in cells[0]. cells[0] takes: code, title.',
        ],
      ];
      for (const [p, expected] of cases) {
        const r = await call(p);
        assert.equal(r.isError, true);
        assert.equal(text(r), expected);
      }
      const r = await call({ cells: [{ code: "1" }], cwd: "does/not/exist" });
      assert.match(text(r), /^Error: cwd is not a directory/);
    });

    test("texts: (no output), [i/n] title, (ok), results, failed cell, later cells skipped", async () => {
      assert.equal(text(await call({ cells: [{ code: "a = 1" }] })), "(no output)");
      const r = await call({
        cells: [{ code: "b = 2", title: "setup" }, { code: "print(a + b)" }, { code: "b * 10" }],
      });
      assert.equal(text(r), "[1/3] setup\n(ok)\n[2/3]\n3\n[3/3]\n20");
      assert.deepEqual(
        r.details.cells.map((c) => [c.status, typeof c.executionCount]),
        [
          ["ok", "number"],
          ["ok", "number"],
          ["ok", "number"],
        ],
      );
      const f = await call({ cells: [{ code: "c = 3" }, { code: "1/0" }, { code: "c = 4" }] });
      assert.equal(f.isError, true);
      assert.match(text(f), /ZeroDivisionError/);
      assert.match(
        text(f),
        /\nCell 2 failed: ZeroDivisionError: division by zero\.\nCell 1 ran in this call; its state persists, so only cell 2 onward needs to run again\.\nCell 3 did not run\.$/,
      );
      assert.deepEqual(
        f.details.cells.map((c) => c.status),
        ["ok", "error", "skipped"],
      );
      assert.deepEqual(f.details.cells[1].error, { name: "ZeroDivisionError", value: "division by zero" });
      assert.equal(text(await call({ cells: [{ code: "print(c)" }] })), "3");
    });

    test("timeout: the cell is aborted with the timeout text; the session keeps its state", async () => {
      await call({ cells: [{ code: "kept = 'yes'" }] });
      const r = await call({
        cells: [{ code: "import time\ntime.sleep(30)" }, { code: "print('never')" }],
        timeout: 1,
      });
      assert.match(
        text(r),
        /\nCell 1 timed out: the call's timeout of 1 second ran out and the cell was interrupted; the kernel keeps its state\. Pass a larger timeout for long work\.\nCell 2 did not run\.$/,
      );
      assert.equal(text(r).match(/timed out/g)?.length, 1, "said once");
      assert.deepEqual(
        r.details.cells.map((c) => c.status),
        ["aborted", "skipped"],
      );
      assert.equal(text(await call({ cells: [{ code: "print(kept)" }] })), "yes");
    });

    test("an abort signal interrupts the running cell", async () => {
      const ac = new AbortController();
      const pending = call(
        { cells: [{ code: "import time\nprint('go', flush=True)\ntime.sleep(30)" }] },
        ac.signal,
        (p) => {
          if (p.content[0].type === "text" && p.content[0].text.includes("go")) ac.abort();
        },
      );
      const r = await pending;
      assert.match(
        text(r),
        /\nCell 1 was interrupted: the call was cancelled; the kernel keeps its state\.$/,
      );
    });

    test("stdin requests are answered and reported", async () => {
      const r = await call({ cells: [{ code: "x = input('name? ')\nprint(repr(x))" }] });
      assert.equal(
        text(r).split(
          "[stdin] Kernel requested input. Interactive stdin is not supported; provide input programmatically.\n",
        ).length,
        2,
        "the notice, once, on its own line",
      );
      assert.equal(r.details.cells[0].stdinRequested, true);
    });

    test("input() that ends in EOFError reads as one line, not the kernel's frames", async () => {
      const notice =
        "[stdin] Kernel requested input. Interactive stdin is not supported; provide input programmatically.";
      const line =
        "EOFError: stdin is not available in this kernel: input() cannot be answered. Pass the value in the code instead (e.g. replace input(...) with the value).";
      const r = await call({ cells: [{ code: "x = input('name? ')\ny = input('age? ')" }] });
      const t = text(r);
      assert.ok(t.includes(`${notice}\n`), t);
      assert.ok(t.includes(line), t);
      assert.ok(t.includes("y = input('age? ')"), `the user's own line stays: ${t}`);
      assert.doesNotMatch(t, /ipykernel|kernelbase\.py|site-packages/);
      assert.equal(r.details.cells[0].status, "error");
      assert.equal(r.details.cells[0].error?.name, "EOFError");
      assert.equal(r.details.cells[0].stdinRequested, true);
      const loop = await call({ cells: [{ code: "while True:\n    s = input()" }] });
      const lt = text(loop);
      assert.equal(lt.split(notice).length, 2, lt);
      assert.ok(lt.includes(line), lt);
      assert.doesNotMatch(lt, /ipykernel|kernelbase\.py|site-packages/);
      assert.equal(loop.details.cells[0].error?.name, "EOFError");
      // One input() gets '' and the cell goes on: the notice, no error line.
      const once = await call({ cells: [{ code: "x = input('name? ')\nprint(repr(x))" }] });
      assert.equal(text(once), `${notice}\n''`);
      assert.equal(once.details.cells[0].status, "ok");
    });

    test("long output shows its head and tail and points at an artifact holding every byte", async () => {
      const r = await call({ cells: [{ code: "for i in range(100000): print(f'line {i} ü')" }] });
      const t = text(r);
      const o = r.details.output;
      const cell = r.details.cells[0].output!;
      assert.equal(o.truncated, true);
      assert.equal(o.totalLines, 100000);
      assert.ok(o.artifactId);
      const [[a, b], [c, d]] = cell.shownLines;
      assert.equal(a, 1);
      assert.equal(d, 100000);
      assert.match(
        t,
        new RegExp(
          `\\[cell 1: 100,000 lines \\(1\\.3 MB\\); showing lines 1-${b.toLocaleString("en-US")} and ${c.toLocaleString("en-US")}-100,000\\. All of it: artifact://${o.artifactId}, lines 1-100,000\\. Read it with the artifact tool: \\{"id":"${o.artifactId}","offset":${b + 1}\\}\\]$`,
        ),
      );
      assert.ok(t.startsWith("line 0 ü\nline 1 ü\n"));
      assert.ok(
        t.includes(
          `line ${b - 1} ü\n… [${(c - b - 1).toLocaleString("en-US")} lines not shown]\nline ${c - 1} ü\n`,
        ),
      );
      let expected = "";
      for (let i = 0; i < 100000; i++) expected += `line ${i} ü\n`;
      const path = py.rt.artifacts.resolve(o.artifactUri!)!;
      assert.equal(statSync(path).size, Buffer.byteLength(expected));
      assert.equal(readFileSync(path, "utf8"), expected);
      const slice = await py.rt.artifacts.read(o.artifactUri!, { offset: b + 1, limit: 2 });
      assert.equal(slice.text, `line ${b} ü\nline ${b + 1} ü\n`);
    });

    test("images reach the model, downscaled to the budget; JSON and status events land in details", async () => {
      const r = await call({
        cells: [
          {
            code: "import matplotlib\nmatplotlib.use('module://matplotlib_inline.backend_inline')\nimport matplotlib.pyplot as plt\nplt.plot([1, 3, 2]); plt.show()",
          },
          {
            code: "from PIL import Image\nimport numpy as np\nfrom IPython.display import display\ndisplay(Image.fromarray((np.random.rand(3000, 4000, 3) * 255).astype('uint8')))",
          },
          {
            code: 'from IPython.display import JSON, SVG, display\ndisplay(JSON({\'a\': [1, 2]}))\ndisplay(SVG(\'<svg xmlns="http://www.w3.org/2000/svg" width="40" height="20"><rect width="40" height="20"/></svg>\'))\nstatus(\'step\', done=1)',
          },
        ],
        timeout: 60,
      });
      assert.equal(r.isError, undefined, text(r));
      const images = r.content.filter((c) => c.type === "image");
      assert.equal(images.length, 3, JSON.stringify(r.details.images));
      const [plot, big, svg] = r.details.images;
      assert.equal(plot.included, true);
      assert.equal(plot.sentMimeType, "image/png");
      assert.equal(big.width, 4000);
      assert.ok(big.included && big.sentWidth! <= 1568 && big.bytes! <= 750 * 1024, JSON.stringify(big));
      assert.equal(svg.mimeType, "image/svg+xml");
      assert.equal(svg.sentMimeType, "image/png");
      assert.deepEqual(r.details.jsonOutputs, [{ cell: 3, data: { a: [1, 2] } }]);
      assert.deepEqual(r.details.statusEvents, [{ op: "step", done: 1, cell: 3 }]);
    });

    test("an image that cannot be decoded is reported in the text, not dropped", async () => {
      const r = await call({
        cells: [
          {
            code: "from IPython.display import display\ndisplay({'image/png': 'bm90IGFuIGltYWdl'}, raw=True)",
          },
        ],
      });
      assert.equal(r.content.length, 1);
      // named once, at its place, with why
      assert.match(text(r), /^\[image left out · cell 1 · .+\]$/);
      assert.equal(r.details.images[0].included, false);
    });

    test("images only: the text labels the image at its place", async () => {
      const r = await call({
        cells: [
          {
            code: "from PIL import Image\nfrom IPython.display import display\ndisplay(Image.new('RGB', (8, 8)))",
          },
        ],
      });
      // PIL's display carries a text/plain repr (<PIL.Image.Image …>): the label stands instead of it
      const bare = await call({
        cells: [
          {
            code: "import base64, io\nfrom PIL import Image\nfrom IPython.display import display\nb = io.BytesIO(); Image.new('RGB', (8, 8)).save(b, 'PNG')\ndisplay({'image/png': base64.b64encode(b.getvalue()).decode()}, raw=True)",
          },
        ],
      });
      assert.equal(r.content[1]?.type, "image");
      assert.equal(text(r), "[image 1 · cell 1 · 8×8]");
      assert.equal(text(bare), "[image 1 · cell 1 · 8×8]");
      assert.equal(bare.content[1]?.type, "image");
    });

    test("update_display_data replaces the display in the model's text, where it was first shown", async () => {
      const r = await call({
        cells: [
          {
            code: 'print("before")\nh = display("step 0", display_id=True)\nprint("after")\nfor i in range(1, 4): h.update(f"step {i}")',
          },
          { code: 'h.update("step 9")\nprint("cell 2")' },
        ],
      });
      assert.equal(r.isError, undefined, text(r));
      assert.equal(text(r), "[1/2]\nbefore\n'step 9'\nafter\n[2/2]\ncell 2");
      // a display shown by an earlier call: a new line that says so; updated in place after that
      const later = await call({ cells: [{ code: 'h.update("step 10")\nprint("x")\nh.update("step 11")' }] });
      assert.equal(text(later), "[update of a display shown by an earlier call]\n'step 11'\nx");
    });

    test("an update this call cannot place (over 10,000 displays with ids) does not claim an earlier call", async () => {
      const r = await call({
        cells: [
          {
            code: "for i in range(10_001): display(i, display_id=f'd{i}')\nprint('shown')\ndisplay('again', display_id='d0', update=True)",
          },
        ],
      });
      const t = text(r);
      assert.match(
        t,
        /\nshown\n\[update of an earlier display whose place is not kept \(over 10,000 displays with ids\)\]\n'again'\n/,
      );
      assert.doesNotMatch(t, /earlier call/);
    });

    test("an image updated by display_id replaces the earlier image", async () => {
      const png = (color: string) =>
        `(lambda b: (Image.new('RGB', (4, 3), '${color}').save(b, 'PNG'), {'image/png': base64.b64encode(b.getvalue()).decode(), 'text/plain': '${color} square'})[1])(io.BytesIO())`;
      const r = await call({
        cells: [
          {
            code: `import base64, io\nfrom PIL import Image\nfrom IPython.display import display\nh = display(${png("red")}, raw=True, display_id=True)\nh.update(${png("blue")}, raw=True)`,
          },
        ],
      });
      assert.equal(text(r), "[image 1 · cell 1 · 4×3]\nblue square");
      const images = r.content.filter((c) => c.type === "image") as { data: string }[];
      assert.equal(images.length, 1);
      const { data } = await import("sharp").then((m) =>
        m.default(Buffer.from(images[0].data, "base64")).raw().toBuffer({ resolveWithObject: true }),
      );
      assert.deepEqual([...data.subarray(0, 3)], [0, 0, 255]);
    });

    test("progress reaches onUpdate while cells run", async () => {
      const gate = join(root, `gate-progress-${backend.name}`);
      const seen: string[] = [];
      const pending = call(
        {
          cells: [
            {
              code: `import os, time\nprint('first', flush=True)\nwhile not os.path.exists(${JSON.stringify(gate)}): time.sleep(0.02)\nprint('second')`,
            },
          ],
        },
        undefined,
        (p) => {
          const t = (p.content[0] as { text: string }).text;
          seen.push(`${p.details.cells[0].status}:${t}`);
          if (t.includes("first") && !existsSync(gate)) writeFileSync(gate, "");
        },
      );
      const r = await pending;
      assert.equal(text(r), "first\nsecond");
      assert.ok(seen.includes("running:first"), seen.join(" | "));
    });

    test("reset gives a fresh kernel for the first cell only; a cell that kills its kernel is not run again", async () => {
      await call({ cells: [{ code: "gone = 1" }] });
      const r = await call({
        cells: [{ code: "print('gone' in globals())" }, { code: "z = 1" }],
        reset: true,
      });
      assert.equal(text(r), "[1/2]\nFalse\n[2/2]\n(ok)");
      const marker = join(root, `crash-marker-${backend.name}`);
      const crash = await call({
        cells: [
          { code: "kept = 1" },
          {
            code: `import os\nopen(${JSON.stringify(marker)}, 'a').write('x'); os._exit(1)`,
          },
          { code: "print('never')" },
        ],
      });
      assert.equal(crash.isError, true);
      // A gateway restarts a kernel whose process ended and says so first (docs/backends.md).
      const died =
        backend.name === "local"
          ? "kernel process ended: exit code 1"
          : "its process ended and the server is restarting it";
      assert.equal(readFileSync(marker, "utf8"), "x", "the dying cell ran once");
      assert.equal(
        text(crash),
        [
          "[1/3]",
          "(ok)",
          "[2/3]",
          `The kernel died while cell 2 ran (${died}). It was restarted: all state is gone (variables, imports), and cell 2 was not run again; its effects up to the crash may have happened.`,
          "Cell 3 did not run.",
        ].join("\n"),
      );
      // The next result says the state went, at its top, once (docs/kernel-state.md).
      assert.match(
        text(await call({ cells: [{ code: "print('kept' in globals())" }] })),
        /^Note: This session's kernel died at \d\d:\d\d:\d\d while cell 2 of a python call ran \([^\n]*\); it was restarted, and its state is lost\. This call runs in the new kernel: [^\n]*\nFalse$/,
      );
      assert.equal(text(await call({ cells: [{ code: "print('again')" }] })), "again");
    });

    test("a kernel that stopped responding (sys.stdout = None) is not told to use a larger timeout", async () => {
      // ipykernel fails inside its own handler once sys.stdout is None: no reply and no idle ever
      // come, the interrupt does nothing, yet kernel_info on control is still answered (without
      // its idle). That is a wedged kernel, not a slow cell (docs/python-tool.md).
      await call({ cells: [{ code: "before = 1" }] });
      const r = await call({ cells: [{ code: "import sys\nsys.stdout = None" }], timeout: 5 });
      assert.equal(r.isError, true);
      assert.match(
        text(r),
        /^\(no output\)\nCell 1 timed out because the kernel stopped responding, not because the cell was slow: when the call's timeout of 5 seconds ran out, for [3-5] seconds it was busy with no output and no reply, and it answered on its control channel but could not finish even that request\. The interrupt did not help, so the kernel was restarted and its state is lost\. A larger timeout would not help\. The usual cause is that the code replaced or closed sys\.stdout or sys\.stderr \(ipykernel then fails inside its own message handler\); leave them in place \(contextlib\.redirect_stdout restores them\)\.$/,
      );
      assert.ok(!text(r).includes("Pass a larger timeout"));
      assert.match(
        text(await call({ cells: [{ code: "print('before' in globals())" }] })),
        /^Note: This session's kernel was restarted at \d\d:\d\d:\d\d: a python call reached its timeout of 5 seconds while cell 1 ran, and cell 1 did not stop when interrupted, so the kernel was restarted and its state is lost\. [^\n]*\nFalse$/,
      );
    });

    test("a kernel that cannot start gives an Error: result naming the cause", async () => {
      const bad = createRuntime({
        settings: testSettings(),
        stateRoot: join(root, "state"),
        kernelName: "no-such-kernel-nbagent",
        backend: await backend.create(),
      });
      try {
        const r = await createPythonTool({ cwd, runtime: bad }).execute("t", { cells: [{ code: "1" }] });
        assert.equal(r.isError, true);
        assert.match(text(r), /^Error: could not start the Python kernel: .*no-such-kernel-nbagent/);
        // The kernelspec is the host's setting, not the call's: the text says so, and not "use another".
        assert.doesNotMatch(text(r), /Use one of these names/);
        assert.match(text(r), /a call cannot choose another\.$/);
        if (backend.name === "gateway")
          assert.match(
            text(r),
            /^Error: could not start the Python kernel: the gateway at http:\/\/127\.0\.0\.1:\d+ has no kernelspec "no-such-kernel-nbagent" \(it has: (?:[\w.-]+, )*python3(?:, [\w.-]+)*\)\. The python tool starts the kernelspec "no-such-kernel-nbagent", which is set where nbagent runs \(NBAGENT_KERNEL, or the host's kernelName option; default python3\): a call cannot choose another\.$/,
          );
      } finally {
        await bad.dispose();
      }
    });

    test("an update held back by the progress interval is sent when the interval ends", async () => {
      const slow = createPythonTool({ cwd, runtime: py.rt, updateIntervalMs: 300 });
      const gate = join(root, `progress-gate-${backend.name}`);
      let sawLast = false;
      const r = await slow.execute(
        "t",
        {
          cells: [
            {
              code: `import os, time\nprint('first', flush=True)\nprint('last before quiet', flush=True)\nwhile not os.path.exists(${JSON.stringify(gate)}): time.sleep(0.02)`,
            },
          ],
          timeout: 20,
        },
        undefined,
        (partial) => {
          const t = (partial.content[0] as { text: string }).text;
          if (t.includes("last before quiet") && !sawLast) {
            sawLast = true;
            writeFileSync(gate, "");
          }
        },
      );
      assert.equal(sawLast, true, "the last line reached progress while the cell waited");
      assert.equal(r.isError, undefined, text(r));
    });
  });

/**
 * Issue 29, item 6 (docs/isolation.md, "The notebook and artifact tools under --sandbox"): a
 * `--sandbox` kernel plants links in its cwd — a notebook link to a 0600 notebook outside it, a
 * folder link out of it, a dangling link — and swaps a folder for a link while the tool works; then
 * the notebook tool (every action), the python tool's notebook_path and export_notebook are called
 * on them through the real CLI, as root and as nobody. Each is refused with an Error: that names the
 * path, where it leads and the root; nothing outside changes. What must keep working under
 * --sandbox (a notebook in cwd, a link inside cwd to a file inside cwd, an export in cwd) works, and
 * without --sandbox links are followed as docs/notebook-tool.md says.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import {
  type Answer,
  asWho,
  type Json,
  newPlace,
  own,
  type Place,
  PRINCIPALS,
  setUp,
  withHost,
} from "./harness.js";

setUp();

/** A notebook with one code cell holding `source`, as a file's text. */
function notebookText(source: string): string {
  const cell = { cell_type: "code", execution_count: null, id: "c0", metadata: {}, outputs: [], source };
  return `${JSON.stringify({ cells: [cell], metadata: {}, nbformat: 4, nbformat_minor: 5 }, null, 1)}\n`;
}

/** The victim: `<place>/outside/secret.ipynb`, 0600, in a 0700 folder of the host's user, not in cwd. */
function plantVictim(place: Place): {
  dir: string;
  file: string;
  marker: string;
  bytes: Buffer;
  mtimeMs: number;
} {
  const dir = join(place.dir, "outside");
  mkdirSync(dir, { mode: 0o700 });
  const marker = `SECRET-${randomBytes(8).toString("hex")}`;
  const file = join(dir, "secret.ipynb");
  writeFileSync(file, notebookText(`print(${JSON.stringify(marker)})`), { mode: 0o600 });
  if (place.who === "nobody") {
    own(dir);
    own(file);
  }
  return { dir, file, marker, bytes: readFileSync(file), mtimeMs: statSync(file).mtimeMs };
}

function assertUntouched(victim: ReturnType<typeof plantVictim>): void {
  assert.deepEqual(readFileSync(victim.file), victim.bytes, "the target outside cwd was changed");
  assert.equal(statSync(victim.file).mtimeMs, victim.mtimeMs, "the target outside cwd was written");
  assert.deepEqual(readdirSync(victim.dir), ["secret.ipynb"], "a file appeared outside cwd");
}

/** The refusal the model reads, for a path that is (or goes through) a link out of cwd. */
function assertRefused(r: Answer, shown: string, marker: string, cwd: string, how: RegExp): void {
  assert.equal(r.isError, true, r.text);
  assert.ok(
    r.text.startsWith(`Error: ${shown} resolves outside what the sandbox lets a kernel write: `),
    `not the sandbox's refusal for ${shown}:\n${r.text}`,
  );
  assert.match(r.text, how, r.text);
  assert.ok(r.text.includes(`which is not inside ${cwd}.`), `the root is not named:\n${r.text}`);
  assert.match(r.text, /A kernel can plant such a link.*Nothing was read or written\./, r.text);
  assert.ok(!r.text.includes(marker), `the tool returned the link target's content:\n${r.text}`);
}

const reEscape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** Every notebook action on `path` (with the parameters it needs), run last since it starts a kernel. */
function actions(path: string): [string, Json][] {
  const p = { notebook_path: path };
  return [
    ["read", { action: "read", ...p }],
    ["read one cell", { action: "read", ...p, cell_index: 0 }],
    ["edit", { action: "edit", ...p, cell_index: 0, content: "x = 1" }],
    ["replace", { action: "replace", ...p, cell_index: 0, old: "print", new: "len" }],
    ["insert", { action: "insert", ...p, cell_index: 0, content: "x = 2" }],
    ["delete", { action: "delete", ...p, cell_index: 0 }],
    ["move", { action: "move", ...p, cell_index: 0, to_index: 0 }],
    ["clear_outputs", { action: "clear_outputs", ...p }],
    ["tags", { action: "tags", ...p, cell_index: 0, add: ["t"] }],
    ["edit, execute", { action: "edit", ...p, cell_index: 0, content: "x = 3", execute: true }],
    ["run", { action: "run", ...p }],
  ];
}

for (const who of PRINCIPALS) {
  describe(`links a sandboxed kernel plants ${asWho(who)}`, { concurrency: false }, () => {
    test("--sandbox: a notebook link, a folder link and a dangling link out of cwd are refused by every notebook action, notebook_path and export_notebook; the target is untouched", async () => {
      const place = newPlace(who);
      const victim = plantVictim(place);
      const cwd = realpathSync(place.cwd);
      await withHost(place, ["--sandbox"], {}, async (host) => {
        const plant = await host.python(
          [
            "import os",
            `os.symlink(${JSON.stringify(victim.file)}, 'link.ipynb')`,
            `os.symlink(${JSON.stringify(victim.dir)}, 'sub')`,
            `os.symlink(${JSON.stringify(join(victim.dir, "made.ipynb"))}, 'dangling.ipynb')`,
            "print('PLANTED', sorted(os.listdir('.')))",
          ].join("\n"),
        );
        assert.match(plant.text, /PLANTED \['dangling.ipynb', 'link.ipynb', 'sub'\]/, plant.text);

        const toTarget = new RegExp(`it is a symbolic link to ${reEscape(victim.file)}, which`);
        for (const [name, params] of actions("link.ipynb")) {
          const r = await host.call("notebook", params);
          assertRefused(r, "link.ipynb", victim.marker, cwd, toTarget);
          assert.doesNotThrow(() => assertUntouched(victim), `after ${name}`);
        }
        const throughSub = new RegExp(
          `it goes through the symbolic link ${reEscape(join(cwd, "sub"))} -> ${reEscape(victim.dir)}, so it leads to ${reEscape(victim.file)}, which`,
        );
        for (const [, params] of actions("sub/secret.ipynb")) {
          const r = await host.call("notebook", params);
          assertRefused(r, "sub/secret.ipynb", victim.marker, cwd, throughSub);
        }
        // Creating through a planted folder link or a dangling link makes nothing outside.
        const made = await host.call("notebook", {
          action: "insert",
          notebook_path: "sub/new.ipynb",
          cell_index: 0,
          content: "x = 1",
        });
        assertRefused(made, "sub/new.ipynb", victim.marker, cwd, /symbolic link .*\/sub -> /);
        const dangling = await host.call("notebook", {
          action: "insert",
          notebook_path: "dangling.ipynb",
          cell_index: 0,
          content: "x = 1",
        });
        assertRefused(
          dangling,
          "dangling.ipynb",
          victim.marker,
          cwd,
          /it is a symbolic link to .*made\.ipynb/,
        );
        // The python tool's paths: a notebook's kernel, and a session exported as a notebook.
        const inKernel = await host.python("print('ran')", { notebook_path: "link.ipynb" });
        assertRefused(inKernel, "link.ipynb", victim.marker, cwd, toTarget);
        assert.doesNotMatch(inKernel.text, /^ran$/m);
        const exported = await host.python("y = 1", { export_notebook: "sub/exported.ipynb" });
        assert.equal(exported.isError, true, exported.text);
        assert.match(
          exported.text,
          /cannot export to sub\/exported\.ipynb resolves outside what the sandbox lets a kernel write: it goes through the symbolic link .*\/sub -> .*Nothing was read or written\. No cell ran\./,
          exported.text,
        );
        // A path outside cwd with no link at all: outside the sandbox's roots too.
        const direct = await host.call("notebook", { action: "read", notebook_path: victim.file });
        assert.equal(direct.isError, true, direct.text);
        assert.equal(
          direct.text,
          `Error: ${victim.file} is outside what the sandbox lets a kernel write: ${victim.file} is not inside ${cwd}. Under --sandbox notebooks are read and written only inside ${cwd}. Nothing was read or written.`,
        );
      });
      assertUntouched(victim);
      assert.equal(existsSync(join(victim.dir, "made.ipynb")), false);
    });

    test("--sandbox: a notebook in cwd, a link inside cwd to a file inside cwd and an export in cwd keep working", async () => {
      const place = newPlace(who);
      await withHost(place, ["--sandbox"], {}, async (host) => {
        const made = await host.call("notebook", {
          action: "insert",
          notebook_path: "nb.ipynb",
          cell_index: 0,
          content: "print('in cwd')",
          execute: true,
        });
        assert.equal(made.isError, false, made.text);
        assert.match(made.text, /^in cwd$/m, made.text);
        const plant = await host.python(
          "import os\nos.makedirs('d', exist_ok=True)\nos.symlink('nb.ipynb', 'inlink.ipynb')\nos.symlink('../nb.ipynb', 'd/up.ipynb')\nprint('ok')",
        );
        assert.match(plant.text, /^ok$/m, plant.text);
        const edit = await host.call("notebook", {
          action: "edit",
          notebook_path: "inlink.ipynb",
          cell_index: 0,
          content: "print('through the link')",
        });
        assert.equal(edit.isError, false, edit.text);
        const run = await host.call("notebook", { action: "run", notebook_path: "d/up.ipynb" });
        assert.equal(run.isError, false, run.text);
        assert.match(run.text, /^through the link$/m, run.text);
        const exported = await host.python("z = 41 + 1", { export_notebook: "exported.ipynb" });
        assert.equal(exported.isError, false, exported.text);
        assert.match(exported.text, /Exported .* to exported\.ipynb/, exported.text);
      });
      // The link was followed to the file inside cwd, which was replaced; the links stay links.
      assert.match(readFileSync(join(place.cwd, "nb.ipynb"), "utf8"), /through the link/);
      assert.ok(statSync(join(place.cwd, "nb.ipynb")).isFile());
      assert.match(readFileSync(join(place.cwd, "exported.ipynb"), "utf8"), /41 \+ 1/);
    });

    test("--sandbox: a folder swapped for a link out of cwd, over and over while the tool reads and edits, never leads it outside", async () => {
      const place = newPlace(who);
      const victim = plantVictim(place);
      // The lure: a notebook of the same name beside the secret one.
      const lure = join(victim.dir, "nb.ipynb");
      writeFileSync(lure, notebookText(`print(${JSON.stringify(victim.marker)})`), { mode: 0o600 });
      if (who === "nobody") own(lure);
      const lureBytes = readFileSync(lure);
      await withHost(place, ["--sandbox"], {}, async (host) => {
        await host.python(
          `import os\nos.makedirs('d')\nopen('d/nb.ipynb', 'w').write(${JSON.stringify(notebookText("print('inside')"))})`,
        );
        const swap = await host.python(
          [
            "import os, time",
            "print('swapping', flush=True)",
            "while True:",
            "    os.rename('d', 'd.real')",
            `    os.symlink(${JSON.stringify(victim.dir)}, 'd')`,
            "    os.unlink('d')",
            "    os.rename('d.real', 'd')",
            "    time.sleep(0.002)  # the real folder, for a moment: the tool's calls succeed sometimes",
          ].join("\n"),
          { wait: 1, timeout: 600 },
        );
        const runId = /run (r\d+)/.exec(swap.text)?.[1];
        assert.ok(runId, `the swapping cell did not go on in the background:\n${swap.text}`);
        const seen = { read: 0, edited: 0, refused: 0 };
        const readAndEdit = async (): Promise<void> => {
          for (let i = 0; i < 60; i++) {
            const read = await host.call("notebook", { action: "read", notebook_path: "d/nb.ipynb" });
            assert.ok(!read.text.includes(victim.marker), `read followed the swapped link:\n${read.text}`);
            if (read.isError) seen.refused++;
            else seen.read++;
            const edit = await host.call("notebook", {
              action: "edit",
              notebook_path: "d/nb.ipynb",
              cell_index: 0,
              content: `print('edit ${i}')`,
            });
            assert.ok(!edit.text.includes(victim.marker), edit.text);
            if (edit.isError) seen.refused++;
            else seen.edited++;
          }
        };
        try {
          await readAndEdit();
        } finally {
          // Else a failed assertion leaves the cell looping, and closing the host waits for it.
          const stopped = await host.call("runs", { run_id: runId, action: "interrupt" });
          assert.match(stopped.text, /KeyboardInterrupt/, stopped.text);
        }
        // Both outcomes happen: the race is real, and the tool still works between swaps.
        assert.ok(seen.read + seen.edited > 0, `nothing ever succeeded: ${JSON.stringify(seen)}`);
        process.stderr.write(`swap race ${asWho(who)}: ${JSON.stringify(seen)}\n`);
      });
      assert.deepEqual(readFileSync(lure), lureBytes, "the lure outside cwd was written");
      assert.deepEqual(readFileSync(victim.file), victim.bytes);
      assert.deepEqual(
        readdirSync(victim.dir).sort(),
        ["nb.ipynb", "secret.ipynb"],
        "a file appeared outside cwd",
      );
    });

    test("--sandbox: a hard link to a file outside cwd cannot be made (EXDEV: the cwd is a mount of its own)", async () => {
      const place = newPlace(who);
      const victim = plantVictim(place);
      await withHost(place, ["--sandbox"], {}, async (host) => {
        const r = await host.python(
          [
            "import errno, os",
            "try:",
            `    os.link(${JSON.stringify(victim.file)}, 'hard.ipynb')`,
            "    print('LINKED')",
            "except OSError as e:",
            "    print('REFUSED', errno.errorcode.get(e.errno))",
          ].join("\n"),
        );
        assert.match(r.text, /^REFUSED EXDEV$/m, r.text);
      });
      assert.equal(existsSync(join(place.cwd, "hard.ipynb")), false);
      assertUntouched(victim);
    });

    test("--sandbox: a python call's cwd outside the session's folder (given, or through a planted folder link) is refused; one inside runs", async () => {
      const place = newPlace(who);
      const victim = plantVictim(place);
      await withHost(place, ["--sandbox"], {}, async (host) => {
        const plant = await host.python(
          `import os\nos.symlink(${JSON.stringify(victim.dir)}, 'away')\nos.mkdir('inner')\nprint('planted')`,
        );
        assert.match(plant.text, /^planted$/m, plant.text);
        for (const [cwd, via] of [
          [victim.dir, ""],
          ["/", ""],
          ["away", ` (it leads to ${victim.dir})`],
        ] as const) {
          const r = await host.python("open('written-from-outside.txt', 'w').write('x')", { cwd });
          assert.equal(r.isError, true, r.text);
          const shown = cwd.startsWith("/") ? cwd : join(place.cwd, cwd);
          assert.equal(
            r.text,
            `Error: cwd ${shown} is outside what the sandbox lets a kernel write${via}: under --sandbox a kernel's working directory must be inside ${place.cwd}, since it becomes writable to the kernel. Pass a folder inside ${place.cwd}, or leave cwd out. Nothing was run.`,
          );
        }
        const inside = await host.python("import os\nprint(os.getcwd())", { cwd: "inner" });
        assert.match(inside.text, new RegExp(`^${reEscape(join(place.cwd, "inner"))}$`, "m"), inside.text);
      });
      assertUntouched(victim);
    });

    test("without --sandbox: a link out of cwd is followed, as docs/notebook-tool.md says", async () => {
      const place = newPlace(who);
      const victim = plantVictim(place);
      await withHost(place, [], {}, async (host) => {
        await host.python(`import os\nos.symlink(${JSON.stringify(victim.file)}, 'link.ipynb')`);
        const r = await host.call("notebook", { action: "read", notebook_path: "link.ipynb" });
        assert.equal(r.isError, false, r.text);
        assert.ok(r.text.includes(victim.marker), r.text);
      });
    });
  });
}

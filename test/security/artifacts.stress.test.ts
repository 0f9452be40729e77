/**
 * What a kernel can plant in the folders nbagent keeps artifacts in (docs/artifacts.md, "What a
 * kernel can plant"): links planted the way code in a kernel plants them, then the real spill path
 * (the sink, and a big output through the python tool on a real kernel) and the real readers (the
 * artifact tool, `nbagent artifact`). A file outside must stay untouched, and the model must read a
 * true text instead of a link's target. Runs as the current user (root here: `foreign` uses chown).
 */
import assert from "node:assert/strict";
import { execFile, spawnSync } from "node:child_process";
import {
  chownSync,
  existsSync,
  lstatSync,
  lutimesSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { after, before, describe, test } from "node:test";
import { ArtifactStore } from "../../src/output/artifacts.js";
import { OutputSink } from "../../src/output/sink.js";
import { createRuntime, type Runtime } from "../../src/runtime/index.js";
import { createArtifactTool } from "../../src/tools/artifact/artifact.js";
import { outputText } from "../../src/tools/output-text.js";
import { createPythonTool, type PythonParams } from "../../src/tools/python/python.js";
import type { ToolResult } from "../../src/tools/types.js";
import { testSettings } from "../settings.js";

const ROOT = resolve(new URL("../..", import.meta.url).pathname);
const MAIN = join(ROOT, "src/cli/main.ts");
const TSX = import.meta.resolve("tsx");

const base = mkdtempSync(join(tmpdir(), "nbagent-sec-artifacts-"));
after(() => rmSync(base, { recursive: true, force: true }));

const SECRET = "root:$6$the-hash-a-kernel-wants\n";
const text = (r: ToolResult<unknown>) => (r.content[0] as { text: string }).text;

/** A file outside every artifact folder, with content that must survive. */
function outsideFile(name: string): string {
  const dir = mkdtempSync(join(base, "outside-"));
  const path = join(dir, name);
  writeFileSync(path, SECRET, { mode: 0o600 });
  return path;
}

function freshStore(): ArtifactStore {
  return new ArtifactStore({ root: mkdtempSync(join(base, "state-")) });
}

const PLANTED_LEGACY = (id: string) =>
  `Error: artifact://${id} names a symbolic link in the session's artifacts folder, which code in a kernel can write, not a file nbagent wrote. nbagent never follows such a link, so nothing was read through it. Pass the artifact://<id> a result printed; to look at a file your own code wrote, open it in the kernel with the python tool.`;

test("a link planted at an artifact's own name before it is written: the host writes nothing through it", () => {
  const store = freshStore();
  const target = outsideFile("shadow");
  const ref = store.create("s");
  symlinkSync(target, ref.path); // a kernel that guessed (or watched for) the name
  const sink = new OutputSink({ maxBytes: 1024, artifact: ref });
  for (let i = 0; i < 200; i++) sink.push(`row ${i}\n`);
  const dump = sink.end();
  assert.equal(readFileSync(target, "utf8"), SECRET, "the file outside is untouched (not truncated)");
  assert.equal(readlinkSync(ref.path), target, "the planted link is left as it is");
  assert.equal(dump.artifactId, undefined);
  assert.equal(
    outputText(dump, [{ name: "cell 1", okWhenEmpty: true }])
      .split("\n")
      .at(-1),
    `[cell 1: 200 lines (1 KB); showing lines 1-38 and 153-200. The output could not be saved (writing it failed: EEXIST: file already exists, open '${ref.path}'); only what is shown here is left.]`,
  );
});

test("an output folder that is a link is not written into", () => {
  const store = freshStore();
  const elsewhere = mkdtempSync(join(base, "elsewhere-"));
  mkdirSync(store.sessionDir("s"), { recursive: true });
  symlinkSync(elsewhere, store.outputsDir("s"));
  const ref = store.create("s");
  const sink = new OutputSink({ maxBytes: 1024, artifact: ref });
  for (let i = 0; i < 200; i++) sink.push(`row ${i}\n`);
  const dump = sink.end();
  assert.deepEqual(readdirSync(elsewhere), [], "nothing was created through the link");
  assert.equal(dump.artifactId, undefined);
  assert.equal(dump.artifactError, `${store.outputsDir("s")} is a symbolic link; it is not followed`);
});

/** Why a private tmpfs cannot be mounted here, or undefined when it can. */
function cannotMount(dir: string): string | undefined {
  const probe = spawnSync("unshare", ["--mount", "sh", "-c", `mount -t tmpfs -o size=1m tmpfs '${dir}'`], {
    encoding: "utf8",
  });
  if (probe.error) return `unshare is not available: ${probe.error.message}`;
  if (probe.status !== 0) return `cannot mount a tmpfs in a private mount namespace: ${probe.stderr.trim()}`;
  return undefined;
}

test("a marker link planted beside a spilling artifact: the disk fills, the link's target is untouched", async (t) => {
  const state = mkdtempSync(join(base, "full-"));
  const why = cannotMount(state);
  if (why) {
    t.skip(why);
    return;
  }
  const target = outsideFile("passwd");
  const out = await new Promise<string>((done, fail) =>
    execFile(
      "unshare",
      [
        "--mount",
        "sh",
        "-c",
        `mount -t tmpfs -o size=1m tmpfs "$1" && exec "$2" --import "$3" "$4" "$1" "$5"`,
        "sh",
        state,
        process.execPath,
        TSX,
        join(ROOT, "test/security/fixtures/spill-on-full-disk.ts"),
        target,
      ],
      (err, stdout, stderr) => (err ? fail(new Error(`${err.message}\n${stderr}`)) : done(stdout)),
    ),
  );
  const r = JSON.parse(out);
  assert.equal(
    readFileSync(target, "utf8"),
    SECRET,
    "the planted marker's target is neither truncated nor written",
  );
  assert.equal(r.artifactId, r.id, "the artifact keeps what reached it");
  assert.equal(r.incomplete.reason, "ENOSPC");
  assert.ok(r.incomplete.keptBytes > 0 && r.incomplete.keptBytes <= 1024 * 1024);
  assert.match(r.notice, /Only the first [\d,]+ of the output's [\d,]+ bytes were saved, to artifact:\/\//);
  assert.match(r.notice, /the disk is full: ENOSPC/);
});

describe("the readers never follow what was planted", () => {
  const store = freshStore();
  const tool = createArtifactTool({ artifacts: store });
  const read = (params: Record<string, unknown>) => tool.execute("t", params as never);
  const target = outsideFile("shadow");
  let real: { id: string; path: string };

  before(() => {
    real = store.create("s");
    writeFileSync(real.path, "kept line 1\nkept line 2\n");
    const legacy = store.artifactsDir("s");
    mkdirSync(legacy, { recursive: true });
    symlinkSync(target, join(legacy, "stolen.log"));
    spawnSync("mkfifo", [join(legacy, "fifo.log")]);
    writeFileSync(join(legacy, "foreign.log"), "someone else's\n");
    chownSync(join(legacy, "foreign.log"), 65534, 65534);
    writeFileSync(join(legacy, "lzz0-0123456789.log"), "an artifact of the old layout\n");
    // The same id as a real artifact, planted in the kernel's folder: the real one is read.
    symlinkSync(target, join(legacy, `${real.id}.log`));
    symlinkSync(target, join(store.outputsDir("s"), "inside.log"));
  });

  test("a link named like an artifact id: refused with a true text, its target not read", async () => {
    for (const params of [{ id: "stolen" }, { id: "artifact://stolen", pattern: "root" }]) {
      const r = await read(params);
      assert.equal(r.isError, true);
      assert.equal(text(r), PLANTED_LEGACY("stolen"));
      assert.deepEqual(r.details, {
        id: "stolen",
        uri: "artifact://stolen",
        lines: undefined,
        error: "refused",
      });
    }
    assert.equal(
      text(await read({ id: "inside" })),
      "Error: artifact://inside names a symbolic link in nbagent's own output folder, not a file nbagent wrote. nbagent never follows such a link, so nothing was read through it. Pass the artifact://<id> a result printed; to look at a file your own code wrote, open it in the kernel with the python tool.",
    );
    assert.equal(store.resolve("stolen"), undefined);
  });

  test("a FIFO is refused at once (the read never blocks), another user's file is not read", async () => {
    assert.equal(
      text(await read({ id: "fifo" })),
      "Error: artifact://fifo names something that is not a regular file (a FIFO, a device or a folder) in the session's artifacts folder, which code in a kernel can write, so it was not read. Pass the artifact://<id> a result printed; to look at a file your own code wrote, open it in the kernel with the python tool.",
    );
    assert.equal(
      text(await read({ id: "foreign" })),
      "Error: artifact://foreign names a file of another user (uid 65534) in the session's artifacts folder, which code in a kernel can write, not a file nbagent wrote, so it was not read. Pass the artifact://<id> a result printed; to look at a file your own code wrote, open it in the kernel with the python tool.",
    );
  });

  test("the real artifact is read even when a link of its id was planted in the kernel's folder", async () => {
    assert.equal(
      text(await read({ id: real.id })),
      `Lines 1-2 of 2 of artifact://${real.id} (24 bytes):\n1\tkept line 1\n2\tkept line 2\nEnd of artifact://${real.id}.`,
    );
  });

  test("an artifact of the old layout (in the kernel's folder) still reads the same", async () => {
    assert.equal(
      text(await read({ id: "lzz0-0123456789" })),
      "Line 1 of 1 of artifact://lzz0-0123456789 (30 bytes):\n1\tan artifact of the old layout\nEnd of artifact://lzz0-0123456789.",
    );
  });

  test("nbagent artifact refuses the same way (exit 1) and prints nothing of the target", async () => {
    const cli = await new Promise<{ code: number | null; stdout: string; stderr: string }>((done) =>
      execFile(
        process.execPath,
        ["--import", TSX, MAIN, "artifact", "stolen", "--root", store.root],
        (err, stdout, stderr) =>
          done({ code: err ? ((err as { code?: number }).code ?? null) : 0, stdout, stderr }),
      ),
    );
    assert.equal(cli.code, 1);
    assert.equal(cli.stdout, "");
    assert.equal(cli.stderr, `${PLANTED_LEGACY("stolen")}\n`);
    assert.equal(readFileSync(target, "utf8"), SECRET);
  });
});

test("prune removes links themselves only as markers, never follows one, never enters a linked folder", async () => {
  const store = freshStore();
  const target = outsideFile("shadow");
  const old = (Date.now() - 30 * 24 * 3600 * 1000) / 1000;
  const legacy = store.artifactsDir("s");
  mkdirSync(legacy, { recursive: true });
  // Named like the store's files, planted by a kernel: a link as the log, a marker pointing outside.
  const plantedLog = join(legacy, "lzz0-0123456789.log");
  const plantedMarker = join(legacy, "lzz0-0123456789.incomplete");
  symlinkSync(target, plantedLog);
  symlinkSync(target, plantedMarker);
  for (const p of [plantedLog, plantedMarker]) lutimesSync(p, old, old);
  // A session folder that is a link to a folder full of old files named like the store's.
  const elsewhere = mkdtempSync(join(base, "elsewhere-"));
  mkdirSync(join(elsewhere, "outputs"));
  const victim = join(elsewhere, "outputs", "lzz0-0123456789.log");
  writeFileSync(victim, "not the store's\n");
  lutimesSync(victim, old, old);
  symlinkSync(elsewhere, join(store.root, "sessions", "linked"));
  // The store's own old artifact with a marker it made: both go.
  const own = store.create("s");
  writeFileSync(own.path, "x\n");
  const ownMarker = own.path.replace(/\.log$/, ".incomplete");
  symlinkSync("ENOSPC", ownMarker);
  for (const p of [own.path, ownMarker]) lutimesSync(p, old, old);

  assert.equal(await store.prune(24 * 3600 * 1000), 2);
  assert.equal(existsSync(own.path) || existsSync(ownMarker), false);
  assert.equal(lstatSync(plantedLog).isSymbolicLink(), true, "a link as a log is the kernel's: left alone");
  assert.equal(
    lstatSync(plantedMarker).isSymbolicLink(),
    true,
    "a link with a path for text is no marker of ours",
  );
  assert.equal(readFileSync(victim, "utf8"), "not the store's\n", "a linked session folder is not entered");
  assert.equal(readFileSync(target, "utf8"), SECRET);
});

describe("a real kernel plants links in its ARTIFACTS folder", () => {
  let rt: Runtime;
  let python: ReturnType<typeof createPythonTool>;
  let artifact: ReturnType<typeof createArtifactTool>;
  const target = outsideFile("shadow");
  const run = (code: string) => python.execute("t", { cells: [{ code }] } as PythonParams);

  before(() => {
    rt = createRuntime({ settings: testSettings(), stateRoot: mkdtempSync(join(base, "rt-")) });
    python = createPythonTool({ cwd: mkdtempSync(join(base, "cwd-")), runtime: rt, updateIntervalMs: 0 });
    artifact = createArtifactTool({ artifacts: rt.artifacts });
  });
  after(() => rt.dispose());

  test("the spill goes where the kernel cannot plant, planted names read as refused, nothing outside changes", async () => {
    const planted = await run(
      [
        "import os",
        "a = os.environ['NBAGENT_ARTIFACTS']",
        "os.makedirs(a, exist_ok=True)",
        `os.symlink(${JSON.stringify(target)}, os.path.join(a, 'stolen.log'))`,
        "os.mkfifo(os.path.join(a, 'fifo.log'))",
        "with open(os.path.join(a, 'mine.csv'), 'w') as f: f.write('user data\\n')",
        "print(sorted(os.listdir(a)))",
      ].join("\n"),
    );
    assert.equal(text(planted), "['fifo.log', 'mine.csv', 'stolen.log']");

    const big = await run(
      "import os\nfor i in range(5000): print(f'line {i} ' + 'z' * 50)\n" +
        // While the host spills, the kernel plants a marker link beside every file in its own folder.
        "a = os.environ['NBAGENT_ARTIFACTS']\n" +
        "for n in os.listdir(a):\n" +
        `    if n.endswith('.log'): os.symlink(${JSON.stringify(target)}, os.path.join(a, n[:-4] + '.incomplete'))\n`,
    );
    const id = /artifact:\/\/([\w-]+)/.exec(text(big))?.[1];
    assert.ok(id, text(big));
    assert.ok(
      readdirSync(rt.artifacts.outputsDir(rt.defaultSessionId)).includes(`${id}.log`),
      "the host's file is in its own folder",
    );
    const page = text(await artifact.execute("t", { id, offset: 5000, limit: 1 } as never));
    assert.equal(
      page,
      `Line 5,000 of 5,000 of artifact://${id} (296.8 KB):\n5000\tline 4999 ${"z".repeat(50)}\nEnd of artifact://${id}.`,
    );

    assert.equal(text(await artifact.execute("t", { id: "stolen" } as never)), PLANTED_LEGACY("stolen"));
    assert.match(
      text(await artifact.execute("t", { id: "fifo" } as never)),
      /names something that is not a regular file/,
    );
    assert.equal(readFileSync(target, "utf8"), SECRET, "the file outside is untouched");

    // The user's own files in ARTIFACTS are never the store's: prune leaves them all.
    assert.equal(await rt.artifacts.prune(0, Date.now() + 60_000), 1, "only the spilled artifact goes");
    assert.deepEqual(readdirSync(rt.artifacts.artifactsDir(rt.defaultSessionId)).sort(), [
      "fifo.incomplete",
      "fifo.log",
      "mine.csv",
      "stolen.incomplete",
      "stolen.log",
    ]);
    assert.equal(readFileSync(target, "utf8"), SECRET);
  });
});

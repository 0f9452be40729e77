/**
 * An artifact the disk cannot hold, for real: the state directory is a 1 MiB tmpfs (mounted in a
 * private mount namespace of the batch, so nothing outside sees or keeps it) and a python call prints
 * about 2 MB. The result must say that only the first N bytes were saved and why, never that the
 * artifact holds all of it; reading past what was kept, with the artifact tool and with
 * `nbagent artifact`, must say where it ends and that the rest was not saved (docs/artifacts.md).
 * Needs root (or CAP_SYS_ADMIN) for unshare + mount; skipped with the reason otherwise.
 */
import assert from "node:assert/strict";
import { execFile, spawn, spawnSync } from "node:child_process";
import { mkdir, mkdtemp, readdir, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { test } from "node:test";
import { ArtifactStore } from "../../src/output/artifacts.js";
import { OutputSink } from "../../src/output/sink.js";
import { outputText } from "../../src/tools/output-text.js";

const ROOT = resolve(new URL("../..", import.meta.url).pathname);
const MAIN = join(ROOT, "src/cli/main.ts");
const TSX = import.meta.resolve("tsx");

// biome-ignore lint/suspicious/noExplicitAny: tool results are arbitrary JSON
type Json = any;

function text(result: Json): string {
  return (result.content as { type: string; text?: string }[]).map((c) => c.text ?? "").join("\n");
}

/** Why a private tmpfs cannot be mounted here, or undefined when it can. */
function cannotMount(dir: string): string | undefined {
  const probe = spawnSync("unshare", ["--mount", "sh", "-c", `mount -t tmpfs -o size=1m tmpfs '${dir}'`], {
    encoding: "utf8",
  });
  if (probe.error) return `unshare is not available: ${probe.error.message}`;
  if (probe.status !== 0) return `cannot mount a tmpfs in a private mount namespace: ${probe.stderr.trim()}`;
  return undefined;
}

test("a disk that fills up keeps the artifact's first bytes, and every reader is told the rest is lost", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "nbagent-artifact-full-"));
  const state = join(dir, "state");
  await mkdir(state);
  const why = cannotMount(state);
  if (why) {
    t.skip(why);
    return;
  }
  // The batch lives in the namespace with the 1 MiB tmpfs as its state directory (artifacts go there).
  const child = spawn(
    "unshare",
    [
      "--mount",
      "sh",
      "-c",
      `mount -t tmpfs -o size=1m tmpfs "$1" && exec "$2" --import "$3" "$4" batch --cwd "$5"`,
      "sh",
      state,
      process.execPath,
      TSX,
      MAIN,
      dir,
    ],
    { env: { ...process.env, NBAGENT_STATE_DIR: state }, stdio: ["pipe", "pipe", "pipe"] },
  );
  let out = "";
  let err = "";
  const waiting: ((line: string) => void)[] = [];
  child.stdout.setEncoding("utf8").on("data", (d: string) => {
    out += d;
    for (let nl = out.indexOf("\n"); nl >= 0; nl = out.indexOf("\n")) {
      const line = out.slice(0, nl);
      out = out.slice(nl + 1);
      waiting.shift()?.(line);
    }
  });
  child.stderr.setEncoding("utf8").on("data", (d: string) => {
    err += d;
  });
  const exited = new Promise<number | null>((r) => child.on("close", (code) => r(code)));
  const call = (tool: string, params: Json): Promise<Json> =>
    new Promise((resolveCall, reject) => {
      waiting.push((line) => resolveCall(JSON.parse(line)));
      exited.then(() => reject(new Error(`batch exited; stderr: ${err}`)));
      child.stdin.write(`${JSON.stringify({ tool, params })}\n`);
    });
  try {
    // 40,000 lines of 53 bytes: 2,120,000 bytes, twice what the tmpfs holds.
    const big = await call("python", {
      cells: [{ code: 'for i in range(40000):\n    print(f"line {i:06d} " + "x" * 40)' }],
    });
    const bigText = text(big);
    const output = big.details.output;
    assert.equal(output.totalBytes, 2_120_000);
    const inc = output.artifactIncomplete;
    assert.ok(inc, `artifactIncomplete in details.output: ${JSON.stringify(output)}`);
    assert.equal(inc.reason, "ENOSPC");
    assert.ok(inc.keptBytes > 0 && inc.keptBytes <= 1024 * 1024, `kept ${inc.keptBytes}`);
    assert.equal(inc.keptLines, Math.ceil(inc.keptBytes / 53));
    assert.equal(inc.lastLinePartial, inc.keptBytes % 53 !== 0);
    const id = output.artifactId;
    assert.match(id, /^[0-9a-z]+-[0-9a-f]{10}$/);
    const count = (n: number) => n.toLocaleString("en-US");
    const notice = bigText.split("\n").at(-1);
    assert.equal(
      notice,
      `[cell 1: 40,000 lines (2.0 MB); showing lines 1-383 and 39,426-40,000. Only the first ${count(inc.keptBytes)} of the output's 2,120,000 bytes were saved, to artifact://${id} (lines 1-${count(inc.keptLines)}${inc.lastLinePartial ? ", the last in part" : ""}) — the disk is full: ENOSPC: no space left on device, write; the rest is lost. Read what was kept with the artifact tool: {"id":"${id}","offset":384}]`,
    );
    assert.doesNotMatch(bigText, /All of it/);

    // The artifact tool past what was kept.
    const past = await call("artifact", { id, offset: 39_426 });
    assert.equal(past.isError, true);
    assert.equal(
      text(past),
      `Error: offset 39,426 is past the end: artifact://${id} has ${count(inc.keptLines)} lines (${count(inc.keptBytes)} bytes); the rest of the output was not saved (the disk is full). Its last page: {"id":"${id}","offset":${inc.keptLines - 199}}`,
    );
    // Its last page ends by saying the same, not plainly "End of".
    const last = await call("artifact", { id, offset: inc.keptLines - 199 });
    assert.equal(last.isError, false, text(last));
    assert.equal(
      text(last).split("\n").at(-1),
      `End of artifact://${id} — it ends at ${count(inc.keptBytes)} bytes: the rest of the output was not saved (the disk is full).`,
    );
    assert.equal(last.details.incomplete.reason, "ENOSPC");

    // `nbagent artifact` in the batch's mount namespace (where the tmpfs is).
    const cli = await new Promise<{ code: number | null; stdout: string; stderr: string }>((done) => {
      execFile(
        "nsenter",
        [
          "-t",
          String(child.pid),
          "-m",
          process.execPath,
          "--import",
          TSX,
          MAIN,
          "artifact",
          id,
          "--offset",
          "39426",
        ],
        { env: { ...process.env, NBAGENT_STATE_DIR: state } },
        (e, stdout, stderr) =>
          done({ code: e ? ((e as { code?: number }).code ?? null) : 0, stdout, stderr }),
      );
    });
    assert.equal(cli.code, 1, cli.stderr);
    assert.equal(cli.stdout, "");
    assert.equal(
      cli.stderr,
      `Error: --offset 39426 is past the end: ${id} has ${inc.keptLines} lines; it ends after ${inc.keptBytes} bytes; the rest of the output was not saved (the disk is full).\n`,
    );
  } finally {
    child.stdin.end();
    await exited;
  }
});

test("an artifact that cannot even be created gets no id: the notice says only what is shown is left", async () => {
  const dir = await mkdtemp(join(tmpdir(), "nbagent-artifact-nodir-"));
  // A file where the artifacts directory should be: creating the artifact fails for real (EEXIST).
  const blocker = join(dir, "artifacts");
  await writeFile(blocker, "not a directory");
  const sink = new OutputSink({
    maxBytes: 1024,
    artifact: { id: "mx0-0123456789", path: join(blocker, "a.log") },
  });
  for (let i = 0; i < 200; i++) sink.push(`row ${i}\n`);
  const dump = sink.end();
  assert.equal(dump.truncated, true);
  assert.equal(dump.artifactId, undefined);
  assert.equal(dump.artifactIncomplete, undefined);
  assert.match(dump.artifactError ?? "", /^EEXIST: file already exists, mkdir/);
  const notice = outputText(dump, [{ name: "cell 1", okWhenEmpty: true }])
    .split("\n")
    .at(-1);
  assert.equal(
    notice,
    `[cell 1: 200 lines (1 KB); showing lines 1-38 and 153-200. The output could not be saved (writing it failed: EEXIST: file already exists, mkdir '${blocker}'); only what is shown here is left.]`,
  );
  assert.doesNotMatch(notice ?? "", /artifact:\/\//);
});

test("pruning an old incomplete artifact removes its marker too (a link to nowhere is still ours)", async () => {
  const root = await mkdtemp(join(tmpdir(), "nbagent-prune-incomplete-"));
  const store = new ArtifactStore({ root });
  const ref = store.create("s1");
  await writeFile(ref.path, "kept start\n");
  await symlink("ENOSPC", ref.path.replace(/\.log$/, ".incomplete"));
  assert.deepEqual(store.incomplete(ref.path), { reason: "ENOSPC" });
  assert.equal(await store.prune(0, Date.now() + 60_000), 2);
  assert.deepEqual(await readdir(store.outputsDir("s1")), []);
  assert.equal(store.incomplete(ref.path), undefined);
});

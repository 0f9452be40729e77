/**
 * The command line's own help and batch's exit codes (docs/cli.md): every subcommand answers
 * --help with what it does, its usage, options, exit codes and an example; `nbagent --help` lists
 * them; batch exits 0/1/2 by what its lines got, and 130 when interrupted, having said so.
 */
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { test } from "node:test";
import { COMMANDS } from "../../src/cli/commands.js";
import { ArtifactStore } from "../../src/output/index.js";
import { type Json, nbagent, spawnNbagent, tempDir } from "./helpers.js";

test("every subcommand's help says what it does, its usage, options, exit codes and an example", async () => {
  assert.deepEqual(Object.keys(COMMANDS).sort(), [
    "artifact",
    "batch",
    "call",
    "demo",
    "doctor",
    "gateway",
    "mcp",
    "notebook",
    "python",
    "run",
    "sessions",
    "view",
  ]);
  for (const [name, command] of Object.entries(COMMANDS)) {
    const help = (await command.load()).help;
    assert.match(help, new RegExp(`^nbagent ${name} — \\S.+\\n\\nusage: nbagent ${name}\\b`), name);
    assert.match(help, /\n(options|arguments):\n {2}\S/, `${name}: options`);
    assert.match(help, /\nexit( \(the highest that applies\))?:/, `${name}: exit codes`);
    assert.match(
      help,
      new RegExp(`\\nexamples?:\\n(  .*\\n)*  (nbagent ${name}|printf)`),
      `${name}: an example`,
    );
    assert.ok(command.summary.length < 100 && !command.summary.includes("\n"), `${name}: a one-line summary`);
  }
});

test("nbagent --help and help list the commands; <command> --help and help <command> describe one", async () => {
  for (const args of [["--help"], ["help"], ["-h"]]) {
    const r = await nbagent(args);
    assert.equal(r.code, 0, r.stderr);
    for (const [name, c] of Object.entries(COMMANDS))
      assert.ok(r.stdout.includes(`  ${name.padEnd(10)} ${c.summary}\n`));
    assert.match(r.stdout, /nbagent <command> --help/);
  }
  const run = await nbagent(["run", "--help"]);
  assert.equal(run.code, 0);
  assert.equal(run.stdout, (await COMMANDS.run.load()).help);
  const topic = await nbagent(["help", "batch"]);
  assert.equal(topic.stdout, (await COMMANDS.batch.load()).help);
  const none = await nbagent([]);
  assert.equal(none.code, 2);
  assert.match(none.stderr, /^nbagent — .*\n\nusage: nbagent <command>/);
  const unknown = await nbagent(["help", "nope"]);
  assert.equal(unknown.code, 2);
  assert.match(unknown.stderr, /no command 'nope'/);
});

test("nbagent --version and -V print package.json's version", async () => {
  const { version } = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as {
    version: string;
  };
  for (const flag of ["--version", "-V"]) {
    const r = await nbagent([flag]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, `${version}\n`);
  }
});

/** A state directory holding one artifact; returns its env and id. */
async function stateWithArtifact(): Promise<{ env: Record<string, string>; id: string }> {
  const root = await tempDir("nbagent-state-");
  const ref = new ArtifactStore({ root }).create("batch");
  writeFileSync(ref.path, "one\ntwo\n");
  return { env: { NBAGENT_STATE_DIR: root }, id: ref.id };
}

const lines = (stdout: string): Json[] =>
  stdout
    .split("\n")
    .filter((l) => l)
    .map((l) => JSON.parse(l));

test("batch exits 0 when no result is an error, 1 when one is, 2 when a line is not a call", async () => {
  const { env, id } = await stateWithArtifact();
  const good = JSON.stringify({ tool: "artifact", params: { id } });
  const bad = JSON.stringify({ tool: "artifact", params: { id, offset: 9 } });

  const ok = await nbagent(["batch"], { env, input: `${good}\n\n${good}\n` });
  assert.equal(ok.code, 0, ok.stderr);
  assert.equal(lines(ok.stdout).length, 2, "blank lines are skipped");

  const oneError = await nbagent(["batch"], { env, input: `${bad}\n${good}\n` });
  assert.equal(oneError.code, 1, oneError.stderr);
  assert.deepEqual(
    lines(oneError.stdout).map((r) => r.isError),
    [true, false],
  );

  const input = [
    "not json",
    good,
    '{"tool":"nope","params":{}}',
    '{"tool":"artifact","params":[1]}',
    "[1, 2]",
    bad,
  ].join("\n");
  const mixed = await nbagent(["batch"], { env, input: `${input}\n` });
  assert.equal(mixed.code, 2, mixed.stderr);
  const out = lines(mixed.stdout);
  assert.equal(out.length, 6, "every line is answered, in order");
  const shape = '{"tool": one of "notebook", "python", "artifact", "runs", "kernels", "params": {…}}';
  assert.equal(out[0].line, 1);
  assert.match(out[0].error, /^line 1 is not JSON \(.+\); each line is /);
  assert.equal(out[1].isError, false);
  assert.equal(out[2].error, `line 3 names an unknown tool "nope"; each line is ${shape}`);
  assert.equal(out[3].error, `line 4 "params" is not a JSON object; each line is ${shape}`);
  assert.equal(out[4].error, `line 5 is not a JSON object; each line is ${shape}`);
  assert.equal(out[5].isError, true);

  const usage = await nbagent(["batch", "--bogus"], { env });
  assert.equal(usage.code, 2);
  assert.match(usage.stderr, /nbagent batch: .*bogus/);
});

test("batch interrupted while waiting for input exits 130 and says how many lines it answered", async () => {
  const { env, id } = await stateWithArtifact();
  const child = spawnNbagent(["batch"], { env });
  let stdout = "";
  let stderr = "";
  child.stderr.setEncoding("utf8").on("data", (d: string) => {
    stderr += d;
  });
  const exited = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
  const answered = new Promise<void>((resolve) => {
    child.stdout.setEncoding("utf8").on("data", (d: string) => {
      stdout += d;
      if (stdout.includes("\n")) resolve();
    });
  });
  child.stdin.write(`${JSON.stringify({ tool: "artifact", params: { id } })}\n`);
  await answered; // the batch now waits for its next line, stdin still open
  child.kill("SIGINT");
  assert.equal(await exited, 130);
  assert.equal(lines(stdout).length, 1);
  assert.match(stderr, /^nbagent batch: interrupted; 1 line answered, the rest not read\n$/);
});

/**
 * The artifact tool as an agent uses it, on a real kernel: a python call through `nbagent batch`
 * spills a long output; the agent reads the pointer, then pages and searches the artifact with the
 * artifact tool in the same batch (each line sent after the previous result arrived), and again
 * with `nbagent call artifact` from another process sharing the state directory.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { type Json, nbagent, resultText, spawnNbagent, tempDir } from "./helpers.js";

/** Resolves with each stdout line of a child in turn. */
function lineReader(stream: NodeJS.ReadableStream): () => Promise<string> {
  let buffered = "";
  const waiting: ((line: string) => void)[] = [];
  const lines: string[] = [];
  stream.setEncoding("utf8");
  stream.on("data", (d: string) => {
    buffered += d;
    for (let nl = buffered.indexOf("\n"); nl >= 0; nl = buffered.indexOf("\n")) {
      const line = buffered.slice(0, nl);
      buffered = buffered.slice(nl + 1);
      const w = waiting.shift();
      if (w) w(line);
      else lines.push(line);
    }
  });
  return () => {
    const line = lines.shift();
    return line !== undefined ? Promise.resolve(line) : new Promise((resolve) => waiting.push(resolve));
  };
}

test("batch: python spills to an artifact; the artifact tool pages and searches it; call artifact too", async (t) => {
  const dir = await tempDir();
  const env = { NBAGENT_STATE_DIR: await tempDir("nbagent-state-") };
  const child = spawnNbagent(["batch", "--cwd", dir], { env });
  // the child must not outlive a failed assertion (it would wait on stdin forever)
  t.after(() => {
    if (child.exitCode === null) child.kill();
  });
  let stderr = "";
  child.stderr.setEncoding("utf8").on("data", (d: string) => {
    stderr += d;
  });
  const exited = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
  const next = lineReader(child.stdout);
  const send = async (tool: string, params: Json): Promise<Json> => {
    child.stdin.write(`${JSON.stringify({ tool, params })}\n`);
    return JSON.parse(await next());
  };

  const code = "for i in range(20000):\n    print(f'step {i}', 'WARN' if i % 4000 == 1 else 'ok')";
  const py = await send("python", { cells: [{ code }] });
  assert.equal(py.isError, false, resultText(py));
  const id = /artifact:\/\/([\w-]+)/.exec(resultText(py))?.[1];
  assert.ok(id, `the result points to an artifact: ${resultText(py).slice(-300)}`);

  const page = await send("artifact", { id: `artifact://${id}`, offset: 101, limit: 3 });
  assert.equal(page.isError, false);
  assert.equal(
    resultText(page),
    `Lines 101-103 of 20,000 of artifact://${id} (262.6 KB):\n101\tstep 100 ok\n102\tstep 101 ok\n103\tstep 102 ok\nNext: {"id":"${id}","offset":104,"limit":3}`,
  );
  const found = await send("artifact", { id, pattern: "WARN$" });
  assert.equal(
    resultText(found),
    [
      `5 lines of 20,000 in artifact://${id} match "WARN$" (case-sensitive). Matches 1-5:`,
      "    2\tstep 1 WARN",
      " 4002\tstep 4001 WARN",
      " 8002\tstep 8001 WARN",
      "12002\tstep 12001 WARN",
      "16002\tstep 16001 WARN",
      "No more matches.",
    ].join("\n"),
  );
  const missing = await send("artifact", { id: "artifact://gone" });
  assert.equal(missing.isError, true);
  assert.match(resultText(missing), /^Error: artifact:\/\/gone not found\./);
  child.stdin.end();
  assert.equal(await exited, 1, `an error result makes the batch exit 1: ${stderr}`);

  // Another process with the same state directory reads the same artifact.
  const last = await nbagent(["call", "artifact", JSON.stringify({ id, offset: 20000 })], { env });
  assert.equal(last.code, 0, last.stderr);
  assert.equal(
    last.stdout,
    `Line 20,000 of 20,000 of artifact://${id} (262.6 KB):\n20000\tstep 19999 ok\nEnd of artifact://${id}.\n`,
  );
  const past = await nbagent(["call", "artifact", JSON.stringify({ id, offset: 20001 })], { env });
  assert.equal(past.code, 1);
  assert.match(
    past.stdout,
    /^Error: offset 20,001 is past the end: artifact:\/\/\S+ has 20,000 lines \([\d,]+ bytes\)\./,
  );
});

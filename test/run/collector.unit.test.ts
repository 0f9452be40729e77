import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { JupyterMessage } from "../../src/kernel/types.js";
import { CellOutputCollector, DisplayRegistry, type NbOutput } from "../../src/runtime/collector.js";
import { foldStreamText } from "../../src/runtime/stream-text.js";

let seq = 0;
function msg(msg_type: string, content: Record<string, unknown>): JupyterMessage {
  seq++;
  return {
    header: {
      msg_id: `m${seq}`,
      msg_type,
      session: "s",
      username: "u",
      date: `2026-01-01T00:00:${String(seq % 60).padStart(2, "0")}Z`,
      version: "5.3",
    },
    parent_header: { msg_id: "parent" },
    metadata: {},
    content,
  };
}

function collector(
  cells: Map<string, NbOutput[]>,
  key: string,
  registry: DisplayRegistry,
  timing?: Record<string, unknown>,
) {
  const outputs: NbOutput[] = [];
  cells.set(key, outputs);
  return new CellOutputCollector({
    cellKey: key,
    outputs,
    registry,
    outputsOf: (k) => cells.get(k),
    timingMetadata: timing,
  });
}

describe("stream folding", () => {
  it("keeps plain text unchanged", () => assert.equal(foldStreamText("a\nb\n"), "a\nb\n"));
  it("overwrites a line on carriage return and keeps a trailing one", () => {
    assert.equal(foldStreamText("10%\r50%\r100%\ndone\n"), "100%\ndone\n");
    assert.equal(foldStreamText("10%\r"), "10%\r");
    assert.equal(foldStreamText("a\r\nb"), "a\nb");
  });
  it("applies backspaces", () => assert.equal(foldStreamText("abc\b\bX\n"), "aX\n"));
});

describe("CellOutputCollector", () => {
  it("merges consecutive same-name streams only, folding across chunk boundaries", () => {
    const cells = new Map<string, NbOutput[]>();
    const c = collector(cells, "a", new DisplayRegistry());
    c.handle(msg("stream", { name: "stdout", text: "1%\r" }));
    c.handle(msg("stream", { name: "stdout", text: "99%\n" }));
    c.handle(msg("stream", { name: "stderr", text: "warn\n" }));
    c.handle(msg("stream", { name: "stdout", text: "x\n" }));
    assert.deepEqual(c.outputs, [
      { output_type: "stream", name: "stdout", text: "99%\n" },
      { output_type: "stream", name: "stderr", text: "warn\n" },
      { output_type: "stream", name: "stdout", text: "x\n" },
    ]);
  });

  it("saves the same stream text however the kernel split its writes (docs/output.md)", () => {
    const texts = [
      "hello\r\r\n",
      "10%\r50%\r\r100%\r\ndone\n",
      "abc\b\bX\r\nnext\rNEXT\n\b",
      "a\rb\r\r\nc\r",
      "line\n\r\rtail\b\r\rx",
    ];
    for (const text of texts) {
      const whole = foldStreamText(text);
      // Every split into up to three chunks (ipykernel's timer decides where the cuts fall).
      for (let i = 0; i <= text.length; i++) {
        for (let j = i; j <= text.length; j++) {
          const cells = new Map<string, NbOutput[]>();
          const c = collector(cells, "a", new DisplayRegistry());
          for (const chunk of [text.slice(0, i), text.slice(i, j), text.slice(j)])
            c.handle(msg("stream", { name: "stdout", text: chunk }));
          const saved = c.outputs.map((o) => o.text);
          assert.deepEqual(saved, [whole], `${JSON.stringify(text)} cut at ${i}, ${j}`);
        }
      }
    }
  });

  it("three writes hello\\r, \\r, \\n save hello and the line break, as one write does", () => {
    const cells = new Map<string, NbOutput[]>();
    const c = collector(cells, "a", new DisplayRegistry());
    for (const text of ["hello\r", "\r", "\n"]) c.handle(msg("stream", { name: "stdout", text }));
    assert.deepEqual(c.outputs, [{ output_type: "stream", name: "stdout", text: "hello\n" }]);
  });

  it("defers clear_output(wait=True) to the next output and clears at once otherwise", () => {
    const cells = new Map<string, NbOutput[]>();
    const c = collector(cells, "a", new DisplayRegistry());
    c.handle(msg("stream", { name: "stdout", text: "old\n" }));
    c.handle(msg("clear_output", { wait: true }));
    assert.equal(c.outputs.length, 1);
    c.handle(msg("stream", { name: "stdout", text: "new\n" }));
    assert.deepEqual(c.outputs, [{ output_type: "stream", name: "stdout", text: "new\n" }]);
    c.handle(msg("clear_output", { wait: false }));
    assert.equal(c.outputs.length, 0);
  });

  it("updates a display by id in an earlier cell and drops transient", () => {
    const cells = new Map<string, NbOutput[]>();
    const registry = new DisplayRegistry();
    const first = collector(cells, "a", registry);
    first.handle(
      msg("display_data", { data: { "text/plain": "v1" }, metadata: {}, transient: { display_id: "d" } }),
    );
    const second = collector(cells, "b", registry);
    second.handle(
      msg("update_display_data", {
        data: { "text/plain": "v2" },
        metadata: {},
        transient: { display_id: "d" },
      }),
    );
    assert.deepEqual(cells.get("a"), [
      { output_type: "display_data", data: { "text/plain": "v2" }, metadata: {} },
    ]);
    assert.deepEqual(second.outputs, []);
  });

  it("records execute_result with its count, errors, and nbclient-style timing", () => {
    const cells = new Map<string, NbOutput[]>();
    const timing: Record<string, unknown> = {};
    const c = collector(cells, "a", new DisplayRegistry(), timing);
    c.handle(msg("status", { execution_state: "busy" }));
    c.handle(msg("execute_input", { code: "1", execution_count: 3 }));
    c.handle(msg("execute_result", { data: { "text/plain": "1" }, metadata: {}, execution_count: 3 }));
    c.handle(msg("error", { ename: "E", evalue: "v", traceback: ["t"] }));
    c.handle(msg("status", { execution_state: "idle" }));
    c.replied("2026-01-01T00:01:00Z", 3);
    assert.equal(c.executionCount, 3);
    assert.deepEqual(c.outputs, [
      { output_type: "execute_result", data: { "text/plain": "1" }, metadata: {}, execution_count: 3 },
      { output_type: "error", ename: "E", evalue: "v", traceback: ["t"] },
    ]);
    assert.deepEqual(Object.keys(timing.execution as object).sort(), [
      "iopub.execute_input",
      "iopub.status.busy",
      "iopub.status.idle",
      "shell.execute_reply",
    ]);
  });
});

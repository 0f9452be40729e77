/**
 * The row adapter: a component drawing src/render's views at the width pi asks for, and the redraws
 * of a running call's row (spinner, running time), which stop when the call ends.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { renderCallComponent, renderResultComponent } from "../../src/pi/render.js";

type Theme = Parameters<typeof renderCallComponent>[2];
type Context = Parameters<typeof renderCallComponent>[3];
const theme = { fg: (_c: string, t: string) => t, bold: (t: string) => t } as unknown as Theme;

function context(invalidate: () => void, state: Record<string, unknown> = {}): Context {
  return {
    args: {},
    toolCallId: "call-1",
    invalidate,
    lastComponent: undefined,
    state,
    cwd: "/tmp",
    executionStarted: true,
    argsComplete: true,
    isPartial: true,
    expanded: false,
    showImages: false,
    isError: false,
  };
}

test("the call's view is drawn at the width pi gives at render time", () => {
  const args = { cells: [{ code: `print('${"x".repeat(200)}')` }] };
  const component = renderCallComponent(
    "python",
    args,
    theme,
    context(() => {}),
  );
  for (const width of [30, 100]) {
    const lines = component.render(width);
    assert.ok(lines.length > 1);
    assert.ok(
      lines.every((l) => [...l].length <= width),
      `${width}: ${lines.join("\n")}`,
    );
  }
});

test("a running call's row is redrawn until its final result is drawn", async () => {
  const state: Record<string, unknown> = {};
  let running = true;
  // The ticker does not hold the process open (unref): this does, until the test ends.
  const alive = setInterval(() => {}, 60_000);
  const redrawn = new Promise<void>((resolve) => {
    const ctx = context(resolve, state);
    const partial = { content: [{ type: "text", text: "" }], details: undefined };
    renderResultComponent("python", partial, { expanded: false, isPartial: true }, theme, ctx, {
      running: () => running,
    }).render(80);
  });
  await redrawn; // the ticker asked pi to redraw the row
  assert.ok(state.nbagentTicker);
  running = false;
  const done = { content: [{ type: "text", text: "42" }], details: undefined };
  const lines = renderResultComponent(
    "python",
    done,
    { expanded: false, isPartial: false },
    theme,
    context(() => assert.fail("redrawn after the end"), state),
    { running: () => running },
  ).render(80);
  assert.deepEqual(lines, ["│ 42"]);
  assert.equal(state.nbagentTicker, undefined);
  clearInterval(alive);
});

/**
 * When the page draws what messages changed (docs/view.md, "Cost"): at the next animation frame, but
 * no sooner than DRAW_MS after the last such draw, all of them at once. A run that prints hundreds
 * of messages a second is drawn about twenty times a second, not sixty: on two cores the browser's
 * layout and paint at every frame took more CPU than the run itself. Scrolling and resizing draw at
 * every frame as before (notebook-view.ts).
 */
const DRAW_MS = 50;

let last = 0;
let armed = false;
let pending: (() => void)[] = [];

function draw(): void {
  armed = false;
  last = performance.now();
  const due = pending;
  pending = [];
  for (const f of due) f();
}

/** Runs `f` at the next draw (in the order asked: a notebook's cells before the count that says so). */
export function atNextDraw(f: () => void): void {
  pending.push(f);
  if (armed) return;
  armed = true;
  const wait = last + DRAW_MS - performance.now();
  if (wait > 0) setTimeout(() => requestAnimationFrame(draw), wait);
  else requestAnimationFrame(draw);
}

/**
 * When the page draws what messages changed (docs/view.md, "Cost"). Two paces:
 *
 * - `atNextDraw`: the shown notebook — at the next animation frame, but no sooner than DRAW_MS after
 *   the last draw. A run that prints hundreds of messages a second is drawn at most about twenty
 *   times a second, not sixty: on two cores the browser's layout and paint at every frame took more
 *   CPU than the run itself. The server writes the page's stream at most every 50 ms
 *   (src/view/server.ts BATCH_WRITE_MS), so a write is drawn at the frame after it comes: DRAW_MS is
 *   below that pace, not equal to it, or a write that came a little early would wait for a second
 *   frame.
 * - `atNextSummaryDraw`: the sidebar and the call timeline — at most every SUMMARY_MS (drawn at the
 *   next draw when they have not been for that long: the first change after a quiet spell shows at
 *   once), or at the next draw after `summaryDrawSoon` (a call started or ended, a process came or went).
 *   A notebook run moves them on at every cell; drawing them at the notebook's pace cost the browser
 *   most of its work for a page open during a run, and even four times a second a frame each
 *   (~40 ms of a browser's CPU on two cores, software-drawn) was a third of what the page cost a
 *   200-cell run (docs/view.md "Cost"). The notebook beside them is what is watched live.
 * - `whenDrawn`: after a draw that left nothing of either kind waiting (the page's `data-applied`);
 *   at once when nothing waits to be drawn — what the messages changed is in the page already, and a
 *   frame asked for that alone (twenty a second while a run's news comes) cost the browser a frame
 *   of its work each time.
 *
 * Scrolling and resizing draw at every frame as before (notebook-view.ts).
 */
const DRAW_MS = 35;
const SUMMARY_MS = 1000;

let last = 0;
let lastSummary = -Infinity;
let pending: (() => void)[] = [];
let summary: (() => void)[] = [];
/** A waiting summary change is to be drawn at the next draw, not at SUMMARY_MS's pace. */
let summarySoon = false;
let settled: (() => void)[] = [];
/** When the armed draw is due (performance.now() time), its timer; none armed: undefined. */
let due: number | undefined;
let timer: ReturnType<typeof setTimeout> | undefined;
let frame = 0;

function run(fs: (() => void)[]): void {
  for (const f of fs) f();
}

function draw(): void {
  frame = 0;
  due = undefined;
  const now = performance.now();
  last = now;
  const fast = pending;
  pending = [];
  run(fast);
  if (summary.length && (summarySoon || now - lastSummary >= SUMMARY_MS - DRAW_MS / 2)) {
    lastSummary = now;
    summarySoon = false;
    const s = summary;
    summary = [];
    run(s);
  }
  if (!summary.length && !pending.length) {
    const s = settled;
    settled = [];
    run(s);
  }
  arm();
}

/** Asks for the draw the waiting work needs, or an earlier one than the armed. */
function arm(): void {
  let at: number;
  if (pending.length || (settled.length && !summary.length) || (summary.length && summarySoon))
    at = last + DRAW_MS;
  else if (summary.length) at = Math.max(last + DRAW_MS, lastSummary + SUMMARY_MS);
  else return;
  if (frame) return; // a frame is asked for already: it comes sooner than any wait
  if (due !== undefined && due <= at) return;
  if (timer !== undefined) clearTimeout(timer);
  timer = undefined;
  due = at;
  const wait = at - performance.now();
  if (wait > 0)
    timer = setTimeout(() => {
      timer = undefined;
      frame = requestAnimationFrame(draw);
    }, wait);
  else frame = requestAnimationFrame(draw);
}

/** Runs `f` at the next draw (in the order asked: a notebook's cells before the count that says so). */
export function atNextDraw(f: () => void): void {
  pending.push(f);
  arm();
}

/** Runs `f` at the next draw of the sidebar and the timeline (at most every SUMMARY_MS; see summaryDrawSoon). */
export function atNextSummaryDraw(f: () => void): void {
  summary.push(f);
  arm();
}

/** The summary work waiting now is drawn at the next draw, not at SUMMARY_MS's pace. */
export function summaryDrawSoon(): void {
  if (!summary.length) return;
  summarySoon = true;
  arm();
}

/** Runs `f` after the next draw that leaves nothing waiting to be drawn; nothing waiting: now. */
export function whenDrawn(f: () => void): void {
  if (!pending.length && !summary.length) {
    f();
    return;
  }
  settled.push(f);
  arm();
}

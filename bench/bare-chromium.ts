/**
 * A bare Chromium (no DevTools protocol client, as a person's browser has none) showing the view's
 * page: ready once the page's title is set (its script ran; read from the DevTools HTTP list, which
 * attaches nothing), then a second for its state. Used by bench/view.ts and bench/view-prof.ts.
 */
import type { ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";

/** Waits for the page; answers the DevTools WebSocket URL (to look at the page after a run). */
export async function bareChromiumReady(ch: ChildProcess): Promise<string> {
  const ws = await new Promise<string>((resolve, reject) => {
    ch.once("exit", () => reject(new Error("chromium exited")));
    createInterface({ input: ch.stderr! }).on("line", (l) => {
      const m = /DevTools listening on (ws:\S+)/.exec(l);
      if (m) resolve(m[1]);
    });
  });
  const list = ws.replace(/^ws:\/\/([^/]+)\/.*$/, "http://$1/json/list");
  for (;;) {
    const pages = (await (await fetch(list)).json()) as { type: string; title: string }[];
    if (pages.some((p) => p.type === "page" && p.title === "nbagent view")) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  await new Promise((r) => setTimeout(r, 1000));
  return ws;
}

/** How the page words the API's values (docs/view.md "The page"): names, times, action answers. */
import type { Action, ActionResult, HostInfo, Key } from "./api.js";

export function keyTitle(key: Key): string {
  switch (key.kind) {
    case "python":
      return `python session ${key.sessionId}`;
    case "notebook":
      return key.path.split("/").pop() || key.path;
    case "named":
      return `named session ${key.name}`;
    case "per-call":
      return `${keyTitle(key.of)} (a kernel per call)`;
  }
}

export function hostTitle(h: HostInfo): string {
  return `${h.kind} · pid ${h.pid}`;
}

/** 0.4 s, 12 s, 3 min 05 s, 2 h 03 min. */
export function duration(ms: number): string {
  if (ms < 10_000) return `${(Math.max(0, ms) / 1000).toFixed(1)} s`;
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, "0")} s`;
  return `${Math.floor(s / 3600)} h ${String(Math.floor(s / 60) % 60).padStart(2, "0")} min`;
}

export function clock(at: number): string {
  const d = new Date(at);
  return [d.getHours(), d.getMinutes(), d.getSeconds()].map((n) => String(n).padStart(2, "0")).join(":");
}

/** What an action was, for the line that gives its answer. */
export function actionTitle(a: Action, host: HostInfo | undefined): string {
  const where = host ? ` (${hostTitle(host)})` : "";
  if ("runId" in a) return `Interrupt run ${a.runId}${where}`;
  const verb = a.action === "interrupt" ? "Interrupt" : a.action === "restart" ? "Restart" : "Export";
  return `${verb} ${keyTitle(a.key)}${where}`;
}

/** The host's answer, as it is: what happened, or why nothing did. */
export function answerText(r: ActionResult, file?: string): string {
  switch (r.kind) {
    case "interrupted":
      return r.runId
        ? `interrupted run ${r.runId}: the call's result says it was interrupted from the view.`
        : "interrupted: the kernel was sent an interrupt.";
    case "restarted":
      return "restarted: its state is lost; the agent's next result on it says a person restarted it.";
    case "exported":
      return `exported: downloaded ${file ?? "the notebook"}.`;
    case "idle":
      return "nothing was running there: nothing done.";
    case "busy":
      return "not done: a call holds the kernel (interrupt it first).";
    case "starting":
      return "not done: its kernel is still starting.";
    case "unknown":
      return "not done: the host has no such session or run (it ended?).";
    case "finished":
      return `not done: run ${r.runId} had already finished.`;
    case "failed":
      return `failed: ${r.message}`;
  }
}

/**
 * The page's actions (docs/view.md "The page"): POSTed to `api/action` with the token in an
 * `Authorization: Bearer` header — the server refuses an action that carries only the cookie. The
 * token is read from `api/token` (same origin only) when the first action is taken, not before.
 */
import type { Action, ActionResult } from "./api.js";

let token: Promise<string> | undefined;

async function readToken(): Promise<string> {
  const r = await fetch("api/token", { credentials: "same-origin" });
  if (!r.ok) throw new Error(`the token was refused (${r.status}): ${(await r.text()).trim()}`);
  const body = (await r.json()) as { token?: unknown };
  if (typeof body.token !== "string") throw new Error("the server sent no token");
  return body.token;
}

/** The host's answer, or why there is none (the server's refusal, said as it said it). */
export async function act(action: Action): Promise<{ result: ActionResult } | { error: string }> {
  try {
    token ??= readToken();
    const bearer = await token.catch((err: unknown) => {
      token = undefined;
      throw err;
    });
    const r = await fetch("api/action", {
      method: "POST",
      credentials: "same-origin",
      headers: { Authorization: `Bearer ${bearer}`, "Content-Type": "application/json" },
      body: JSON.stringify(action),
    });
    const text = await r.text();
    if (r.status === 200) return { result: JSON.parse(text) as ActionResult };
    let said = text.trim();
    try {
      const j = JSON.parse(text) as { error?: unknown };
      if (typeof j.error === "string") said = j.error;
    } catch {
      // a plain-text refusal
    }
    return { error: `refused (${r.status}): ${said}` };
  } catch (err) {
    return { error: `not sent: ${(err as Error).message}` };
  }
}

/** Saves a notebook (nbformat JSON) as a download named `file`. */
export function download(doc: Document, notebook: unknown, file: string): void {
  const blob = new Blob([`${JSON.stringify(notebook, null, 1)}\n`], { type: "application/x-ipynb+json" });
  const url = URL.createObjectURL(blob);
  const a = doc.createElement("a");
  a.href = url;
  a.download = file;
  a.hidden = true;
  doc.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

/**
 * What a failed kernel start was (kernel-provider.ts recovers from these): out of file descriptors
 * (docs/python-tool.md), here or in the shared gateway (its log says so), or a gateway that cannot be reached.
 */
import { closeSync, openSync, readSync, statSync } from "node:fs";
import { KernelFailureError } from "../kernel/errors.js";

export const FD_EXHAUSTION_TEXT = /too many open files|EMFILE|ENFILE|\[Errno 2[34]\]/i;

/**
 * EMFILE / ENFILE / "Too many open files": here, or in a gateway's answer (jupyter_server puts
 * the Python traceback, `OSError: [Errno 24] Too many open files`, in its 500 reply's body).
 */
export function isFdExhaustion(err: unknown): boolean {
  const e = err as { code?: string; message?: string; body?: string } | undefined;
  const text = FD_EXHAUSTION_TEXT;
  return (
    e?.code === "EMFILE" ||
    e?.code === "ENFILE" ||
    text.test(e?.message ?? "") ||
    (typeof e?.body === "string" && text.test(e.body))
  );
}

/**
 * The gateway could not be reached at all (it stopped, or was restarted on another port/token): a
 * typed gateway failure says so (unreachable, or its token refused); other errors by their code.
 */
export function isGatewayUnreachable(err: unknown): boolean {
  if (err instanceof KernelFailureError) {
    const f = err.failure;
    if (f.kind === "unreachable") return true;
    if (f.kind === "refused") return f.status === 401 || f.status === 403;
  }
  const e = err as
    | { code?: string; status?: number; message?: string; cause?: { code?: string } }
    | undefined;
  const code = e?.code ?? e?.cause?.code;
  return (
    code === "ECONNREFUSED" ||
    code === "ECONNRESET" ||
    e?.status === 401 ||
    e?.status === 403 ||
    /ECONNREFUSED|ECONNRESET|socket hang up|fetch failed/i.test(e?.message ?? "")
  );
}

/** A log file's size now (0 when absent). */
export function logSize(file: string | undefined): number {
  try {
    return file ? statSync(file).size : 0;
  } catch {
    return 0;
  }
}

/** The log has a line matching `re` past byte `from` (read at most its last 64 KiB). */
export function logSays(file: string | undefined, from: number, re: RegExp): boolean {
  if (!file) return false;
  try {
    const size = statSync(file).size;
    const start = Math.max(from, size - 64 * 1024);
    if (size <= start) return false;
    const fd = openSync(file, "r");
    try {
      const buf = Buffer.alloc(size - start);
      readSync(fd, buf, 0, buf.length, start);
      return re.test(buf.toString("utf8"));
    } finally {
      closeSync(fd);
    }
  } catch {
    return false;
  }
}

/**
 * Watches a log, from byte `from`, for a line matching `re` (checked every `everyMs`): `signal` aborts
 * when one appears. The shared gateway out of descriptors may stall a start instead of failing it
 * (it cannot accept the channels' WebSocket and loops on the error), so its log is watched meanwhile.
 */
export function watchLog(file: string, from: number, re: RegExp, everyMs = 250) {
  const controller = new AbortController();
  const timer = setInterval(() => {
    if (!logSays(file, from, re)) return;
    clearInterval(timer);
    controller.abort(new Error(`${file} says ${re.source}`));
  }, everyMs);
  timer.unref();
  return { signal: controller.signal, stop: () => clearInterval(timer) };
}

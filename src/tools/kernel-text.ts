/**
 * Words for what happened to a kernel: the runtime and kernel layers report typed values
 * (ExecutionNotice, SessionEvent, RetiredSession, abort causes); this file alone turns them into
 * the sentences the model reads. The rules behind them are in docs/kernel-state.md.
 */
import type { DeathCause } from "../kernel/errors.js";
import type { ExecutionNotice, KernelIsolation, KernelLimitHit } from "../kernel/types.js";
import { stripAnsi } from "../output/sanitise.js";
import type { DeadKernelNotRestartedError, KernelUnreachableError, SlotHolder } from "../runtime/errors.js";
import type { NamedSessionStart, SessionEvent, SessionKey } from "../runtime/session.js";
import type { RetiredSession, StateLoss } from "../runtime/sessions.js";
import { bytesIec, plural } from "../sys/units.js";
import { failureWords, gatewayFailureText, hubServerGoneText } from "./failure-text.js";

/** The no-stdin notice (docs/python-tool.md), written into the output where the kernel asked. */
export const STDIN_NOTICE =
  "[stdin] Kernel requested input. Interactive stdin is not supported; provide input programmatically.";

/**
 * The line that ends the traceback of an input() refused for want of stdin (docs/python-tool.md,
 * "No interactive stdin"), in place of the kernel's `EOFError: ` line.
 */
export const STDIN_EOF_LINE =
  "EOFError: stdin is not available in this kernel: input() cannot be answered. Pass the value in the code instead (e.g. replace input(...) with the value).";

/**
 * The traceback text of a cell whose input() was refused, for the model: the kernel's own frames
 * (ipykernel's raw_input and _input_request, ~20 lines that say nothing about the user's code) are
 * dropped and the final `EOFError` line says why and what to do; the user's frames stay. Undefined
 * when the traceback does not end in EOFError (the code caught it and raised something else): then
 * the kernel's text is shown as it is.
 */
export function stdinTracebackText(text: string): string | undefined {
  const lines = text.replace(/\n$/, "").split("\n");
  const plain = (l: string) => stripAnsi(l);
  const last = lines.length - 1;
  if (!/^EOFError\b/.test(plain(lines[last]).trim())) return undefined;
  const kept: string[] = [];
  for (let i = 0; i < last; i++) {
    // A frame of ipykernel: from its `File …/ipykernel/….py:N, in …` line to the blank line after it.
    if (/^(File )?\S*[/\\]ipykernel[/\\]\S*\.py\b/.test(plain(lines[i]).trim())) {
      while (i < last && plain(lines[i]).trim() !== "") i++;
      continue;
    }
    kept.push(lines[i]);
  }
  kept.push(STDIN_EOF_LINE);
  return `${kept.join("\n")}\n`;
}

/**
 * Who held the kernel while a call waited for it in vain: what its text says (queue-holder.ts
 * gathers them from the holder's tag).
 */
export interface QueueHolderFacts {
  /** The run the holder is (docs/runs.md): the runs tool follows or interrupts it by this id. */
  runId?: string;
  /** The holding call as its tool names it; undefined when it is not known. */
  what?: string;
  /** Seconds it has held the kernel. */
  heldSeconds: number;
  /** The holder's running cell (its label, "cell 2"), if one is running. */
  cell?: string;
  /** The holder has not started a cell yet (its kernel is starting). */
  starting?: boolean;
  /** Calls that were waiting ahead of this one. */
  ahead: number;
}

/** Why a cell did not finish. */
export type CellAbort =
  /** beforeStart: the time ran out while waiting for the session's queue or a kernel start. */
  | {
      kind: "timeout";
      seconds: number;
      beforeStart?: boolean;
      /**
       * The kernel had stopped responding to the cell (the `kernel-unresponsive` notice): it sent
       * nothing for `silentMs`, answered on control but finished no request, and was restarted.
       */
      unresponsive?: { silentMs: number };
      /** It was waiting for a free kernel slot (all maxSessions busy with these holders). */
      slot?: { maxSessions: number; holders: SlotHolder[] };
      /**
       * It was waiting for its turn in the session's queue; `holder`: the call that had it (none
       * known: the turn was being handed on). Neither slot nor queue: the kernel's start.
       */
      queue?: { holder?: QueueHolderFacts };
    }
  | { kind: "cancelled"; reason?: string; beforeStart?: boolean; hostExiting?: boolean }
  | { kind: "kernel-died"; reason: string; limit?: KernelLimitHit; cause?: DeathCause }
  | { kind: "restarts-exhausted" }
  | { kind: "session-closed" }
  | { kind: "failed"; message: string };

/**
 * A line for the first result of a kernel that can see the host's processes (docs/isolation.md),
 * since the host's secrets are then one /proc read away; undefined when the kernel is isolated or
 * the backend cannot tell.
 */
export function isolationNote(isolation: KernelIsolation | undefined): string | undefined {
  if (!isolation) return undefined;
  if (isolation.pidNamespace)
    return isolation.confined === false
      ? `Note: this kernel sees no other process, but its confinement is incomplete (${isolation.reason ?? "no reason given"}): it may see nbagent's state folder or write the machine's settings that its user could. \`nbagent doctor\` says more.`
      : undefined;
  const why = isolation.reason ? ` (no PID namespace: ${isolation.reason})` : "";
  return `Note: this kernel can see the other processes of this user, the host's included, and could read their environment (/proc/<pid>/environ) with its API keys and tokens${why}. Do not read other processes' /proc entries; \`nbagent doctor\` says how to isolate kernels on this machine.`;
}

/**
 * Why the kernel died, for "the kernel died (…)" sentences: the reason, and the limit it hit when a
 * limit is known (docs/isolation.md, "Limits"), with what to do about it.
 */
export function deathText(
  said: string,
  limit: KernelLimitHit | undefined,
  cause?: DeathCause,
): { why: string; advice: string } {
  const reason = deathReasonText(said, cause);
  if (!limit) return { why: `(${reason})`, advice: "" };
  if (limit.kind === "memory-limit")
    return {
      why: `(${reason}): it hit its memory limit of ${bytesIec(limit.limitBytes)} and the out-of-memory killer ended it`,
      advice: ` Use less memory at once (load or process the data in smaller pieces, \`del\` large objects you no longer need), or ask the user to raise the limit (\`--memory-limit\` or NBAGENT_MEMORY_LIMIT).`,
    };
  return {
    why: `(${reason}); it had hit its limit of ${plural(limit.maxProcesses, "process", "processes")} and threads: ${plural(limit.refused, "start")} of a process or thread ${limit.refused === 1 ? "was" : "were"} refused`,
    advice: ` Start fewer processes or threads (a smaller pool, fewer workers), or ask the user to raise the limit (\`--max-processes\` or NBAGENT_MAX_PROCESSES).`,
  };
}

/** A kept kernel that died while unused and could not be started again: what was lost, then why the start failed. */
export function deadNotRestartedText(e: DeadKernelNotRestartedError, startWords: string): string {
  const why = e.death ? ` at ${clock(e.death.at)} (${deathReasonText(e.death.reason, e.death.cause)})` : "";
  return `This session's kernel died since the last call${why}, and its state (variables, imports) is gone. A new kernel could not be started: ${startWords}`;
}

/**
 * A kept kernel whose connection was lost and could not be made again now: nothing ran and nothing
 * was started; the kernel may still be there with its state (docs/backends.md "Across a real network").
 */
export function unreachableKernelText(e: KernelUnreachableError, o: KernelOwner, nowWords: string): string {
  return `${owner(o)} could not be reached: its connection was lost at ${clock(e.lost.at)} (${deathReasonText(e.lost.reason, e.lost.cause)}), and connecting to it again failed now (${nowWords}). Nothing ran and no new kernel was started: the kernel may still be running on the gateway, with its state. Call again once the gateway can be reached (each call tries to connect again); to give that kernel up instead, restart it with the kernels tool (a new kernel; its state is lost).`;
}

/**
 * A death reason in words: the kernel layer's reason, then its typed cause: what the failed restart
 * said ("restart failed: …"), or the last error of a gateway that stayed unreachable ("… (last: …)");
 * a kernel the gateway restarted while the connection was down is worded from its cause alone.
 */
export function deathReasonText(reason: string, cause: DeathCause | undefined): string {
  if (!cause) return reason;
  if (cause.kind === "restarted-while-away")
    return "its process ended while nbagent's connection to the gateway was down, and the gateway restarted it: when the connection came back, the kernel answered from a new process";
  if (cause.kind === "unreachable") return `${reason} (last: ${gatewayFailureText(cause.last)})`;
  if (cause.kind === "hub-server") return hubServerGoneText(cause.hub);
  return `${reason}: ${failureWords(cause.failure, cause.output)}`;
}

/** A cell whose process or thread starts were refused at the kernel's process limit (it lives on). */
export function processLimitText(cell: number, hit: { maxProcesses: number; refused: number }): string {
  return `Cell ${cell} reached the kernel's limit of ${plural(hit.maxProcesses, "process", "processes")} and threads: ${plural(hit.refused, "start")} of a process or thread ${hit.refused === 1 ? "was" : "were"} refused (in Python: BlockingIOError or RuntimeError "can't start new thread"). The kernel keeps running. Start fewer processes or threads (a smaller pool, fewer workers), or ask the user to raise the limit (\`--max-processes\` or NBAGENT_MAX_PROCESSES).`;
}

/** The text written into the output stream for a notice, or undefined when the summary says it. */
export function inlineNotice(n: ExecutionNotice): string | undefined {
  return n.kind === "stdin-refused" ? STDIN_NOTICE : undefined;
}

/** "cell 3", "cells 1-2", "cells 1, 3 and 5-6" from sorted labels (numbers). */
export function cellList(indices: number[]): string {
  if (indices.length === 0) return "no cells";
  const parts: string[] = [];
  let start = indices[0];
  let prev = start;
  const flush = () => parts.push(start === prev ? `${start}` : `${start}-${prev}`);
  for (const i of indices.slice(1)) {
    if (i === prev + 1) prev = i;
    else {
      flush();
      start = prev = i;
    }
  }
  flush();
  const list =
    parts.length === 1 ? parts[0] : `${parts.slice(0, -1).join(", ")} and ${parts[parts.length - 1]}`;
  return `${indices.length === 1 ? "cell" : "cells"} ${list}`;
}

function clock(ms: number): string {
  return new Date(ms).toTimeString().slice(0, 8);
}

/** How long unused kernels are kept, and how many (the runtime's settings; tool descriptions state them). */
export interface KeptKernelLimits {
  idleTimeoutMs: number;
  maxSessions: number;
}

export function minutes(ms: number): string {
  const m = Math.round(ms / 60_000);
  return m >= 1 ? plural(m, "minute") : plural(Math.round(ms / 1000), "second");
}

/** Whose kernel it is, for sentences: "this session's kernel", "the notebook's kernel". */
export type KernelOwner = "session" | "notebook";

const lower = (t: string) => `${t[0].toLowerCase()}${t.slice(1)}`;

function owner(o: KernelOwner): string {
  return o === "notebook" ? "The notebook's kernel" : "This session's kernel";
}

/**
 * What the model is told once per session, on the result of its first call (again when a replaced
 * session starts over; every per-call kernel): facts about the kernel it will keep using. Each
 * field gives at most one line (docs/secrets.md).
 */
export interface SessionStartFacts {
  /** Host variables withheld from the kernel's environment as secrets (names, never values). */
  withheldEnv: readonly string[];
  /** The session's cwd does not exist where the kernel runs (a remote gateway): it works in `actual`. */
  cwdMissing?: { requested: string; actual: string };
}

/** Names listed in the withheld note before "and N more". */
const MAX_WITHHELD_LISTED = 30;

/** The once-per-session lines, in order (none when there is nothing to say). */
export function sessionStartNotes(facts: SessionStartFacts, o: KernelOwner): string[] {
  const notes: string[] = [];
  const withheld = withheldEnvNote(facts.withheldEnv, o);
  if (withheld) notes.push(withheld);
  if (facts.cwdMissing) {
    const { requested, actual } = facts.cwdMissing;
    notes.push(
      `Note: ${owner(o)} runs on another machine (the gateway), where ${requested} does not exist; it works in ${actual} there. Files on this machine are not visible to it: read and write paths that exist on the gateway's machine.`,
    );
  }
  return notes;
}

/** Which host variables the kernel did not get, by name, and how the user lets one through. */
export function withheldEnvNote(names: readonly string[], o: KernelOwner): string | undefined {
  if (names.length === 0) return undefined;
  const listed = names.slice(0, MAX_WITHHELD_LISTED).join(", ");
  const more = names.length > MAX_WITHHELD_LISTED ? ` and ${names.length - MAX_WITHHELD_LISTED} more` : "";
  const whose = o === "notebook" ? "the notebook's kernel" : "this session's kernel";
  const what =
    names.length === 1
      ? `This host environment variable looks like a secret and was not passed to ${whose}`
      : `These host environment variables look like secrets and were not passed to ${whose}`;
  return `Note: ${what} (os.environ does not have ${names.length === 1 ? "it" : "them"}): ${listed}${more}. To let one through, the user must restart nbagent with NBAGENT_ALLOW_ENV=NAME[,NAME] in its environment.`;
}

/** "python session "default" in /w", "the kernel of /w/n.ipynb". */
function holderText(h: SlotHolder): string {
  return h.kind === "notebook" ? `the kernel of ${h.path}` : `python session "${h.session}" in ${h.cwd}`;
}

/** The note for a kept kernel that was shut down while unused (sweep, eviction, death). */
export function replacedText(r: RetiredSession, o: KernelOwner, now = Date.now()): string {
  const why =
    r.why === "idle"
      ? `was shut down at ${clock(r.at)} after ${minutes(r.at - r.lastUsed)} unused${
          r.idleTimeoutMs !== undefined ? ` (kernels idle for ${minutes(r.idleTimeoutMs)} are shut down)` : ""
        }`
      : r.why === "evicted"
        ? `was shut down at ${clock(r.at)} to make room for another kernel (at most ${r.maxSessions ?? 4} are kept: python sessions and notebook kernels together; the least recently used idle one goes)`
        : r.why === "gone"
          ? `was no longer on the gateway when this call looked for it at ${clock(r.at)} (last used at ${clock(r.lastUsed)}); why it ended is not known here (the gateway may have culled it, or been restarted)`
          : r.why === "killed"
            ? `was ended at ${clock(r.at)} on request (nbagent sessions kill)`
            : `died while unused (found at ${clock(r.at)})`;
  const ago = now - r.at >= 60_000 ? ` (${minutes(now - r.at)} ago)` : "";
  return `Note: ${owner(o)} ${why}${ago}. This call runs in a new kernel: variables, imports and other state from earlier calls are gone.`;
}

/**
 * The first result of a named session on a gateway (docs/backends.md "Named sessions"): whether it
 * joined the kernel an earlier call left running, or is new, and that it outlives this process.
 */
export function namedSessionText(n: NamedSessionStart, idleTimeoutMs: number): string {
  const lasts = `It outlives this process: a later call with session "${n.name}" (from another nbagent process too) finds its state, until it is unused for ${minutes(idleTimeoutMs)} or ended with \`nbagent sessions kill ${n.name}\`.`;
  return n.reattached
    ? `Note: named session "${n.name}" re-attached to its running kernel ${n.kernelId} on the gateway: variables, imports and other state from earlier calls are there. ${lasts}`
    : `Note: named session "${n.name}" is new: kernel ${n.kernelId} was started for it on the gateway. ${lasts}`;
}

/** A sentence per kernel event of one cell (label: "cell 3"). */
export function eventText(e: SessionEvent, label: string, o: KernelOwner): string {
  switch (e.kind) {
    case "restarted-dead-kernel":
      return `${owner(o)} had died since the last call${e.reason !== undefined ? ` (at ${clock(e.at ?? Date.now())}: ${deathReasonText(e.reason, e.cause)})` : ""}; it was restarted before ${label}, and its earlier state is gone.`;
    case "retried-before-start":
      return `The kernel died before ${label} started (${deathReasonText(e.reason, e.cause)}); its code had not run, so it was restarted and ${label} ran once in the new kernel. Earlier state is gone.`;
    case "reconnected": {
      const busy = e.busy
        ? ` The gateway reported it busy when joined (the code that ran when the connection was lost may still have been running), so ${label} waited for it.`
        : "";
      return `The connection to ${lower(owner(o))} had been lost (at ${clock(e.at)}: ${deathReasonText(e.reason, e.cause)}); it was made again before ${label}, and the same kernel answered: variables, imports and other state from earlier calls are kept.${busy}`;
    }
    case "connection-lost": {
      const when = e.codeStarted ? `while ${label} ran` : `before ${label} was known to start`;
      const what = e.codeStarted
        ? `what ${label} did after that is not known here, and its later output is not shown`
        : `${label} may or may not run there`;
      return `The connection to ${lower(owner(o))} was lost ${when} (${deathReasonText(e.reason, e.cause)}). The kernel was not stopped: it may still be running on the gateway, with its state; ${what}. The next call connects to it again and says whether its state is still there; nothing was sent again.`;
    }
    case "died-during-code": {
      const { why, advice } = deathText(e.reason, e.limit, e.cause);
      return e.restarted
        ? `The kernel died while ${label} ran ${why}. It was restarted: all state is gone (variables, imports), and ${label} was not run again; its effects up to the crash may have happened.${advice}`
        : `The kernel died while ${label} ran ${why}, and restarting it failed (${e.restartFailure ? failureWords(e.restartFailure.failure, e.restartFailure.output) : (e.restartError ?? "unknown")}); the next call tries to start a new kernel. ${label[0].toUpperCase()}${label.slice(1)} was not run again; all state is gone.${advice}`;
    }
  }
}

/**
 * A cell whose kernel stopped responding (docs/python-tool.md, "A kernel that stopped responding"):
 * what was seen, that the interrupt did not help, what happened next; never "a larger timeout".
 */
function unresponsiveText(
  a: { seconds: number },
  silentMs: number,
  Label: string,
  restarted: boolean,
): string {
  const silent = Math.floor(silentMs / 1000);
  const seen = `for ${plural(silent, "second")} it was busy with no output and no reply, and it answered on its control channel but could not finish even that request`;
  const next = restarted
    ? "The interrupt did not help, so the kernel was restarted and its state is lost."
    : "The interrupt did not help.";
  return `${Label} timed out because the kernel stopped responding, not because the cell was slow: when the call's timeout of ${plural(a.seconds, "second")} ran out, ${seen}. ${next} A larger timeout would not help. The usual cause is that the code replaced or closed sys.stdout or sys.stderr (ipykernel then fails inside its own message handler); leave them in place (contextlib.redirect_stdout restores them).`;
}

/**
 * The line for a cell whose call timed out waiting for its session's queue: who holds the kernel
 * (a run by id, with how to follow or stop it; another call; how long), so the model can wait for
 * it or stop it instead of guessing (docs/python-tool.md, "The session's queue").
 */
function queueTimeoutText(Label: string, seconds: number, h: QueueHolderFacts | undefined): string {
  const ran = `${Label} did not run: the call's timeout of ${plural(seconds, "second")} ran out while it waited for the kernel`;
  const behind = h && h.ahead > 0 ? ` (${plural(h.ahead, "other call")} waited before this one)` : "";
  if (!h)
    return `${ran}${behind}. Nothing ran; call again, with a larger timeout if the kernel is busy with long work.`;
  if (h.runId) {
    const wait = JSON.stringify({ run_id: h.runId });
    const stop = JSON.stringify({ run_id: h.runId, action: "interrupt" });
    return `${ran}, which ${holderClause(h)}${behind}. Nothing ran. To wait for ${h.runId} and get its result, call the runs tool: ${wait}; to stop it (the kernel keeps its state unless the cell ignores the interrupt): ${stop}. Then call again.`;
  }
  return `${ran}, which ${holderClause(h)}${behind}. Nothing ran; call again when it has finished, or with a larger timeout.`;
}

/**
 * Who holds a session's kernel, for a call waiting behind it: "run r2 holds (python call, holding
 * it for 41 seconds so far; cell 1 is running)" or "another python call holds (…)".
 */
export function holderClause(h: QueueHolderFacts): string {
  const doing = h.cell ? `; ${h.cell} is running` : h.starting ? "; its kernel is starting" : "";
  const held = `holding it for ${plural(h.heldSeconds, "second")} so far${doing}`;
  if (h.runId) return `run ${h.runId} holds (${h.what ?? "a call"}, ${held})`;
  return `${h.what ? `another ${h.what}` : "another call"} holds (${held})`;
}

/**
 * The note at the top of the first result after a call lost the kernel's state (or a restart on
 * request): when, which call and cell, and why, whether or not that call's own result was read
 * (docs/kernel-state.md, "What the model is told when state is lost").
 */
export function stateLossText(l: StateLoss, o: KernelOwner, now = Date.now()): string {
  const at = `${clock(l.at)}${now - l.at >= 60_000 ? ` (${minutes(now - l.at)} ago)` : ""}`;
  const cell = l.cell ?? "its cell";
  const call = l.runId ? `run ${l.runId} (${l.call ?? "a call"})` : `a ${l.call ?? "call"}`;
  const deaf = `and ${cell} did not stop when interrupted, so the kernel was restarted and its state is lost`;
  let what: string;
  switch (l.cause) {
    case "interrupt": {
      const how = l.reason?.startsWith("interrupted")
        ? l.reason
        : `interrupted${l.reason ? ` (${l.reason})` : ""}`;
      what = `was restarted at ${at}: ${call} was ${how} while ${cell} ran, ${deaf}.`;
      break;
    }
    case "cancel":
      // The cancel's reason is the caller's own words (an MCP client's): not repeated here.
      what = `was restarted at ${at}: ${call} was cancelled while ${cell} ran, ${deaf}.`;
      break;
    case "timeout":
      what = `was restarted at ${at}: ${call} reached its timeout${l.seconds !== undefined ? ` of ${plural(l.seconds, "second")}` : ""} while ${cell} ran, ${deaf}.`;
      break;
    case "restart":
      what =
        l.by === "view"
          ? `was restarted at ${at} from the view, by a person (nbagent view), so its state is lost.`
          : `was restarted at ${at} on request (the kernels tool's restart), so its state is lost.`;
      break;
    case "death": {
      const why = l.death ? ` (${deathReasonText(l.death.reason, l.death.cause)})` : "";
      const then =
        l.death?.restarted === false
          ? "restarting it failed then, so this call started a new one"
          : "it was restarted, and its state is lost";
      what = `died at ${at} while ${cell} of ${call} ran${why}; ${then}.`;
      break;
    }
  }
  return `Note: ${owner(o)} ${what} This call runs in the new kernel: variables, imports and other state from earlier calls are gone.`;
}

/** A kept kernel as a sentence names it: `python session "s1" (cwd /w)`, `the kernel of /w/n.ipynb`. */
function keptKernelText(key: SessionKey): string {
  switch (key.kind) {
    case "python":
      return `python session "${key.sessionId}" (cwd ${key.cwd})`;
    case "notebook":
      return `the kernel of ${key.path}`;
    case "named":
      return `named session "${key.name}"`;
    case "per-call":
      return `a per-call kernel for ${keptKernelText(key.of)}`;
  }
}

/**
 * The note for the call that took an idle kernel's slot (docs/kernel-state.md): which kernel went,
 * that its state is gone, and what the next call there does.
 */
export function evictedText(r: RetiredSession): string {
  const unused = `unused for ${minutes(Math.max(0, r.at - r.lastUsed))}`;
  const next =
    r.key.kind === "notebook"
      ? "the next run of that notebook (or python call in its kernel) starts a new kernel and says so; its cells must run again for their state"
      : "the next call in that session starts a new kernel and says so";
  return `Note: to make room for this call's kernel, ${keptKernelText(r.key)} was shut down at ${clock(r.at)} (${unused}; at most ${r.maxSessions ?? 4} kernels are kept: python sessions and notebook kernels together, and the least recently used idle one goes). Its variables, imports and other state are gone; ${next}.`;
}

/**
 * The line for a cell that did not finish. `diedMeanwhile`: the kernel also died while the cell ran
 * (its own line, before this one, says so and what was lost), so a timeout or cancel that met it
 * only adds that it happened: never "the kernel keeps its state" or "pass a larger timeout".
 */
export function abortText(
  a: CellAbort,
  label: string,
  restartedAfterInterrupt: boolean,
  diedMeanwhile = false,
): string {
  const Label = `${label[0].toUpperCase()}${label.slice(1)}`;
  if (diedMeanwhile && a.kind === "timeout" && !a.beforeStart)
    return `${Label} reached the call's timeout of ${plural(a.seconds, "second")} and was interrupted; the kernel died meanwhile, so none of its state is kept (see above).`;
  if (diedMeanwhile && a.kind === "cancelled" && !a.beforeStart)
    return `${Label} was interrupted: the call was cancelled${a.reason && a.reason !== "Aborted" ? ` (${a.reason})` : ""}; the kernel died meanwhile, so none of its state is kept (see above).`;
  const state = restartedAfterInterrupt
    ? "it did not stop, so the kernel was restarted and its state is lost"
    : "the kernel keeps its state";
  switch (a.kind) {
    case "timeout":
      if (a.beforeStart && a.slot) {
        const holders = a.slot.holders.length ? `: ${a.slot.holders.map(holderText).join("; ")}` : "";
        return `${Label} did not run: the call's timeout of ${plural(a.seconds, "second")} ran out while it waited for a free kernel slot (at most ${a.slot.maxSessions} kernels are kept, python sessions and notebook kernels together, and all were busy with other calls${holders}). Nothing ran; call again when one of them has finished, or with a larger timeout.`;
      }
      if (a.beforeStart && a.queue) return queueTimeoutText(Label, a.seconds, a.queue.holder);
      if (a.beforeStart)
        return `${Label} did not run: the call's timeout of ${plural(a.seconds, "second")} ran out while the kernel started (or restarted and was set up). Nothing ran; call again, with a larger timeout if the kernel is slow to start.`;
      if (a.unresponsive) return unresponsiveText(a, a.unresponsive.silentMs, Label, restartedAfterInterrupt);
      return `${Label} timed out: the call's timeout of ${plural(a.seconds, "second")} ran out and the cell was interrupted; ${state}. Pass a larger timeout for long work.`;
    case "cancelled":
      if (a.beforeStart) return `${Label} did not run: the call was cancelled before it started.`;
      if (a.hostExiting)
        return `${Label} was interrupted: nbagent is exiting${a.reason ? ` (${a.reason})` : ""} and shuts its kernels down, so this kernel's state is lost.`;
      return `${Label} was interrupted: the call was cancelled${a.reason && a.reason !== "Aborted" ? ` (${a.reason})` : ""}; ${state}.`;
    case "kernel-died": {
      const { why, advice } = deathText(a.reason, a.limit, a.cause);
      return `${Label} did not finish: the kernel died ${why}.${advice}`;
    }
    case "restarts-exhausted":
      return `${Label} did not run: Python kernel restarted too many times in this session (it died twice before any code started). The next call starts a new kernel; if it keeps dying, run nbagent doctor.`;
    case "session-closed":
      return `${Label} did not run: the kernel session was shut down (the host is closing); call again.`;
    case "failed":
      return `${Label} did not run: ${a.message}`;
  }
}

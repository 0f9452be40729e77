/**
 * The `kernels` tool (docs/kernels-tool.md): lists this host's live kernels — python sessions,
 * notebook kernels, named sessions — with what runs in each and for how long, idle time and memory,
 * and the background runs and the kernel each uses; restarts or interrupts one. The runtime gives the
 * facts as values (Runtime.listKernels, restartKernel, interruptKernel); the words are made here.
 */
import { realpathSync } from "node:fs";
import { homedir } from "node:os";
import { isAbsolute, relative, resolve } from "node:path";
import type { Static } from "@sinclair/typebox";
import type { KeptSessionState, KernelListing, Runtime, SessionKey } from "../../runtime/index.js";
import { keyText } from "../../runtime/index.js";
import { bytesIec, plural, pluralBare } from "../../sys/units.js";
import type { ToolDescriptor } from "../descriptor.js";
import { describeFailure } from "../failure-text.js";
import { minutes } from "../kernel-text.js";
import { paramProblem } from "../param-problem.js";
import { CellCallTag, queueHolderFacts } from "../queue-holder.js";
import type { Run, RunRegistry } from "../runs/registry.js";
import { Type } from "../schema.js";
import { errorResult, type Tool, type ToolResult } from "../types.js";

export const kernelsSchema = Type.Object(
  {
    action: Type.Optional(
      Type.Union([Type.Literal("list"), Type.Literal("restart"), Type.Literal("interrupt")], {
        description:
          "list (default): every live kernel; restart: a new kernel (its state is lost); interrupt: stop its running cell",
      }),
    ),
    session_id: Type.Optional(
      Type.String({ description: 'Target: a python session (the python tool\'s session, e.g. "default")' }),
    ),
    notebook_path: Type.Optional(Type.String({ description: "Target: this notebook's kernel" })),
    run_id: Type.Optional(
      Type.String({ description: 'Target: the kernel a background run uses (e.g. "r1")' }),
    ),
  },
  { additionalProperties: false },
);

export type KernelsParams = Static<typeof kernelsSchema>;

/** What a result was about, for renderers and hosts (the text says it all). */
export interface KernelsDetails {
  action: "list" | "restart" | "interrupt";
  /** The kernels listed (list), or the one acted on. */
  kernels: { kernel: string; busy: boolean; memoryBytes?: number }[];
}

const DESCRIPTION = [
  "See and manage this host's live kernels: python sessions, notebook kernels, named sessions.",
  "list (default): each kernel's state (idle, or busy with which call or run and for how long), idle time and memory,",
  "the background runs and the kernel each uses, and how many kernels can be kept.",
  'restart (a new kernel: its variables are gone) or interrupt one, named by session_id, notebook_path or run_id: {"action":"interrupt","run_id":"r1"}.',
].join("\n");

/** The kernels tool's descriptor (tools/descriptor.ts). */
export const kernelsDescriptor: ToolDescriptor<KernelsParams, KernelsDetails> = {
  name: "kernels",
  label: "Kernels",
  parameters: kernelsSchema,
  // restart loses a kernel's state
  hints: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
  describe: () => DESCRIPTION,
  create: ({ cwd, runtime, runs }) => createKernelsTool({ cwd, runtime, runs }),
};

export function createKernelsTool(options: {
  cwd: string;
  runtime: Runtime;
  runs: RunRegistry;
}): Tool<KernelsParams, KernelsDetails> {
  const { cwd, runtime, runs } = options;
  return {
    name: kernelsDescriptor.name,
    label: kernelsDescriptor.label,
    description: DESCRIPTION,
    parameters: kernelsSchema,
    async execute(_id, params, signal) {
      const action = (params as KernelsParams | undefined)?.action ?? "list";
      const empty: KernelsDetails = { action, kernels: [] };
      const bad = paramProblem(kernelsSchema, params, {
        tool: "kernels",
        example: '{"action":"list"}',
        nearKeys: {
          "": {
            session: "session_id",
            path: "notebook_path",
            notebook: "notebook_path",
            run: "run_id",
            id: "run_id",
          },
        },
      });
      if (bad) return errorResult(bad, empty);
      const targets = (["session_id", "notebook_path", "run_id"] as const).filter(
        (k) => params[k] !== undefined,
      );
      const listing = runtime.listKernels();
      const view = new KernelsView(listing, runs, cwd);
      if (action === "list") {
        if (targets.length > 0)
          return errorResult(
            `list shows every kernel and takes no target (got ${targets.join(", ")}). Pass {"action":"list"}, or a target with "action":"restart" or "interrupt".`,
            empty,
          );
        return {
          content: [{ type: "text", text: view.listText() }],
          details: view.details(listing.sessions),
        };
      }
      if (targets.length !== 1)
        return errorResult(
          `${action} needs exactly one target: session_id, notebook_path or run_id (got ${targets.length ? targets.join(", ") : "none"}). ${view.targetsText()}`,
          empty,
        );
      const found = view.find(params);
      if ("error" in found) return errorResult(found.error, empty);
      if (action === "interrupt") return interrupt(view, found, runtime, runs, signal);
      return restart(view, found, runtime);
    },
  };
}

/** A target found: the kept session, and the run the caller named (run_id). */
interface Found {
  state: KeptSessionState;
  run?: Run;
}

async function interrupt(
  view: KernelsView,
  found: Found | { run: Run; state?: undefined },
  runtime: Runtime,
  runs: RunRegistry,
  signal: AbortSignal | undefined,
): Promise<ToolResult<KernelsDetails>> {
  const details = (s?: KeptSessionState) => ({
    action: "interrupt" as const,
    kernels: s ? view.details([s]).kernels : [],
  });
  const state = found.state;
  // The run holding the kernel (or the one named): stopped as the runs tool stops it.
  const run = found.run ?? (state && view.runOf(state.holder?.tag));
  if (run) {
    if (run.status !== "running")
      return {
        content: [
          {
            type: "text",
            text: `Run ${run.id} (${run.what}) has already finished: nothing to interrupt. Its result: call the runs tool with {"run_id":"${run.id}"}.`,
          },
        ],
        details: details(state),
      };
    const holds = state?.holder && view.runOf(state.holder.tag) === run;
    runs.interrupt(run, new Error("interrupted through the kernels tool"));
    const result = `Its result: call the runs tool with {"run_id":"${run.id}"}.`;
    if (!holds) {
      const text = `Stopped run ${run.id} (${run.what}) while it waited for its kernel: none of its cells had started. ${result}`;
      return { content: [{ type: "text", text }], details: details(state) };
    }
    // What the interrupt did is known only at the run's end: the cell stops, or it ignores the
    // interrupt and the kernel is restarted once the grace passes (docs/kernels-tool.md). So the
    // answer waits for that end, as the runs tool's interrupt does.
    const b = view.busy(state);
    const what = `Interrupted run ${run.id} (${run.what}), which had held ${view.label(state.key)} for ${b.held}${b.doing ? ` (${b.doing})` : ""}`;
    const ended = await runEnd(run, signal);
    const text =
      ended === "waiting"
        ? `Sent the interrupt to run ${run.id} (${run.what}) in ${view.label(state.key)}, but this call was cancelled before the run ended, so what it did is not known here: the cell stops, or, if it ignores the interrupt, the kernel is restarted and its state lost. ${result}`
        : `${what}. ${interruptOutcome(ended, view.label(state.key))} ${result}`;
    return { content: [{ type: "text", text }], details: details(state) };
  }
  if (!state) return errorResult("nothing to interrupt", details());
  const label = view.label(state.key);
  let done: Awaited<ReturnType<Runtime["interruptKernel"]>>;
  try {
    done = await runtime.interruptKernel(state.key);
  } catch (err) {
    return errorResult(`could not interrupt ${label}: ${describeFailure(err)}`, details(state));
  }
  if (done.kind === "unknown")
    return errorResult(`${label} is no longer kept: nothing to interrupt. ${view.targetsText()}`, details());
  if (done.kind === "idle")
    return {
      content: [
        { type: "text", text: `${cap(label)} is idle: nothing to interrupt (no interrupt was sent).` },
      ],
      details: details(done.state),
    };
  if (done.kind === "starting")
    return {
      content: [
        {
          type: "text",
          text: `${cap(label)} is still starting its kernel for ${view.holderText(done.state)}: no cell runs yet, nothing was interrupted. Call again once it runs.`,
        },
      ],
      details: details(done.state),
    };
  return {
    content: [
      {
        type: "text",
        text: `Sent an interrupt to ${label}: ${busyClause(view.busy(done.state), "had")}. The running cell stops with KeyboardInterrupt unless it catches or ignores it; that call's result shows what happened. This interrupt does not restart the kernel: its state is kept.`,
      },
    ],
    details: details(done.state),
  };
}

async function restart(
  view: KernelsView,
  found: Found | { run: Run; state?: undefined },
  runtime: Runtime,
): Promise<ToolResult<KernelsDetails>> {
  const empty: KernelsDetails = { action: "restart", kernels: [] };
  if (!found.state) {
    const run = found.run;
    return errorResult(
      run.status === "running"
        ? `run ${run.id} (${run.what}) holds no kept kernel yet (it waits for one): nothing to restart. To stop it: {"action":"interrupt","run_id":"${run.id}"}.`
        : `run ${run.id} (${run.what}) has finished and holds no kernel: nothing to restart. Name the kernel by session_id or notebook_path. ${view.targetsText()}`,
      empty,
    );
  }
  const label = view.label(found.state.key);
  let done: Awaited<ReturnType<Runtime["restartKernel"]>>;
  try {
    done = await runtime.restartKernel(found.state.key);
  } catch (err) {
    return errorResult(`could not restart ${label}: ${describeFailure(err)}`, empty);
  }
  if (done.kind === "unknown")
    return errorResult(`${label} is no longer kept: nothing to restart. ${view.targetsText()}`, empty);
  if (done.kind === "restarted") {
    // The session's record (its export as a notebook) marks where its state was lost.
    const key = done.state.key;
    const record =
      key.kind === "python"
        ? runtime.records.python(key.sessionId, key.cwd)
        : key.kind === "named"
          ? runtime.records.named(key.name)
          : undefined;
    await record
      ?.append({ type: "kernel", at: new Date().toISOString(), event: { kind: "reset", by: "kernels-tool" } })
      .catch(() => {});
  }
  if (done.kind === "busy") {
    const run = view.runOf(done.state.holder?.tag);
    const stop = run
      ? `interrupt it first ({"action":"interrupt","run_id":"${run.id}"}) or wait for it (runs tool {"run_id":"${run.id}"}), then restart`
      : `interrupt it first ({"action":"interrupt",${view.targetParam(done.state.key)}}) or let it finish, then restart`;
    return errorResult(
      `${label} is busy: ${busyClause(view.busy(done.state), "has")}. It was not restarted, since that would end the running call and lose its result. ${cap(stop)}.`,
      { action: "restart", kernels: view.details([done.state]).kernels },
    );
  }
  const memory =
    done.state.memoryBytes !== undefined ? ` Its memory now: ${bytesIec(done.state.memoryBytes)}.` : "";
  const after =
    done.state.key.kind === "notebook"
      ? "none of the notebook's cells have run in it (run them with the notebook tool, action run)."
      : "the next call starts from scratch (re-import and re-load what it needs).";
  return {
    content: [
      {
        type: "text",
        text: `Restarted ${label}: it runs a new kernel. Its state is lost: variables, imports and loaded data from earlier calls are gone; ${after}${memory}`,
      },
    ],
    details: { action: "restart", kernels: view.details([done.state]).kernels },
  };
}

/** The cells' record of an ended run, as far as the interrupt's outcome goes. */
interface EndedCells {
  cells?: {
    index: number;
    restartedAfterInterrupt?: boolean;
    kernelEvents?: { kind: string; restarted?: boolean }[];
  }[];
}

/**
 * Waits for the run's end: its result's details, "failed" when it ended in an exception, or
 * "waiting" when this call was cancelled first (the run goes on ending without it).
 */
async function runEnd(run: Run, signal: AbortSignal | undefined): Promise<EndedCells | "failed" | "waiting"> {
  const ended = run.done.then(
    (r) => (r.details ?? {}) as EndedCells,
    () => "failed" as const,
  );
  if (!signal) return ended;
  if (signal.aborted) return "waiting";
  let onAbort!: () => void;
  const cancelled = new Promise<"waiting">((resolve) => {
    onAbort = () => resolve("waiting");
    signal.addEventListener("abort", onAbort, { once: true });
  });
  try {
    return await Promise.race([ended, cancelled]);
  } finally {
    signal.removeEventListener("abort", onAbort);
  }
}

/** What the interrupt did, from the ended run's cells: the state kept, or lost with the kernel's restart. */
function interruptOutcome(ended: EndedCells | "failed", label: string): string {
  const cells = ended === "failed" ? [] : (ended.cells ?? []);
  const deaf = cells.find((c) => c.restartedAfterInterrupt);
  const died = cells.find((c) => c.kernelEvents?.some((e) => e.kind === "died-during-code"));
  const lost =
    "variables, imports and other state from earlier calls are gone; the next call there says so too";
  if (deaf)
    return `Cell ${deaf.index} did not stop when interrupted, so the kernel was restarted: ${label} lost its state (${lost}). The run has ended.`;
  if (died)
    return `The kernel died while cell ${died.index} ran, so ${label} lost its state (${lost}). The run has ended.`;
  if (ended === "failed") return "The run has ended with an error.";
  return "The running cell was interrupted and the run has ended; the kernel keeps its state.";
}

/** "run r2 (python call) has held it for 8 s (cell 1 running)". */
function busyClause(b: BusyFacts, tense: "has" | "had"): string {
  return `${b.who} ${tense} held it for ${b.held}${b.doing ? ` (${b.doing})` : ""}`;
}

/** Who holds a kernel, for how long, and what it does now. */
interface BusyFacts {
  /** "run r2 (python call)", "a python call". */
  who: string;
  /** "8 s". */
  held: string;
  /** "cell 1 running", "its kernel starting". */
  doing?: string;
}

function cap(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}

/** "4 s", "2 min 5 s", "1 h 3 min". */
function durationText(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${s % 60} s`;
  return `${Math.floor(m / 60)} h ${m % 60} min`;
}

function expandPath(p: string, base: string): string {
  const home = p === "~" || p.startsWith("~/") ? homedir() + p.slice(1) : p;
  return isAbsolute(home) ? home : resolve(base, home);
}

/** The listing as the model reads it, and the targets named in it. */
class KernelsView {
  private readonly now = Date.now();
  private readonly runList: Run[];

  constructor(
    private readonly listing: KernelListing,
    private readonly runs: RunRegistry,
    private readonly cwd: string,
  ) {
    this.runList = runs.undelivered();
  }

  /** The run a queue tag belongs to (a cell call that is a background run). */
  runOf(tag: object | undefined): Run | undefined {
    if (!(tag instanceof CellCallTag)) return undefined;
    return this.runList.find((r) => r.recorder === tag.recorder && r.status === "running");
  }

  /** The kept session a run holds, or waits for. */
  private sessionOfRun(run: Run): { state: KeptSessionState; holds: boolean } | undefined {
    for (const state of this.listing.sessions) {
      if (this.runOf(state.holder?.tag) === run) return { state, holds: true };
      if (state.waiting.some((t) => this.runOf(t) === run)) return { state, holds: false };
    }
    return undefined;
  }

  private shownPath(path: string): string {
    const rel = relative(this.cwd, path);
    return rel && !rel.startsWith("..") && !isAbsolute(rel) ? rel : path;
  }

  label(key: SessionKey): string {
    switch (key.kind) {
      case "python":
        return `python session "${key.sessionId}"${key.cwd === this.cwd ? "" : ` (cwd ${key.cwd})`}`;
      case "notebook":
        return `the notebook kernel of ${this.shownPath(key.path)}`;
      case "named":
        return `named session "${key.name}"`;
      case "per-call":
        return `a per-call kernel for ${this.label(key.of)}`;
    }
  }

  /** The parameter that names this kernel as a target ("session_id":"x"). */
  targetParam(key: SessionKey): string {
    if (key.kind === "notebook") return `"notebook_path":${JSON.stringify(this.shownPath(key.path))}`;
    if (key.kind === "named") return `"session_id":${JSON.stringify(key.name)}`;
    if (key.kind === "python") return `"session_id":${JSON.stringify(key.sessionId)}`;
    return this.targetParam(key.of);
  }

  /** Who holds the kernel: "run r1 (python call)" or "a python call". */
  holderText(state: KeptSessionState): string {
    const facts = queueHolderFacts(state.holder, 0, this.now);
    if (!facts) return "a call";
    if (facts.runId) return `run ${facts.runId} (${facts.what ?? "a call"})`;
    return facts.what ? `a ${facts.what}` : "a call";
  }

  /** Who holds the kernel (the queue holder's facts, queue-holder.ts), for how long, doing what. */
  busy(state: KeptSessionState): BusyFacts {
    const facts = queueHolderFacts(state.holder, 0, this.now);
    const doing = facts?.cell ? `${facts.cell} running` : facts?.starting ? "its kernel starting" : undefined;
    return {
      who: this.holderText(state),
      held: durationText((facts?.heldSeconds ?? 0) * 1000),
      ...(doing ? { doing } : {}),
    };
  }

  private kernelLine(state: KeptSessionState): string {
    const where =
      state.backend === undefined
        ? ""
        : state.backend === "local"
          ? "local"
          : this.listing.kernels.kind === "remote"
            ? `gateway ${this.listing.kernels.url}`
            : this.listing.kernels.kind === "shared"
              ? "the shared local gateway"
              : "gateway";
    const id = state.kernelId ? `, kernel id ${state.kernelId}` : "";
    const parts: string[] = [];
    if (!state.started) parts.push(`starting its kernel for ${this.holderText(state)}`);
    else if (state.disconnected)
      parts.push(
        "its connection to the kernel was lost (the gateway stayed unreachable); the kernel may still run there with its state, and the next call on it connects again",
      );
    else if (!state.alive) parts.push("its kernel died (the next call on it starts a new one: state lost)");
    else if (state.holder) {
      const b = this.busy(state);
      parts.push(`busy for ${b.held}: ${b.who}${b.doing ? `, ${b.doing}` : ""}`);
    } else parts.push(`idle for ${durationText(this.now - state.lastUsed)} (since its last call ended)`);
    if (state.waiting.length > 0) {
      const ids = state.waiting.map((t) => this.runOf(t)?.id).filter((x): x is string => !!x);
      parts.push(
        `${plural(state.waiting.length, "call")} waiting for it${ids.length ? ` (${ids.map((i) => `run ${i}`).join(", ")})` : ""}`,
      );
    }
    if (state.started && state.alive) {
      if (state.memoryBytes !== undefined) parts.push(`memory ${bytesIec(state.memoryBytes)}`);
      else if (!this.listing.facts.memory) parts.push("memory not known (the kernel runs on the gateway)");
      else parts.push("memory could not be read");
    }
    return `- ${this.label(state.key)}${where ? ` [${where}${id}]` : ""}: ${parts.join("; ")}.`;
  }

  private runLine(run: Run): string {
    const at = this.sessionOfRun(run);
    if (run.status !== "running") {
      const ago = durationText(this.now - (run.finishedAt ?? this.now));
      return `- run ${run.id} (${run.what}): finished ${ago} ago, result not yet read (runs tool {"run_id":"${run.id}"}).`;
    }
    const where = at
      ? at.holds
        ? `in ${this.label(at.state.key)}`
        : `waiting for ${this.label(at.state.key)}`
      : "waiting for a kernel (a free slot, or its own per-call kernel)";
    return `- run ${run.id} (${run.what}): running for ${durationText(this.now - run.startedAt)}, ${where}.`;
  }

  listText(): string {
    const { sessions, maxSessions, idleTimeoutMs } = this.listing;
    const free = Math.max(0, maxSessions - sessions.length);
    const runLines = this.runList.map((r) => this.runLine(r));
    const lines: string[] = [];
    if (sessions.length === 0)
      lines.push(
        `No live kernels: no python session, notebook kernel or named session is kept in this process (at most ${maxSessions} can be). A python call or a notebook run starts one.`,
      );
    else
      lines.push(
        `${plural(sessions.length, "live kernel")} (at most ${maxSessions} kept; ${pluralBare(free, "slot")} free; a new one beyond that replaces the least recently used idle one; one unused for ${minutes(idleTimeoutMs)} is shut down):`,
        ...sessions.map((s) => this.kernelLine(s)),
      );
    lines.push(runLines.length ? "Background runs:" : "No background runs.", ...runLines);
    if (this.listing.facts.namedSessions)
      lines.push(
        "Named sessions of other processes on this gateway are not listed here; the command `nbagent sessions` lists them all.",
      );
    if (sessions.length > 0) {
      const first = sessions[0]!;
      const busy = sessions.find((s) => s.holder !== undefined);
      const run = busy && this.runOf(busy.holder?.tag);
      const stop = run ? `"run_id":"${run.id}"` : this.targetParam((busy ?? first).key);
      lines.push(
        `To interrupt a running cell: {"action":"interrupt",${stop}}; to restart a kernel (a new kernel, its state lost): {"action":"restart",${this.targetParam(first.key)}}. Targets: session_id, notebook_path or run_id.`,
      );
    }
    return lines.join("\n");
  }

  /** "Targets: session_id "default"; notebook_path "a.ipynb"; run_id "r1"." */
  targetsText(): string {
    const sessions = this.listing.sessions.flatMap((s) =>
      s.key.kind === "python" ? [s.key.sessionId] : s.key.kind === "named" ? [s.key.name] : [],
    );
    const notebooks = this.listing.sessions.flatMap((s) =>
      s.key.kind === "notebook" ? [this.shownPath(s.key.path)] : [],
    );
    const running = this.runList.filter((r) => r.status === "running").map((r) => r.id);
    const parts = [
      sessions.length ? `session_id ${[...new Set(sessions)].map((s) => JSON.stringify(s)).join(", ")}` : "",
      notebooks.length ? `notebook_path ${notebooks.map((s) => JSON.stringify(s)).join(", ")}` : "",
      running.length ? `run_id ${running.map((s) => JSON.stringify(s)).join(", ")}` : "",
    ].filter(Boolean);
    return parts.length
      ? `Valid targets: ${parts.join("; ")}.`
      : "There are no live kernels or running runs in this process to name.";
  }

  /** The target the params name, or an Error: text listing the valid ones. */
  find(params: KernelsParams): Found | { run: Run; state?: undefined } | { error: string } {
    const sessions = this.listing.sessions;
    if (params.run_id !== undefined) {
      const run = this.runs.get(params.run_id);
      if (!run) return { error: `no run ${JSON.stringify(params.run_id)} here. ${this.targetsText()}` };
      const at = run.status === "running" ? this.sessionOfRun(run) : undefined;
      return at?.holds ? { state: at.state, run } : { run };
    }
    if (params.session_id !== undefined) {
      const id = params.session_id;
      const matches = sessions.filter(
        (s) =>
          (s.key.kind === "python" && s.key.sessionId === id) ||
          (s.key.kind === "named" && s.key.name === id),
      );
      const state =
        matches.find((s) => s.key.kind === "python" && s.key.cwd === this.cwd) ??
        matches.sort((a, b) => b.lastUsed - a.lastUsed)[0];
      if (!state)
        return { error: `no live python session ${JSON.stringify(id)} here. ${this.targetsText()}` };
      return { state };
    }
    const given = params.notebook_path ?? "";
    const abs = expandPath(given, this.cwd);
    let real = abs;
    try {
      real = realpathSync(abs);
    } catch {
      // not on disk: compared as given
    }
    const state = sessions.find(
      (s) => s.key.kind === "notebook" && (s.key.path === real || s.key.path === abs),
    );
    if (!state) return { error: `no live kernel for the notebook ${given} here. ${this.targetsText()}` };
    return { state };
  }

  details(states: KeptSessionState[]): KernelsDetails {
    return {
      action: "list",
      kernels: states.map((s) => ({
        kernel: keyText(s.key),
        busy: s.holder !== undefined,
        ...(s.memoryBytes !== undefined ? { memoryBytes: s.memoryBytes } : {}),
      })),
    };
  }
}

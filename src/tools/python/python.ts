/**
 * The `python` tool (docs/python-tool.md): runs cells in order in one Jupyter kernel with persistent state.
 * Validates params, takes the session's queue turn through the runtime, streams output into an
 * OutputSink (bounded, full text spilled to an artifact), and builds the model's text, images and
 * details. Progress goes to onUpdate while cells run.
 */
import { statSync } from "node:fs";
import { homedir } from "node:os";
import { isAbsolute, resolve } from "node:path";
import type { Static } from "@sinclair/typebox";
import { failureReport } from "../../kernel/errors.js";
import type { ReplySeen, SentAhead } from "../../kernel/types.js";
import { loadNotebook, NotebookFileError } from "../../notebook/index.js";
import { CALL_OUTPUT_BYTES, DEFAULT_IMAGE_BUDGET, type ImageBudget } from "../../output/model-budgets.js";
import { DeadKernelNotRestartedError, KernelUnreachableError } from "../../runtime/errors.js";
import { notebookSession } from "../../runtime/notebook-session.js";
import { preludeHelpers } from "../../runtime/prelude.js";
import type { Runtime } from "../../runtime/runtime.js";
import type { SessionExecuteResult, SessionSpec } from "../../runtime/session.js";
import {
  CellRecording,
  type KernelRecordEvent,
  type RecordedKernel,
  type SessionRecord,
} from "../../runtime/session-record.js";
import type { SessionMode } from "../../runtime/sessions.js";
import { inUnit } from "../../sys/units.js";
import { CellCall, callDeadline } from "../cell-call.js";
import { factsOf, type ToolDescriptor, type ToolFacts } from "../descriptor.js";
import { describeFailure, noKernelspecText } from "../failure-text.js";
import {
  deadNotRestartedText,
  isolationNote,
  minutes,
  namedSessionText,
  unreachableKernelText,
} from "../kernel-text.js";
import { paramProblem } from "../param-problem.js";
import { recordStateLoss } from "../queue-holder.js";
import { cellRunRefs } from "../result-refs.js";
import type { RunRegistry } from "../runs/registry.js";
import { cwdOutsideRoots, fileErrorText, sandboxRoots } from "../sandbox-paths.js";
import { Type } from "../schema.js";
import { errorResult, type Tool, type ToolResult, type ToolUpdate } from "../types.js";
import { emptyDetails as emptyPythonDetails, type PythonToolDetails } from "./result.js";
import {
  checkExportTarget,
  exportSessionNotebook,
  exportText,
  SessionExportError,
} from "./session-notebook.js";

/** The timeout of a call that gives none where nothing goes on in the background (docs/python-tool.md). */
export const DEFAULT_TIMEOUT_SECONDS = 30;

export const pythonSchema = Type.Object(
  {
    cells: Type.Optional(
      Type.Array(
        Type.Object(
          {
            code: Type.String({ description: "Python source of the cell" }),
            title: Type.Optional(Type.String({ description: "Short label shown as [i/n] title" })),
          },
          { additionalProperties: false },
        ),
        { minItems: 1, description: "Cells to run in order in one kernel; stops at the first failing cell" },
      ),
    ),
    timeout: Type.Optional(
      Type.Number({
        exclusiveMinimum: 0,
        description:
          "Seconds for the whole call (queue, start, all cells). Default: no limit where a call still running after its wait goes on in the background (MCP, pi, nbagent batch); 30 in a one-shot nbagent call",
      }),
    ),
    wait: Type.Optional(
      Type.Number({
        exclusiveMinimum: 0,
        description:
          "Seconds to wait for the result (default 50). A call still running then returns its output so far with a run id and goes on in the background; the runs tool waits for more or interrupts it. A one-shot nbagent call has no background: it waits for the end and ignores this",
      }),
    ),
    reset: Type.Optional(
      Type.Boolean({ description: "Restart the kernel (fresh state) before the first cell" }),
    ),
    cwd: Type.Optional(
      Type.String({ description: "Working directory of the kernel (default: the session's)" }),
    ),
    mode: Type.Optional(
      Type.Union([Type.Literal("session"), Type.Literal("per-call")], {
        description:
          "session (default): keep the kernel across calls; per-call: a fresh kernel for this call only",
      }),
    ),
    session: Type.Optional(
      Type.String({ description: "Name of a separate kernel session (default: the main one)" }),
    ),
    export_notebook: Type.Optional(
      Type.String({
        description:
          "Write every cell this session ran (this call's too, after they run) with its outputs to this new .ipynb file (never over an existing file); with no cells, only export",
      }),
    ),
    notebook_path: Type.Optional(
      Type.String({
        description:
          "Run in this notebook's own kernel (the one the notebook tool's run uses) to inspect its state or try a fix; the file is not changed",
      }),
    ),
  },
  { additionalProperties: false },
);

export type PythonParams = Static<typeof pythonSchema>;

export interface PythonToolOptions {
  /** The session's working directory (default cwd of kernels; relative `cwd` params resolve here). */
  cwd: string;
  runtime: Runtime;
  /** Session id for calls that name none (default: the runtime's). */
  sessionId?: string;
  defaultMode?: SessionMode;
  /** Bytes of text shown to the model (default CALL_OUTPUT_BYTES: 50 KiB). */
  maxOutputBytes?: number;
  images?: ImageBudget;
  /** Minimum interval between onUpdate calls while output streams (default 250 ms). */
  updateIntervalMs?: number;
  /** Runs that outlive a call (docs/runs.md); without it a call waits for its result however long. */
  runs?: RunRegistry;
}

function describe(maxBytes: number, facts: ToolFacts): string {
  const { namedSessions, limits, background } = facts;
  const idle = minutes(limits.idleTimeoutMs);
  const helpers = preludeHelpers()
    .map((h) => `- ${h.doc.includes("(") ? h.doc : `${h.name}: ${h.doc}`}`)
    .join("\n");
  return [
    "Run Python in a persistent Jupyter (IPython) kernel. Cells run in order in one kernel; the call stops at the first",
    "failing cell. Results name cells by their 1-based position ([1/3], cell 1).",
    "State (variables, imports, loaded data) persists across calls of the same session while the host runs, until:",
    `the kernel is idle for ${idle}, or a new kernel is needed beyond the ${limits.maxSessions} kept (at most ${limits.maxSessions}, python sessions`,
    "and notebook kernels together; the least recently used idle one is shut down), or a cell kills it, or a cell ignores an",
    "interrupt (timeout, cancel) so the kernel is restarted, or the kernels tool restarts it, or you pass reset.",
    "The next result then says so at the top; a cell that killed the kernel is never run again automatically.",
    "IPython syntax works (%magics, !shell). stdout/stderr, results and displays are returned as text, at most",
    `${inUnit(maxBytes, "KB", 0, "")} per call: a cell that does not fit shows its head and tail (errors always) and the whole output is saved as artifact://<id> (read it with the artifact tool). Plots and images`,
    "(matplotlib, PIL, IPython.display) come back as images. There is no stdin: input() returns '' once, then raises EOFError.",
    ...(background
      ? [
          "A call still running after wait seconds (default 50) returns its output so far with a run id and goes on in the background",
          "with no time limit unless you pass timeout (seconds); the runs tool waits for it or interrupts it.",
          "Use mode 'per-call' for a throwaway kernel, session to keep separate",
        ]
      : [
          "Use timeout (seconds, default 30) for long work, mode 'per-call' for a throwaway kernel, session to keep separate",
        ]),
    "kernels, notebook_path to inspect a notebook's own kernel (no helpers there: it behaves as in Jupyter).",
    ...(facts.hostEnvironment
      ? [
          "Host environment variables that look like secrets (API keys, tokens, passwords, URLs with credentials) are not",
          "passed to the kernel; a session's first result names them, and only the user can let one through.",
        ]
      : [
          "The kernel keeps the environment its server gives it: this machine's variables are not passed (only KERNEL_*",
          "ones, never one that looks like a secret).",
        ]),
    ...(namedSessions
      ? [
          "Kernels run on a Jupyter gateway: a session you name (session) is kept there after this process ends, so a later",
          `call with the same session, from another process too, finds its state (until it is unused for ${idle}); its`,
          "first result says whether it re-attached to the running kernel (with its kernel id) or is new.",
        ]
      : []),
    "",
    "Helpers preloaded in the kernel:",
    helpers,
  ].join("\n");
}

function expandPath(p: string, base: string): string {
  const home = p === "~" || p.startsWith("~/") ? homedir() + p.slice(1) : p;
  return isAbsolute(home) ? home : resolve(base, home);
}

/** How a bad python call is told what it meant (param-problem.ts). */
const PYTHON_WORDS = {
  tool: "python",
  example: '{"cells":[{"code":"..."}]}',
  nearKeys: {
    "": {
      code: "cells",
      source: "cells",
      cell: "cells",
      timeout_seconds: "timeout",
      session_id: "session",
      path: "notebook_path",
      notebook: "notebook_path",
      export: "export_notebook",
      restart: "reset",
    },
    "/cells/*": { source: "code", content: "code", text: "code", name: "title", label: "title" },
  },
};

function validate(params: unknown): string | undefined {
  const problem = paramProblem(pythonSchema, params, PYTHON_WORDS);
  if (problem) return problem;
  const p = params as PythonParams;
  if (p.cells === undefined && p.export_notebook === undefined)
    return `cells is required (unless export_notebook is given). Pass ${PYTHON_WORDS.example}.`;
  return undefined;
}

/** The python tool's descriptor (tools/descriptor.ts): what every surface lists and draws it by. */
export const pythonDescriptor: ToolDescriptor<PythonParams, PythonToolDetails> = {
  name: "python",
  label: "Python",
  parameters: pythonSchema,
  hints: { readOnlyHint: false, openWorldHint: false },
  describe: (facts) => describe(CALL_OUTPUT_BYTES, facts),
  refs: cellRunRefs,
  create: ({ cwd, runtime, runs }) => createPythonTool({ cwd, runtime, runs }),
};

export function createPythonTool(options: PythonToolOptions): Tool<PythonParams, PythonToolDetails> {
  const maxBytes = options.maxOutputBytes ?? CALL_OUTPUT_BYTES;
  const imageBudget = { ...DEFAULT_IMAGE_BUDGET, ...options.images };
  const updateEvery = options.updateIntervalMs ?? 250;
  // Where calls go on in the background, one without a timeout has no time limit (docs/runs.md).
  const background = options.runs?.background === true;
  // Under --sandbox: notebook_path and export_notebook stay inside the session's folder.
  const roots = sandboxRoots(options.runtime.kernels.sandbox !== undefined, options.cwd);
  return {
    name: pythonDescriptor.name,
    label: pythonDescriptor.label,
    description: describe(maxBytes, factsOf(options.runtime, background)),
    parameters: pythonSchema,
    async execute(_toolCallId, params, signal, onUpdate) {
      const problem = validate(params);
      const mode: SessionMode = (params as PythonParams)?.mode ?? options.defaultMode ?? "session";
      const session =
        (params as PythonParams)?.session ?? options.sessionId ?? options.runtime.defaultSessionId;
      const emptyDetails = (cwd: string) => emptyPythonDetails(mode, session, cwd, maxBytes);
      if (problem) return errorResult(problem, emptyDetails(options.cwd));
      const cwd = params.cwd ? expandPath(params.cwd, options.cwd) : options.cwd;
      const cells = params.cells ?? [];
      try {
        if (!statSync(cwd).isDirectory()) throw new Error();
      } catch {
        return errorResult(`cwd is not a directory: ${cwd}. Pass an existing directory.`, emptyDetails(cwd));
      }
      // Under --sandbox a kernel's working directory becomes writable to it: only inside the roots.
      const outside = roots && cwdOutsideRoots(cwd, roots);
      if (outside) return errorResult(outside, emptyDetails(options.cwd));
      // On a gateway, a session the caller named (or the runtime's own, CLI --session) outlives this process.
      const named =
        mode === "session" && params.notebook_path === undefined
          ? options.runtime.namedSessionFor(session, params.session !== undefined)
          : undefined;
      let spec: SessionSpec = { sessionId: session, cwd, ...(named ? { named } : {}) };
      // The session's record (docs/python-tool.md, "The session as a notebook"); none in a notebook's kernel.
      const records = options.runtime.records;
      // A per-call kernel's record holds that call's cells: kept only when this call exports them.
      const perCallExport = mode === "per-call" && params.export_notebook !== undefined && cells.length > 0;
      const record =
        params.notebook_path !== undefined
          ? undefined
          : mode === "per-call"
            ? perCallExport
              ? records.perCall(session)
              : undefined
            : named
              ? records.named(named)
              : records.python(session, cwd);
      const exportTo =
        params.export_notebook === undefined
          ? undefined
          : { path: expandPath(params.export_notebook, options.cwd), shown: params.export_notebook, roots };
      if (exportTo) {
        const ended = await exportBeforeRun({
          exportTo,
          record,
          records,
          session,
          mode,
          cellCount: cells.length,
          inNotebook: params.notebook_path !== undefined,
          details: () => emptyDetails(cwd),
        });
        if (ended) return ended;
      }
      if (params.notebook_path !== undefined) {
        const notebookPath = expandPath(params.notebook_path, options.cwd);
        if (mode === "per-call") {
          return errorResult(
            "notebook_path runs in the notebook's kept kernel; do not combine it with mode per-call.",
            emptyDetails(cwd),
          );
        }
        try {
          const loaded = await loadNotebook(notebookPath, params.notebook_path, { roots });
          ({ spec } = await notebookSession(
            loaded.path,
            loaded.notebook,
            session,
            () => options.runtime.kernelSpecNames(),
            params.cwd ? cwd : undefined,
            options.runtime.choice.kernelName,
          ));
        } catch (err) {
          if (err instanceof NotebookFileError)
            return errorResult(
              fileErrorText(err, params.notebook_path, { path: notebookPath, cwd: options.cwd }),
              emptyDetails(cwd),
            );
          throw err;
        }
      }
      const details = emptyDetails(spec.cwd);
      if (params.notebook_path !== undefined) details.kernelOwner = "notebook";
      details.reset = params.reset === true;
      details.cells = cells.map((c, i) => ({ index: i + 1, title: c.title, status: "pending" }));
      const what = params.notebook_path ? `python call in ${params.notebook_path}'s kernel` : "python call";
      const call = new CellCall({
        runtime: options.runtime,
        runs: options.runs,
        what,
        session,
        deadline: callDeadline(params.timeout, background, DEFAULT_TIMEOUT_SECONDS),
        details,
        maxBytes,
        images: imageBudget,
        updateIntervalMs: updateEvery,
        onUpdate: onUpdate as ToolUpdate<PythonToolDetails> | undefined,
      });
      const { recorder, deadline, tag } = call;

      const writes = new RecordWrites(record, () => recorder.sink.dump().artifactId);

      const work = async (runSignal: AbortSignal): Promise<ToolResult<PythonToolDetails>> => {
        const startError = await call.inSession(
          spec,
          { mode, reset: params.reset === true, signal: runSignal },
          async (lease) => {
            if (lease.named)
              details.notes = [
                ...(details.notes ?? []),
                namedSessionText(lease.named, options.runtime.sessions.idleTimeoutMs),
              ];
            const exposed = lease.kernelStarted ? isolationNote(lease.kernel().isolation) : undefined;
            if (exposed) details.notes = [...(details.notes ?? []), exposed];
            if (params.notebook_path !== undefined && lease.kernelStarted && !lease.replaced) {
              details.notes = [
                ...(details.notes ?? []),
                `Note: ${params.notebook_path}'s kernel was started for this call: none of the notebook's cells have run in it, so their variables do not exist. Run them first with the notebook tool (action run).`,
              ];
            }
            if (record) {
              const event = params.reset ? "reset" : lease.kernelStarted ? "start" : undefined;
              if (event || record.isEmpty()) {
                const kernel = lease.kernel();
                const kernelspec = await withinMs(
                  options.runtime.kernelSpecInfo(spec.kernelName),
                  KERNELSPEC_WAIT_MS,
                );
                writes.kernel(event ?? "attach", {
                  ...(kernelspec ? { kernelspec } : {}),
                  ...(kernel.info.languageInfo ? { language_info: kernel.info.languageInfo } : {}),
                  ...(lease.named ? { kernelId: lease.named.kernelId } : {}),
                });
              }
            }
            // Pipelined cells (docs/python-tool.md, "Pipelined cells"): the next cell's request goes
            // at this one's reply when that reply lets the call go on; it is taken over in its turn.
            let ahead: SentAhead | undefined;
            let stopped = false;
            const sendNext = (next: number, reply: ReplySeen): boolean => {
              if (reply.status !== "ok" || reply.interrupted) return false;
              if (stopped || runSignal.aborted || deadline.expired) return false;
              ahead = lease.kernel().sendAhead?.(cells[next].code);
              return ahead !== undefined;
            };
            try {
              for (const [i, cell] of cells.entries()) {
                // A cell sent ahead is in the kernel: it is taken over (and reported) even after a stop.
                if (stopped && !ahead) break;
                call.startCell(i + 1);
                const recording = record ? new CellRecording(cell.code) : undefined;
                const sent = ahead;
                ahead = undefined;
                const r = await lease.execute(cell.code, {
                  ...recorder.hooks(i + 1),
                  ...(recording ? { onIOPub: recording.onIOPub } : {}),
                  ...(sent ? { ahead: sent } : {}),
                  ...(i + 1 < cells.length ? { onReply: (reply: ReplySeen) => sendNext(i + 1, reply) } : {}),
                });
                if (recording) writes.cell(recording, r);
                if (!recorder.finishCell(i + 1, r, deadline, false, runSignal)) stopped = true;
              }
            } finally {
              // Never left after the loop, unless a cell's execution threw while it was queued.
              (ahead as SentAhead | undefined)?.release();
            }
            recordStateLoss(lease, tag, signal, runSignal);
          },
        );
        await writes.done();
        const result = await recorder.result();
        try {
          if (startError instanceof KernelUnreachableError)
            return errorResult(
              unreachableKernelText(startError, "session", describeFailure(startError.error)),
              details,
            );
          if (startError instanceof DeadKernelNotRestartedError)
            return errorResult(
              deadNotRestartedText(startError, describeFailure(startError.startError)),
              details,
            );
          if (startError !== undefined) {
            // A session's kernelspec is the host's setting, not a parameter: say who can change it.
            const failure = failureReport(startError)?.failure;
            if (failure?.kind === "no-such-kernelspec" && params.notebook_path === undefined)
              return errorResult(
                `could not start the Python kernel: ${noKernelspecText(failure, false)}. The python tool starts the kernelspec "${failure.name}", which is set where nbagent runs (NBAGENT_KERNEL, or the host's kernelName option; default python3): a call cannot choose another.`,
                details,
              );
            return errorResult(`could not start the Python kernel: ${describeFailure(startError)}`, details);
          }
          if (record && exportTo) await exportAfterRun(result, record, exportTo, writes.failure);
          return result;
        } finally {
          if (record && mode === "per-call") await records.discard(record);
        }
      };
      return call.start(work, {
        wait: params.wait,
        signal,
        onUpdate: onUpdate as ToolUpdate<unknown> | undefined,
      });
    },
  };
}

/** How long a call waits for its kernelspec's names for the session's record (else it records none). */
const KERNELSPEC_WAIT_MS = 5_000;

/** The promise's value, or undefined when it fails or takes longer than `ms`. */
async function withinMs<T>(p: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ms);
    timer.unref();
  });
  try {
    return await Promise.race([p.catch(() => undefined), late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The appends of one call to its session's record, in order (a cell's entry follows the kernel
 * events before it and precedes those after it). A failed write does not fail the call: the first
 * failure is kept for the export's text.
 */
class RecordWrites {
  private chain: Promise<void> = Promise.resolve();
  failure?: string;

  constructor(
    private readonly record: SessionRecord | undefined,
    private readonly artifactId: () => string | undefined,
  ) {}

  kernel(kind: "start" | "attach" | "reset", meta: RecordedKernel): void {
    this.event({ kind }, meta);
  }

  cell(recording: CellRecording, r: SessionExecuteResult): void {
    for (const e of r.events) {
      if (e.kind === "restarted-dead-kernel") this.event({ kind: "restart" });
      else if (e.kind === "retried-before-start") this.event({ kind: "restart", reason: e.reason });
    }
    const artifact = recording.tooLarge ? this.artifactId() : undefined;
    this.push(recording.finish(r.executionCount, artifact ? `artifact://${artifact}` : undefined));
    for (const e of r.events)
      if (e.kind === "died-during-code")
        this.event({ kind: "died", reason: e.reason, restarted: e.restarted });
    if (r.kernelRestarted) this.event({ kind: "interrupt" });
  }

  private event(event: KernelRecordEvent, meta: RecordedKernel = {}): void {
    this.push({ type: "kernel", at: new Date().toISOString(), event, ...meta });
  }

  private push(entry: Parameters<SessionRecord["append"]>[0]): void {
    const record = this.record;
    if (!record) return;
    this.chain = this.chain.then(() =>
      record.append(entry).catch((err: Error) => {
        this.failure ??= err.message;
      }),
    );
  }

  done(): Promise<void> {
    return this.chain;
  }
}

/** Writes the session's notebook after this call's cells and adds what happened to the result. */
async function exportAfterRun(
  result: ToolResult<PythonToolDetails>,
  record: SessionRecord,
  to: { path: string; shown: string; roots?: readonly string[] },
  recordFailure: string | undefined,
): Promise<void> {
  const first = result.content[0] as { type: "text"; text: string };
  let line: string;
  try {
    const exported = await exportSessionNotebook(record, to.path, to.shown, to.roots);
    result.details.exported = exported;
    line = exportText(exported);
    if (recordFailure)
      line += ` Cells may be missing: writing the session's record failed (${recordFailure}).`;
  } catch (err) {
    if (!(err instanceof SessionExportError)) throw err;
    line = `Not exported: ${err.message}`;
    result.isError = true;
  }
  first.text = first.text ? `${first.text}\n${line}` : line;
}

/**
 * What export_notebook does before any cell runs (docs/python-tool.md, "The session as a notebook"):
 * refuses what cannot be exported and checks the target, changing nothing; a call with no cells
 * exports the session now. A result ends the call; undefined lets its cells run (exported after).
 */
async function exportBeforeRun(o: {
  exportTo: { path: string; shown: string; roots: string[] | undefined };
  record: SessionRecord | undefined;
  records: Runtime["records"];
  session: string;
  mode: SessionMode;
  cellCount: number;
  inNotebook: boolean;
  details: () => PythonToolDetails;
}): Promise<ToolResult<PythonToolDetails> | undefined> {
  const { exportTo, record, records, session, mode, cellCount, inNotebook, details } = o;
  const roots = exportTo.roots;
  const none = cellCount ? " No cell ran." : "";
  if (inNotebook)
    return errorResult(
      "export_notebook exports a python session; a call with notebook_path runs in the notebook's kernel, whose cells are the notebook itself. Nothing was written.",
      details(),
    );
  if (!record)
    return errorResult(
      "nothing to export: a per-call kernel ends with its call, so its export holds that call's cells; pass cells with export_notebook. Nothing was written.",
      details(),
    );
  try {
    await checkExportTarget(exportTo.path, exportTo.shown, roots);
  } catch (err) {
    if (record.transient && mode === "per-call") await records.discard(record);
    if (err instanceof SessionExportError) return errorResult(`${err.message}${none}`, details());
    throw err;
  }
  if (cellCount === 0) {
    const empty = details();
    if (record.isEmpty())
      return errorResult(
        `nothing to export: this session (${session}) has run no cells. Nothing was written.`,
        empty,
      );
    try {
      empty.exported = await exportSessionNotebook(record, exportTo.path, exportTo.shown, roots);
    } catch (err) {
      if (err instanceof SessionExportError) return errorResult(err.message, empty);
      throw err;
    }
    return { content: [{ type: "text", text: exportText(empty.exported) }], details: empty };
  }
  return undefined;
}

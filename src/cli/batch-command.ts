/**
 * `nbagent batch [--cwd DIR]`: many tool calls in one process, so they share kernels (a notebook's
 * kernel state, python sessions). Reads one JSON call per line on stdin —
 * `{"tool":"notebook","params":{…}}` — and prints one result per line, in the `call --json` shape.
 * A line that is not a valid call gets `{"error":"…","line":N}` and the batch goes on. Exit codes:
 * HELP below and docs/cli.md.
 */

import { resolve } from "node:path";
import { createInterface } from "node:readline";
import { parseArgs } from "node:util";
import { pluralBare } from "../sys/units.js";
import { createToolbox } from "../tools/index.js";
import { serveViewSocket } from "../view/host.js";
import type { Command } from "./command.js";
import { resultJson } from "./output.js";
import { sessionName } from "./params.js";
import { interruptExitCode, OUTPUT_CLOSED_EXIT, stdoutClosed, withInterruptSignal } from "./posix-signals.js";

const HELP = `nbagent batch — run tool calls from stdin, one JSON object per line, in one process

usage: nbagent batch [--session NAME] [--gateway URL] [--cwd DIR]

Each line is a call: {"tool":"notebook"|"python"|"kernels"|"artifact"|"runs","params":{…}}. Calls run one after the
other in one process, so they share kernels: run a notebook, then inspect its kernel's variables
with python {"notebook_path":…}; python sessions keep their state from line to line. Each call's
result is printed on its own line as {"content":[…],"details":{…},"isError":bool} (the shape of
nbagent call --json). A line that is not a call gets {"error":"…","line":N} instead and the batch
goes on. Blank lines are skipped.

A python call or notebook run still going after its wait (50 s, "wait" to change it) answers its
line with its output so far and a run id, and goes on while later lines run; without a "timeout"
it has no time limit. The runs tool follows it ({"run_id":"r1"}). When the input ends, every run
whose final result no line received is waited for and that result printed, one more line each
(as a runs call's result reads); SIGINT/SIGTERM interrupts them instead.

options:
  --session NAME  python calls that name no session run in the named session NAME, kept on a
                  gateway after the batch ends, so a later batch or call with --session NAME finds
                  its variables (--gateway / NBAGENT_GATEWAY_URL; else the shared local gateway,
                  started on demand; docs/backends.md)
  --gateway URL   run kernels on this Jupyter server or Enterprise Gateway (same as
                  NBAGENT_GATEWAY_URL); its token from NBAGENT_GATEWAY_TOKEN or
                  --gateway-token-file F
  --cwd DIR       the session's working directory; relative paths resolve against it (default: here)

exit (the highest that applies):
  0    every line was a call and no result was an error (the final results of runs included)
  1    every line was a call, and at least one result was an error (isError)
  2    at least one line was not a call (not JSON, not {"tool","params"}, unknown tool) and got
       {"error":…}; or bad options (nothing was read)
  130  interrupted by SIGINT (143: SIGTERM), also while waiting for a line: the running call ends
       with its (cancelled) result, later lines are not read, the kernels are shut down; stderr
       says how many lines were answered
  141  stdout was closed by its reader (EPIPE, e.g. | head): the batch ends quietly, kernels shut
       down, later lines not read

example:
  printf '%s\\n' \\
    '{"tool":"notebook","params":{"action":"run","notebook_path":"demo.ipynb"}}' \\
    '{"tool":"python","params":{"notebook_path":"demo.ipynb","cells":[{"code":"xs.shape"}]}}' \\
    | nbagent batch
`;

export const batchCommand: Command = {
  help: HELP,
  async run(args, settings) {
    let cwd: string;
    let session: string | undefined;
    try {
      const { values } = parseArgs({
        args,
        options: { cwd: { type: "string" }, session: { type: "string" } },
      });
      cwd = resolve(values.cwd ?? process.cwd());
      session = values.session === undefined ? undefined : sessionName(values.session);
    } catch (err) {
      process.stderr.write(
        `nbagent batch: ${(err as Error).message}\nusage: nbagent batch [--session NAME] [--gateway URL] [--cwd DIR] (--help for more)\n`,
      );
      return 2;
    }
    const toolbox = createToolbox({ cwd, settings, runtime: { sessionName: session } });
    const view = await serveViewSocket(toolbox, "batch", cwd);
    const names = toolbox.entries.map((e) => e.descriptor.name);
    const shape = `{"tool": one of ${names.map((n) => `"${n}"`).join(", ")}, "params": {…}}`;
    let worst = 0;
    let interrupted: number | undefined;
    let answered = 0;
    const answer = (text: string) => {
      if (stdoutClosed()) return;
      process.stdout.write(`${text}\n`);
      if (!stdoutClosed()) answered++;
    };
    try {
      await withInterruptSignal(async (signal) => {
        const lines = createInterface({ input: process.stdin, crlfDelay: Number.POSITIVE_INFINITY });
        // Stop reading at once on a signal, even while waiting for the next line.
        signal.addEventListener("abort", () => {
          interrupted = interruptExitCode(signal);
          lines.close();
        });
        let n = 0;
        try {
          for await (const line of lines) {
            n++;
            if (signal.aborted) break;
            // A write that hit EPIPE destroyed stdout: no one reads on, so no call starts.
            if (stdoutClosed()) {
              interrupted = OUTPUT_CLOSED_EXIT;
              break;
            }
            if (!line.trim()) continue;
            let call: { tool?: unknown; params?: unknown };
            try {
              call = JSON.parse(line);
            } catch (err) {
              answer(
                JSON.stringify({
                  error: `line ${n} is not JSON (${(err as Error).message}); each line is ${shape}`,
                  line: n,
                }),
              );
              worst = 2;
              continue;
            }
            const tool = typeof call?.tool === "string" ? toolbox.find(call.tool)?.tool : undefined;
            if (
              !tool ||
              typeof call.params !== "object" ||
              call.params === null ||
              Array.isArray(call.params)
            ) {
              const why =
                call === null || typeof call !== "object" || Array.isArray(call)
                  ? "is not a JSON object"
                  : typeof call.tool !== "string"
                    ? 'has no "tool"'
                    : !tool
                      ? `names an unknown tool "${call.tool}"`
                      : '"params" is not a JSON object';
              answer(JSON.stringify({ error: `line ${n} ${why}; each line is ${shape}`, line: n }));
              worst = 2;
              continue;
            }
            const result = await tool.execute(`batch-${process.pid}`, call.params, signal);
            answer(resultJson(result));
            if (result.isError) worst = Math.max(worst, 1);
            if (stdoutClosed()) break;
          }
        } finally {
          // Leaving the loop early does not close the interface: stdin would keep the process alive.
          lines.close();
        }
        // The input ended (or a signal came): the runs handed out whose result no line received are
        // not dropped: each is waited for (a signal interrupts it) and its result printed (docs/cli.md).
        for (const run of toolbox.runs.undelivered()) {
          if (stdoutClosed()) break;
          if (signal.aborted) toolbox.runs.interrupt(run, signal.reason);
          else if (run.status === "running")
            process.stderr.write(
              `nbagent batch: input ended; waiting for run ${run.id} (${run.what}) to end, then printing its result (SIGINT interrupts it)\n`,
            );
          const stop = () => toolbox.runs.interrupt(run, signal.reason);
          signal.addEventListener("abort", stop, { once: true });
          try {
            const result = await toolbox.runs.wait(run, Number.POSITIVE_INFINITY);
            if (!stdoutClosed()) process.stdout.write(`${resultJson(result)}\n`);
            if (result.isError) worst = Math.max(worst, 1);
          } finally {
            signal.removeEventListener("abort", stop);
          }
        }
      });
    } finally {
      await view?.close();
      await toolbox.dispose();
    }
    if (interrupted === undefined && stdoutClosed()) interrupted = OUTPUT_CLOSED_EXIT;
    // Closed output ends the batch quietly: the reader chose to stop.
    if (interrupted === OUTPUT_CLOSED_EXIT) return interrupted;
    if (interrupted !== undefined) {
      process.stderr.write(
        `nbagent batch: interrupted; ${pluralBare(answered, "line")} answered, the rest not read\n`,
      );
      return interrupted;
    }
    return worst;
  },
};

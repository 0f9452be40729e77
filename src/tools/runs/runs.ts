/**
 * The `runs` tool: follows a python call or notebook run that outlived its tool call (docs/runs.md).
 * wait (default): new output, or the call's own result once it is done; interrupt: stop it (the
 * kernel is interrupted and keeps its state, unless the cell ignores it and the kernel is
 * restarted), then its result.
 */
import type { Static } from "@sinclair/typebox";
import type { ToolDescriptor } from "../descriptor.js";
import { paramProblem } from "../param-problem.js";
import { cellRunRefs } from "../result-refs.js";
import { Type } from "../schema.js";
import { errorResult, type Tool } from "../types.js";
import type { RunRegistry } from "./registry.js";

export const runsSchema = Type.Object(
  {
    run_id: Type.String({ description: 'The run id a result gave (e.g. "r1")' }),
    action: Type.Optional(
      Type.Union([Type.Literal("wait"), Type.Literal("interrupt")], {
        description:
          "wait (default): new output so far, or the result once done; interrupt: stop the running cell and return the result (the kernel keeps its state, unless the cell ignores the interrupt: then it is restarted and the result says so)",
      }),
    ),
    wait: Type.Optional(
      Type.Number({
        exclusiveMinimum: 0,
        description: "Seconds to wait for the run to finish before returning what is new (default 50)",
      }),
    ),
  },
  { additionalProperties: false },
);

export type RunsParams = Static<typeof runsSchema>;

const DESCRIPTION = [
  "Follow a python call or notebook run that is still running after its tool call returned (its result gave a run id).",
  'wait (default): returns the new output so far, or the call\'s own result once it is done (waits up to 50 s; "wait": seconds).',
  "interrupt: stops the running cell and returns the result (the kernel keeps its state, unless the cell ignores the interrupt for 10 s: then the kernel is restarted and the result says its state is lost).",
  "Finished runs' results stay available for an hour.",
].join("\n");

/** How a bad runs call is told what it meant (param-problem.ts). */
const RUNS_WORDS = {
  tool: "runs",
  example: '{"run_id":"r1"}',
  nearKeys: { "": { id: "run_id", run: "run_id", runid: "run_id", timeout: "wait" } },
};

/** The runs tool's descriptor (tools/descriptor.ts). */
export const runsDescriptor: ToolDescriptor<RunsParams, unknown> = {
  name: "runs",
  label: "Runs",
  parameters: runsSchema,
  // wait only reads; interrupt stops a cell (the kernel keeps its state unless the cell ignores it)
  hints: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  describe: () => DESCRIPTION,
  refs: cellRunRefs,
  create: ({ runs }) => createRunsTool({ runs }),
};

export function createRunsTool(options: { runs: RunRegistry }): Tool<RunsParams, unknown> {
  const { runs } = options;
  return {
    name: runsDescriptor.name,
    label: runsDescriptor.label,
    description: DESCRIPTION,
    parameters: runsSchema,
    async execute(_id, params, signal, onUpdate) {
      const bad = paramProblem(runsSchema, params, RUNS_WORDS);
      if (bad) return errorResult(bad, {});
      const run = runs.get(params.run_id);
      if (!run && !runs.background) {
        return errorResult(
          `No run ${JSON.stringify(params.run_id)} here: this host has no background runs. Each call here (a one-shot nbagent call) is waited for to its end and gives its whole result, so no run goes on after it; run ids come from hosts that keep runs (nbagent batch, MCP, pi) and last as long as that host process.`,
          {},
        );
      }
      if (!run) {
        const going = runs.running().map((r) => `${r.id} (${r.what})`);
        return errorResult(
          `No run ${JSON.stringify(params.run_id)} here${going.length ? `; running: ${going.join(", ")}` : " (none is running)"}. Run ids last as long as this host process; a finished run's result is kept for an hour.`,
          {},
        );
      }
      if (params.action === "interrupt" && run.status === "running") {
        runs.interrupt(run);
        // An interrupt ends the run (the cell stops, or the kernel is restarted once the interrupt
        // grace passes), so the answer waits for that end, whatever the wait budget (docs/runs.md).
        return runs.wait(run, Number.POSITIVE_INFINITY, signal, onUpdate);
      }
      return runs.wait(run, params.wait ?? runs.waitSeconds, signal, onUpdate);
    },
  };
}

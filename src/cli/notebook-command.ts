/**
 * `nbagent notebook <action> <path> [options]`: the notebook tool for a person — its options are
 * the tool's parameters as flags, its answer the tool's result in the notebook view (a run's output
 * streams in as it comes). Exit codes: HELP below and docs/cli.md.
 */
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { createNotebookTool, notebookToolInfo } from "../tools/notebook/notebook.js";
import { sandboxRoots } from "../tools/sandbox-paths.js";
import type { Command } from "./command.js";
import { NO_BOUND_SECONDS, UsageError } from "./params.js";
import { runShownCall } from "./tool-view.js";
import { parsedOrUsage } from "./usage.js";

const ACTIONS = ["read", "edit", "replace", "insert", "delete", "move", "tags", "clear_outputs", "run"];
const TYPES = ["code", "markdown", "raw"];

const USAGE =
  "usage: nbagent notebook <action> <path> [--index N | --id ID] [--content TEXT | --content-file F] [--type code|markdown|raw] [options]";

const HELP = `nbagent notebook — read, edit and run a notebook's cells, as the notebook tool does for an agent

${USAGE}

<action> is read, edit, replace, insert, delete, move, tags, clear_outputs or run (clear-outputs works too). The
answer is the notebook tool's result, drawn as the notebook view on a terminal (the model's text
when piped); a run's output streams in as it comes, and Ctrl-C interrupts it (a second one exits).
Bad input changes nothing on disk and answers with an Error: line. Cells are numbered from 0.

options:
  --index N          the cell (0-based); insert: where the new cell goes
  --id ID            the cell by its id, instead of --index
  --content TEXT     edit/insert: the cell's new source
  --content-file F   edit/insert: the source from a file (- for stdin)
  --type T           code, markdown or raw (insert: default code; edit: change the cell's type)
  --old TEXT         replace: the exact text to find within the cell;  --new TEXT: what replaces it
  --tag T            edit/insert: set the cell's tags (repeat for more; --tag '' for none)
  --add T            tags: add a tag (repeatable);  --remove T: remove one (repeatable)
  --to N             move: the new index; run: the last cell of the range from --index
  --offset N         read: the first cell to list;  --limit N: how many
  --execute          edit/insert: run the cell after saving it
  --kernel NAME      insert that creates the notebook: the kernelspec it is for (e.g. ir)
  --all              run: every cell (also the default with no cell given); replace: every match
  --allow-errors     run: go on after a failing cell
  --timeout S        run/--execute: seconds for the whole call (default: no bound)
  --cwd DIR          relative paths resolve against DIR (default: here)
  --json             print the result as one object {"content":[…],"details":{…},"isError":bool}
  --expanded         show every cell and output whole instead of collapsed

exit: 0 done; 1 the tool answered with an error (Error: …; nothing was changed); 2 usage;
      130/143 interrupted (SIGINT/SIGTERM).

examples:
  nbagent notebook read analysis.ipynb
  nbagent notebook insert analysis.ipynb --index 0 --content 'import pandas as pd'
  nbagent notebook edit analysis.ipynb --index 3 --content-file cell.py --execute
  nbagent notebook replace analysis.ipynb --index 3 --old 'n = 10' --new 'n = 100'
  nbagent notebook tags analysis.ipynb --index 0 --add skip-execution
  nbagent notebook run analysis.ipynb --index 2 --to 5
`;

export const notebookCommand: Command = {
  help: HELP,
  async run(args, settings) {
    const parsed = parsedOrUsage("notebook", USAGE, parse, args);
    if (parsed === undefined) return 2;
    const show = { json: parsed.json, expanded: parsed.expanded };
    if (readsOnly(parsed.params)) {
      // A read touches only the file: the notebook tool alone answers it, without the toolbox's
      // runtime and kernel code, which it would load and never use (docs/cli.md).
      const roots = sandboxRoots(settings.sandbox !== undefined, parsed.cwd);
      const tool = createNotebookTool({ cwd: parsed.cwd, roots });
      return runShownCall(
        { descriptor: { ...notebookToolInfo, create: () => tool }, tool },
        parsed.params,
        show,
      );
    }
    const [{ createToolbox }, { notebookDescriptor }] = await Promise.all([
      import("../tools/index.js"),
      import("../tools/notebook/descriptor.js"),
    ]);
    const toolbox = createToolbox({ cwd: parsed.cwd, settings, background: false });
    try {
      return await runShownCall(toolbox.entry(notebookDescriptor), parsed.params, show);
    } finally {
      await toolbox.dispose();
    }
  },
};

/** A read with no parameter of a run: the same answer from the notebook tool without a runtime. */
function readsOnly(params: Record<string, unknown>): boolean {
  return params.action === "read" && !["execute", "timeout", "allow_errors"].some((k) => k in params);
}

function parse(args: string[]) {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      index: { type: "string" },
      id: { type: "string" },
      content: { type: "string" },
      "content-file": { type: "string" },
      type: { type: "string" },
      old: { type: "string" },
      new: { type: "string" },
      tag: { type: "string", multiple: true },
      add: { type: "string", multiple: true },
      remove: { type: "string", multiple: true },
      to: { type: "string" },
      offset: { type: "string" },
      limit: { type: "string" },
      execute: { type: "boolean" },
      kernel: { type: "string" },
      all: { type: "boolean" },
      "allow-errors": { type: "boolean" },
      timeout: { type: "string" },
      cwd: { type: "string" },
      json: { type: "boolean" },
      expanded: { type: "boolean" },
    },
  });
  const [given, path, ...extra] = positionals;
  if (!given) throw new UsageError(`missing <action>: one of ${ACTIONS.join(", ")}`);
  const action = given.replace(/-/g, "_");
  if (!ACTIONS.includes(action))
    throw new UsageError(`unknown action '${given}': one of ${ACTIONS.join(", ")}`);
  if (!path) throw new UsageError("missing <path> of the .ipynb file");
  if (extra.length) throw new UsageError(`unexpected arguments: ${extra.join(" ")}`);
  if (values.content !== undefined && values["content-file"] !== undefined)
    throw new UsageError("give the content once: --content TEXT or --content-file F");
  if (values.type !== undefined && !TYPES.includes(values.type))
    throw new UsageError(`--type must be code, markdown or raw, got ${values.type}`);
  const params: Record<string, unknown> = { action, notebook_path: path };
  const whole = (flag: string, v: string | undefined) => {
    if (v === undefined) return undefined;
    if (!/^\d+$/.test(v)) throw new UsageError(`${flag} must be a whole number, got ${v}`);
    return Number(v);
  };
  params.cell_index = whole("--index", values.index);
  params.cell_id = values.id;
  params.to_index = whole("--to", values.to);
  params.offset = whole("--offset", values.offset);
  params.limit = whole("--limit", values.limit);
  params.cell_type = values.type;
  params.old = values.old;
  params.new = values.new;
  // --tag '' alone sets no tags (an empty list); otherwise the tags given.
  if (values.tag) params.tags = values.tag.filter((t) => t !== "");
  params.add = values.add;
  params.remove = values.remove;
  const file = values["content-file"];
  if (file !== undefined) {
    try {
      params.content = readFileSync(file === "-" ? 0 : file, "utf8");
    } catch (err) {
      throw new UsageError(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? err}`);
    }
  } else params.content = values.content;
  if (values.execute) params.execute = true;
  params.kernel = values.kernel;
  if (values.all) params.all = true;
  if (values["allow-errors"]) params.allow_errors = true;
  const runs = action === "run" || values.execute === true;
  if (values.timeout !== undefined) {
    const t = Number(values.timeout);
    if (!(t > 0) || t >= NO_BOUND_SECONDS)
      throw new UsageError(`--timeout must be a positive number of seconds, got ${values.timeout}`);
    params.timeout = t;
  } else if (runs) params.timeout = NO_BOUND_SECONDS;
  for (const k of Object.keys(params)) if (params[k] === undefined) delete params[k];
  return {
    params,
    cwd: resolve(values.cwd ?? process.cwd()),
    json: values.json === true,
    expanded: values.expanded === true,
  };
}

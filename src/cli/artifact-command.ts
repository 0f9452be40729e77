/**
 * `nbagent artifact <id|artifact://id> [--offset LINE] [--column BYTE] [--limit LINES] [--json]`:
 * prints a full output kept as an artifact, whole or a page at a time. Paging rules: docs/artifacts.md.
 */
import { pipeline } from "node:stream/promises";
import { parseArgs } from "node:util";
import {
  ARTIFACT_PAGE_BYTES,
  ARTIFACT_PAGE_LINES,
  ArtifactReadError,
  ArtifactStore,
  parseArtifactId,
} from "../output/index.js";
import { inUnit, pluralBare } from "../sys/units.js";
import { refusedText } from "../tools/artifact/artifact.js";
import { saveFailure } from "../tools/output-text.js";
import { errorText } from "../tools/types.js";
import type { Command } from "./command.js";

const HELP = `nbagent artifact — print a full output kept as artifact://<id>, whole or a page at a time

usage: nbagent artifact <id|artifact://id> [--offset LINE] [--column BYTE] [--limit LINES] [--json]

Without --offset, --column, --limit or --json the whole artifact goes to stdout as it is. Otherwise
one page: from line --offset (1-based, default 1) at most --limit lines (default ${ARTIFACT_PAGE_LINES}) and ${inUnit(ARTIFACT_PAGE_BYTES, "KB")}.
A line longer than the page is cut inside; when more follows, the exact command for the next page
is printed on stderr ("Next: nbagent artifact …"), with --column (the 1-based byte in that line
where the next page starts). Paging that way returns every byte exactly once.

options:
  --offset LINE   first line, 1-based (past the last line: an error that says where the artifact
                  ends, and when it is known incomplete that the rest was not saved; exit 1)
  --column BYTE   1-based byte within the --offset line to start at (continues a cut line)
  --limit LINES   lines per page at most
  --json          the page as one JSON object (text, startLine, endLine, lines, next, …)
  --root DIR      the state directory (default NBAGENT_STATE_DIR or $TMPDIR/nbagent-<uid>)

exit: 0 printed; 1 not found or past the end; 2 usage.

example:
  nbagent artifact artifact://mb1x2k-0a1b2c3d4e --offset 201 --limit 100
`;

export const artifactCommand: Command = {
  help: HELP,
  async run(args, settings) {
    let values: { offset?: string; column?: string; limit?: string; json?: boolean; root?: string };
    let positionals: string[];
    try {
      ({ values, positionals } = parseArgs({
        args,
        allowPositionals: true,
        options: {
          offset: { type: "string" },
          column: { type: "string" },
          limit: { type: "string" },
          json: { type: "boolean" },
          root: { type: "string" },
        },
      }));
    } catch (err) {
      return usageError((err as Error).message);
    }
    const [ref, ...extra] = positionals;
    if (!ref) return usageError("missing <id>");
    if (extra.length) return usageError(`unexpected arguments: ${extra.join(" ")}`);
    const counts: Record<string, number | undefined> = {};
    for (const name of ["offset", "column", "limit"] as const) {
      const raw = values[name];
      if (raw === undefined) continue;
      if (!/^\d+$/.test(raw) || Number(raw) < 1) {
        return usageError(`--${name} must be a whole number >= 1, got ${raw}`);
      }
      counts[name] = Number(raw);
    }
    const store = new ArtifactStore({ root: values.root ?? settings.stateRoot });
    try {
      if (Object.values(counts).every((n) => n === undefined) && !values.json) {
        // Opened without following links and checked to be this user's file (docs/artifacts.md).
        const { path, handle } = await store.openFile(ref);
        try {
          await pipeline(handle.createReadStream({ start: 0, autoClose: false }), process.stdout, {
            end: false,
          });
        } finally {
          await handle.close();
        }
        const incomplete = store.incomplete(path);
        if (incomplete) {
          process.stderr.write(
            `(${ref} holds only the start of its output; the rest was not saved: ${saveFailure(incomplete.message, incomplete.reason)})\n`,
          );
        }
        return 0;
      }
      const page = await store.read(ref, counts);
      const { data, ...rest } = page;
      if (values.json) {
        process.stdout.write(`${JSON.stringify(rest)}\n`);
        return 0;
      }
      await writeOut(data);
      if (page.next) {
        const cut = page.partial.find((p) => p.line === page.next?.offset);
        if (cut) {
          const more = cut.lineBytes - cut.to;
          process.stderr.write(`(line ${cut.line} continues: ${more} more of its ${cut.lineBytes} bytes)\n`);
        }
        const next = [`--offset ${page.next.offset}`];
        if (page.next.column) next.push(`--column ${page.next.column}`);
        if (counts.limit !== undefined) next.push(`--limit ${counts.limit}`);
        if (values.root !== undefined) next.push(`--root ${shellQuote(values.root)}`);
        process.stderr.write(`Next: nbagent artifact ${page.id} ${next.join(" ")}\n`);
      } else if (page.incomplete) {
        process.stderr.write(
          `(end of ${ref} at ${page.sizeBytes} bytes; the rest of the output was not saved: ${saveFailure(page.incomplete.message, page.incomplete.reason)})\n`,
        );
      }
      return 0;
    } catch (err) {
      process.stderr.write(`${errorText(describeError(err, ref, store.root))}\n`);
      return 1;
    }
  },
};

function usageError(message: string): number {
  process.stderr.write(
    `nbagent artifact: ${message}\nusage: nbagent artifact <id|artifact://id> [--offset LINE] [--column BYTE] [--limit LINES] [--json] (--help for more)\n`,
  );
  return 2;
}

function describeError(err: unknown, ref: string, root: string): string {
  if (!(err instanceof ArtifactReadError)) return (err as Error).message;
  const f = err.facts;
  switch (err.code) {
    case "not_found":
      return `Artifact not found: ${ref}. Give the artifact://<id> from a tool result; artifacts live under ${root} (NBAGENT_STATE_DIR) and are removed after 7 days.`;
    case "past_end": {
      const ends = f.sizeBytes === undefined ? "" : `; it ends after ${f.sizeBytes} bytes`;
      const cut = f.incomplete
        ? `; the rest of the output was not saved (${saveFailure(f.incomplete.message, f.incomplete.reason)})`
        : "";
      return f.lines === 0
        ? `--offset ${f.offset} is past the end: ${ref} is empty${cut}.`
        : `--offset ${f.offset} is past the end: ${ref} has ${pluralBare(f.lines ?? 0, "line")}${ends}${cut}.`;
    }
    case "column_past_end":
      return `--column ${f.column} is past the end of line ${f.line}, which has ${pluralBare(f.lineBytes ?? 0, "byte")}.`;
    case "refused":
      return refusedText(parseArtifactId(ref) ?? ref, f);
    default:
      return err.message;
  }
}

function writeOut(data: Buffer): Promise<void> {
  return new Promise((resolve, reject) =>
    process.stdout.write(data, (err) => (err ? reject(err) : resolve())),
  );
}

function shellQuote(s: string): string {
  return /^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replaceAll("'", "'\\''")}'`;
}

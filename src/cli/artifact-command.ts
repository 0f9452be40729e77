/** `nbagent artifact <id|artifact://id> [--offset LINE] [--limit LINES]`: prints a spilled full output. */
import { createReadStream } from "node:fs";
import { pipeline } from "node:stream/promises";
import { parseArgs } from "node:util";
import { ArtifactStore } from "../output/index.js";
import type { Command } from "./commands.js";

export const artifactCommand: Command = {
  summary: "print a full output kept as artifact://<id> (--offset LINE, --limit LINES, --json)",
  async run(args) {
    let values: { offset?: string; limit?: string; json?: boolean; root?: string };
    let positionals: string[];
    try {
      ({ values, positionals } = parseArgs({
        args,
        allowPositionals: true,
        options: {
          offset: { type: "string" },
          limit: { type: "string" },
          json: { type: "boolean" },
          root: { type: "string" },
        },
      }));
    } catch (err) {
      process.stderr.write(`nbagent artifact: ${(err as Error).message}\n`);
      return 2;
    }
    const [ref, ...extra] = positionals;
    const offset = values.offset === undefined ? undefined : Number(values.offset);
    const limit = values.limit === undefined ? undefined : Number(values.limit);
    if (!ref || extra.length || !validCount(offset) || !validCount(limit)) {
      process.stderr.write(
        "usage: nbagent artifact <id|artifact://id> [--offset LINE>=1] [--limit LINES>=1] [--json]\n",
      );
      return 2;
    }
    const store = new ArtifactStore({ root: values.root });
    try {
      if (offset === undefined && limit === undefined && !values.json) {
        const path = store.resolve(ref);
        if (!path) throw new Error(`Artifact not found: ${ref}. Use the artifact://<id> from a tool result.`);
        await pipeline(createReadStream(path), process.stdout, { end: false });
        return 0;
      }
      const slice = await store.read(ref, { offset, limit });
      if (values.json) process.stdout.write(`${JSON.stringify(slice)}\n`);
      else {
        process.stdout.write(slice.text);
        if (slice.hasMore) {
          process.stderr.write(
            `[more: continue with --offset ${slice.lineCut ? slice.endLine : slice.endLine + 1}]\n`,
          );
        }
      }
      return 0;
    } catch (err) {
      process.stderr.write(`Error: ${(err as Error).message}\n`);
      return 1;
    }
  },
};

function validCount(n: number | undefined): boolean {
  return n === undefined || (Number.isInteger(n) && n >= 1);
}

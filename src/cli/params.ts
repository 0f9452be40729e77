/** Reads a tool's parameters from the command line: JSON text, `@file`, or `-` for stdin. */
import { readFileSync } from "node:fs";

export class UsageError extends Error {}

export function readParams(
  arg: string | undefined,
  stdin: () => string = () => readFileSync(0, "utf8"),
): unknown {
  if (arg === undefined) throw new UsageError("missing <params>: give JSON text, @file, or - for stdin");
  let text: string;
  if (arg === "-") text = stdin();
  else if (arg.startsWith("@")) {
    try {
      text = readFileSync(arg.slice(1), "utf8");
    } catch (err) {
      throw new UsageError(`cannot read params file ${arg.slice(1)}: ${(err as Error).message}`);
    }
  } else text = arg;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new UsageError(`params are not valid JSON: ${(err as Error).message}`);
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new UsageError("params must be a JSON object");
  }
  return value;
}

/**
 * A `--session NAME` value: a name a person can type again (letters, digits, `.`, `_`, `-`; up to
 * 64), or a UsageError.
 */
export function sessionName(name: string): string {
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/.test(name)) {
    throw new UsageError(
      `--session must be a name of letters, digits, '.', '_' or '-' (up to 64, starting with a letter or digit), got ${JSON.stringify(name)}`,
    );
  }
  return name;
}

/**
 * A bound no person waits for: a call is waited for to its end (no run id) and, without --timeout,
 * runs until it ends or Ctrl-C. Below 2^31 ms, the longest timer Node keeps.
 */
export const NO_BOUND_SECONDS = 2_000_000;

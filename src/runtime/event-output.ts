/**
 * A running cell's rich outputs as the event stream carries them (docs/view.md, "Events"): whole
 * nbformat outputs (display_data / execute_result with data and metadata, errors with their
 * traceback), bounded — a MIME value that would take the output past MAX_EVENT_MIME_BYTES is left
 * out and named, and the output keeps its text/plain form with a note that the file has the rest.
 * The view's notebook feed bounds the outputs it reads from files the same way, so a live output
 * and the same output read back from the saved file are equal.
 */

import type { DisplayOutput, JupyterMessage } from "../kernel/types.js";
import { mibOrKib } from "../sys/units.js";
import { type CellOutput, type DisplayNbOutput, mimeValueSize, type OmittedMime } from "./events.js";

/** Most bytes (UTF-16 units, a close stand-in) of MIME values one output carries in an event. */
export const MAX_EVENT_MIME_BYTES = 2 * 2 ** 20;

/** "image/png (3.1 MiB)". */
function sizeText(o: OmittedMime): string {
  return `${o.mime} (${mibOrKib(o.bytes)})`;
}

/**
 * A MIME bundle within the bound: whole when its values fit, else only its text/plain (cut to the
 * bound) followed by a line that names what was left out — the page shows that instead of a half.
 */
export function boundBundle(
  data: Record<string, unknown>,
  cap = MAX_EVENT_MIME_BYTES,
): { data: Record<string, unknown>; omitted?: OmittedMime[] } {
  let total = 0;
  const sizes: [string, number][] = [];
  for (const [mime, value] of Object.entries(data)) {
    const bytes = mimeValueSize(value);
    sizes.push([mime, bytes]);
    total += bytes;
  }
  if (total <= cap) return { data };
  const omitted = sizes.filter(([mime]) => mime !== "text/plain").map(([mime, bytes]) => ({ mime, bytes }));
  const plain = data["text/plain"];
  let text = Array.isArray(plain) ? plain.join("") : typeof plain === "string" ? plain : "";
  if (text.length > cap) {
    omitted.push({ mime: "text/plain", bytes: text.length });
    text = `${text.slice(0, cap)}…`;
  }
  const note = `[left out of the view: ${omitted.map(sizeText).join(", ")}; the notebook file or the call's result has it]`;
  return { data: { "text/plain": text ? `${text}\n${note}` : note }, omitted };
}

/** A display (display_data, execute_result, update_display_data) as a bounded event output. */
export function displayEventOutput(d: DisplayOutput): CellOutput {
  const { data, omitted } = boundBundle(d.data);
  const metadata = d.metadata ?? {};
  const output: DisplayNbOutput =
    d.source === "execute_result"
      ? { output_type: "execute_result", data, metadata, execution_count: d.executionCount ?? null }
      : { output_type: "display_data", data, metadata };
  return {
    kind: "display",
    mimeTypes: Object.keys(d.data),
    text: d.text.slice(0, MAX_EVENT_TEXT),
    output,
    ...(d.displayId !== undefined ? { displayId: d.displayId } : {}),
    ...(d.source === "update_display_data" ? { update: true } : {}),
    ...(omitted ? { omitted } : {}),
  };
}

/** A display's text form as an event carries it (the whole output is in `output`). */
const MAX_EVENT_TEXT = 20_000;

/** The outputs an IOPub message makes that the chunk and display hooks do not: errors, clear_output. */
export function iopubEventOutput(msg: JupyterMessage): CellOutput | undefined {
  const c = msg.content as Record<string, unknown>;
  if (msg.header.msg_type === "clear_output") return { kind: "clear", wait: c.wait === true };
  if (msg.header.msg_type !== "error") return undefined;
  const ename = String(c.ename ?? "");
  const evalue = String(c.evalue ?? "");
  const traceback = Array.isArray(c.traceback) ? c.traceback.map(String) : [];
  // The same text the call's chunk of the error is (kernel/execution.ts).
  const text = traceback.length ? traceback.join("\n") : `${ename}: ${evalue}`;
  return { kind: "error", text: `${text}\n`, ename, evalue, traceback };
}

/**
 * The first thing wrong with a tool call's parameters, in words a model can act on: the field at
 * fault (`cells[0].code`), what it must be and what was given, and for a name that is not a
 * parameter, the one it most likely meant (notebook/near-miss.ts `nearest`). The notebook tool has
 * its own richer check (notebook/params.ts); the python, runs and kernels tools use this one.
 */
import type { TSchema } from "@sinclair/typebox";
import type { ValueError } from "@sinclair/typebox/errors";
import { nearest } from "./notebook/near-miss.js";
import { schemaErrors } from "./schema.js";

export interface ParamWords {
  /** The tool's name, for "The runs tool takes: …". */
  tool: string;
  /** A minimal valid call, shown when the parameters as a whole are wrong (`{"run_id":"r1"}`). */
  example: string;
  /** Names models send for a parameter under another name, per object path ("" the top level). */
  nearKeys?: Record<string, Record<string, string>>;
}

/** A value as the message shows it (long values cut). */
function shown(value: unknown): string {
  if (typeof value === "number" && !Number.isFinite(value)) return String(value);
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

/** "/cells/0/code" → "cells[0].code". */
function fieldName(path: string): string {
  return path
    .split("/")
    .slice(1)
    .map((p, i) => (/^\d+$/.test(p) ? `[${p}]` : i === 0 ? p : `.${p}`))
    .join("");
}

/** What a value of `schema` must be: "a number greater than 0", "one of "wait", "interrupt"". */
function mustBe(schema: TSchema): string {
  const s = schema as Record<string, unknown>;
  const choices = (s.anyOf as TSchema[] | undefined)?.map((c) => (c as { const?: unknown }).const);
  if (choices?.length && choices.every((c) => c !== undefined)) {
    return `one of ${choices.map((c) => JSON.stringify(c)).join(", ")}`;
  }
  const bounds = [
    ...(s.exclusiveMinimum !== undefined ? [`greater than ${s.exclusiveMinimum}`] : []),
    ...(s.minimum !== undefined ? [`of at least ${s.minimum}`] : []),
    ...(s.maximum !== undefined ? [`of at most ${s.maximum}`] : []),
  ].join(" and ");
  switch (s.type) {
    case "number":
      return `a number${bounds ? ` ${bounds}` : ""}`;
    case "integer":
      return `an integer${bounds ? ` ${bounds}` : ""}`;
    case "string":
      return (s.minLength as number) > 0 ? "a non-empty string" : "a string";
    case "boolean":
      return "true or false";
    case "array":
      return (s.minItems as number) > 0 ? "a non-empty array" : "an array";
    case "object":
      return "an object";
    default:
      return "something else";
  }
}

/** The keys an object schema takes. */
function keysOf(schema: TSchema): string[] {
  return Object.keys((schema as { properties?: object }).properties ?? {});
}

/** The object schema at `path` (`/cells/0`) within `root`. */
function schemaAt(root: TSchema, path: string): TSchema | undefined {
  let s: TSchema | undefined = root;
  for (const part of path.split("/").slice(1)) {
    if (!s) return undefined;
    const r = s as { properties?: Record<string, TSchema>; items?: TSchema; anyOf?: TSchema[] };
    s = /^\d+$/.test(part) && r.items ? r.items : r.properties?.[part];
  }
  return s;
}

/**
 * The first problem of `params` against `schema` (undefined when they fit): unknown names first (with
 * the name meant), then a missing required one, then a wrong value — each naming its field.
 */
export function paramProblem(schema: TSchema, params: unknown, words: ParamWords): string | undefined {
  if (params === null || typeof params !== "object" || Array.isArray(params)) {
    return `the ${words.tool} tool takes an object of parameters, got ${shown(params)}. Pass ${words.example}.`;
  }
  const errors = schemaErrors(schema, params);
  if (errors.length === 0) return undefined;
  // Unknown names, at the first object that has any: every one named, with the name meant.
  const unknown = errors.filter((e) => e.message === "Unexpected property");
  if (unknown.length > 0) {
    const at = unknown[0].path.slice(0, unknown[0].path.lastIndexOf("/"));
    const here = unknown.filter((e) => e.path.slice(0, e.path.lastIndexOf("/")) === at);
    const names = keysOf(schemaAt(schema, at) ?? schema);
    const aliases = words.nearKeys?.[at.replace(/\/\d+/g, "/*")] ?? {};
    const named = here.map((e) => {
      const key = e.path.slice(at.length + 1);
      const near = nearest(key, names, aliases);
      return near ? `${JSON.stringify(key)} (did you mean ${near}?)` : JSON.stringify(key);
    });
    const where = at ? ` in ${fieldName(at)}` : "";
    const takes = at ? `${fieldName(at)} takes` : `The ${words.tool} tool takes`;
    return `Unknown parameter${here.length === 1 ? "" : "s"} ${named.join(", ")}${where}. ${takes}: ${names.join(", ")}.${at ? "" : ` Pass ${words.example}.`}`;
  }
  const missing = errors.find((e) => e.message === "Expected required property");
  if (missing) {
    const field = fieldName(missing.path);
    return `${field} is required.${missing.path.lastIndexOf("/") === 0 ? ` Pass ${words.example}.` : ""}`;
  }
  return valueProblem(errors[0]);
}

/** "timeout must be a number greater than 0, got "30"". */
function valueProblem(e: ValueError): string {
  const field = fieldName(e.path) || "the parameters";
  const s = e.schema as Record<string, unknown>;
  const choices = (s.anyOf as TSchema[] | undefined)?.map((c) => (c as { const?: unknown }).const);
  const near =
    typeof e.value === "string" && choices?.every((c) => typeof c === "string")
      ? nearest(e.value, choices as string[], {})
      : undefined;
  return `${field} must be ${mustBe(e.schema)}; got ${shown(e.value)}${near ? ` (did you mean ${JSON.stringify(near)}?)` : ""}.`;
}

/**
 * The tools' parameter schemas are TypeBox schemas: JSON Schema that TypeScript also reads as types.
 * This file hands them only the builders they use and the check they share, imported by name, so
 * the bundle keeps only those: TypeBox's own `Type` and `Value` namespaces hold every builder and
 * every value function (~230 KB bundled), which every command, down to a small `notebook read`,
 * would otherwise load and compile (the README's benchmark rows for the CLI's start).
 */
import {
  Array as ArrayOf,
  Boolean as BooleanType,
  Integer,
  Literal,
  Number as NumberType,
  Object as ObjectType,
  Optional,
  String as StringType,
  type TSchema,
  Tuple,
  Union,
} from "@sinclair/typebox";
import { Errors, type ValueError } from "@sinclair/typebox/errors";
import { Check } from "@sinclair/typebox/value";

/** The builders the tools' schemas use, under TypeBox's names (`Type.Object`, `Type.Optional`, …). */
export const Type = {
  Array: ArrayOf,
  Boolean: BooleanType,
  Integer,
  Literal,
  Number: NumberType,
  Object: ObjectType,
  Optional,
  String: StringType,
  Tuple,
  Union,
};

/** Where `value` breaks `schema`, in schema order; empty when it fits. */
export function schemaErrors(schema: TSchema, value: unknown): ValueError[] {
  return Check(schema, value) ? [] : [...Errors(schema, value)];
}

/** The first place params break `schema`, as "invalid parameter /path: message"; undefined when they fit. */
export function schemaProblem(schema: TSchema, params: unknown): string | undefined {
  if (Check(schema, params)) return undefined;
  const first = Errors(schema, params).First();
  return first ? `invalid parameter ${first.path || "(root)"}: ${errorMessage(first)}` : "invalid parameters";
}

/**
 * TypeBox's message for an error, except for a choice among literals, where its "Expected union
 * value" names neither the choices nor what was given: that says both ("one of "list", "interrupt";
 * got "zap"").
 */
export function errorMessage(e: ValueError): string {
  const choices = (e.schema.anyOf as TSchema[] | undefined)?.map((s) => s.const);
  if (!choices?.length || choices.some((c) => c === undefined)) return e.message;
  return `expected one of ${choices.map((c) => JSON.stringify(c)).join(", ")}; got ${JSON.stringify(e.value) ?? String(e.value)}`;
}

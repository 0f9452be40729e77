/**
 * The tools' parameter checks (tools/schema.ts): the first problem in words the model can act on.
 * A choice among literals names the choices and what was given, where TypeBox says only
 * "Expected union value".
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { schemaErrors, schemaProblem, Type } from "../../src/tools/schema.js";

const schema = Type.Object(
  {
    action: Type.Optional(Type.Union([Type.Literal("list"), Type.Literal("restart")])),
    target: Type.Optional(Type.Union([Type.String(), Type.Integer()])),
    limit: Type.Optional(Type.Integer({ minimum: 1 })),
  },
  { additionalProperties: false },
);

test("params that fit have no problem", () => {
  assert.equal(schemaProblem(schema, { action: "list", target: 3, limit: 2 }), undefined);
  assert.deepEqual(schemaErrors(schema, {}), []);
});

test("a choice among literals names the choices and the value given", () => {
  assert.equal(
    schemaProblem(schema, { action: "zap" }),
    'invalid parameter /action: expected one of "list", "restart"; got "zap"',
  );
  assert.equal(
    schemaProblem(schema, { action: 7 }),
    'invalid parameter /action: expected one of "list", "restart"; got 7',
  );
});

test("other problems keep TypeBox's words, with the path", () => {
  assert.equal(
    schemaProblem(schema, { limit: 0 }),
    "invalid parameter /limit: Expected integer to be greater or equal to 1",
  );
  // A union that is not all literals is not a list of choices.
  assert.equal(schemaProblem(schema, { target: true }), "invalid parameter /target: Expected union value");
  assert.match(schemaProblem(schema, { extra: 1 }) ?? "", /^invalid parameter \/extra: /);
  assert.equal(schemaProblem(schema, "x"), "invalid parameter (root): Expected object");
});

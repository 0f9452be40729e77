/**
 * src/sys/crypto.ts: random bytes from /dev/urandom before node:crypto is loaded, each handed out
 * once, of every length asked for; hashes through node:crypto.
 */
import assert from "node:assert/strict";
import { createHash as nodeHash } from "node:crypto";
import { test } from "node:test";
import { createHash, randomBytes, randomUUID } from "../../src/sys/crypto.js";

test("randomBytes gives the length asked, never the same bytes twice, past the pool too", () => {
  const seen = new Set<string>();
  // 2,000 draws of 6 bytes: ~47 refills of the 256-byte pool, then node:crypto for a long one.
  for (let i = 0; i < 2000; i++) {
    const b = randomBytes(6);
    assert.equal(b.length, 6);
    seen.add(b.toString("hex"));
  }
  assert.equal(seen.size, 2000, "no draw repeated");
  assert.equal(randomBytes(1000).length, 1000);
  assert.equal(randomBytes(0).length, 0);
  // Not all zero (the pool is wiped behind what it hands out, never before).
  assert.ok(randomBytes(32).some((x) => x !== 0));
});

test("createHash and randomUUID are node:crypto's", () => {
  assert.equal(createHash("sha256").update("x").digest("hex"), nodeHash("sha256").update("x").digest("hex"));
  assert.match(randomUUID(), /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
});

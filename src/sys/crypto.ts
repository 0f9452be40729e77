/**
 * node:crypto, loaded when first used. Requiring it loads ~40 of node's own modules (ciphers, keys,
 * streams), ~5 ms of CPU: a short command that needs no hash (a notebook read or edit) does not pay
 * for it, though the modules it runs import this (docs/architecture.md, "How the built command
 * starts"). Random bytes come from the kernel's /dev/urandom (the same source node:crypto draws on)
 * until node:crypto is loaded for something else: three system calls for a pool of 256 bytes.
 * Modules that only ever run where crypto is needed anyway (the kernel's wire, the gateway) import
 * node:crypto directly.
 */
import { closeSync, openSync, readSync } from "node:fs";
import { createRequire } from "node:module";

type Crypto = typeof import("node:crypto");

let loaded: Crypto | undefined;

function crypto(): Crypto {
  loaded ??= createRequire(import.meta.url)("node:crypto") as Crypto;
  return loaded;
}

/** Unused bytes read from /dev/urandom (none once node:crypto is loaded). */
let pool = Buffer.alloc(0);

/** `n` random bytes, as node:crypto's randomBytes gives them. */
export function randomBytes(n: number): Buffer {
  if (loaded || n > 256) return crypto().randomBytes(n);
  if (pool.length < n) {
    try {
      const fd = openSync("/dev/urandom", "r");
      try {
        const fresh = Buffer.alloc(256);
        if (readSync(fd, fresh, 0, 256, null) !== 256) throw new Error("short read");
        pool = fresh;
      } finally {
        closeSync(fd);
      }
    } catch {
      return crypto().randomBytes(n);
    }
  }
  const out = Buffer.from(pool.subarray(0, n));
  // Each byte is handed out once: what was given is wiped from the pool.
  pool.fill(0, 0, n);
  pool = pool.subarray(n);
  return out;
}

/** A hash object of `algorithm` (node:crypto's createHash). */
export function createHash(algorithm: string): import("node:crypto").Hash {
  return crypto().createHash(algorithm);
}

/** A random RFC 4122 version 4 UUID (node:crypto's randomUUID). */
export function randomUUID(): string {
  return crypto().randomUUID();
}

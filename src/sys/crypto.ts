/**
 * node:crypto, loaded when first used. Requiring it loads ~40 of node's own modules (ciphers, keys,
 * streams), ~5 ms of CPU: a short command that needs no random name or hash (a notebook read) does
 * not pay for it, though the modules it runs import this (docs/architecture.md, "How the built
 * command starts"). Modules that only ever run where crypto is needed anyway (the kernel's wire,
 * the gateway) import node:crypto directly.
 */
import { createRequire } from "node:module";

type Crypto = typeof import("node:crypto");

let loaded: Crypto | undefined;

function crypto(): Crypto {
  loaded ??= createRequire(import.meta.url)("node:crypto") as Crypto;
  return loaded;
}

/** `n` random bytes (node:crypto's randomBytes). */
export function randomBytes(n: number): Buffer {
  return crypto().randomBytes(n);
}

/** A hash object of `algorithm` (node:crypto's createHash). */
export function createHash(algorithm: string): import("node:crypto").Hash {
  return crypto().createHash(algorithm);
}

/** A random RFC 4122 version 4 UUID (node:crypto's randomUUID). */
export function randomUUID(): string {
  return crypto().randomUUID();
}

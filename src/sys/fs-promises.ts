/**
 * node:fs/promises, loaded on first use: importing it loads nine of node's modules (its FileHandle,
 * readline, directory and watch code), ~1.5 ms of a short command that calls none of them (a
 * notebook read: docs/architecture.md, "How the built command starts"). Each function here calls
 * node's own through `fs.promises`, node:fs's lazy getter, when it is first called. (Run from source,
 * node's ES module facade of node:fs reads the getter at import: lazy only in the built CLI.)
 */
import * as fs from "node:fs";

export type { FileHandle } from "node:fs/promises";

type Promises = typeof import("node:fs/promises");

/** The function `name` of node:fs/promises, looked up when called (types and overloads kept). */
function late<K extends keyof Promises>(name: K): Promises[K] {
  return ((...args: unknown[]) =>
    (fs.promises[name] as (...a: unknown[]) => unknown)(...args)) as Promises[K];
}

export const chmod = late("chmod");
export const copyFile = late("copyFile");
export const link = late("link");
export const lstat = late("lstat");
export const mkdir = late("mkdir");
export const open = late("open");
export const readdir = late("readdir");
export const readFile = late("readFile");
export const readlink = late("readlink");
export const rename = late("rename");
export const rm = late("rm");
export const stat = late("stat");
export const symlink = late("symlink");
export const unlink = late("unlink");
export const writeFile = late("writeFile");

/**
 * Removes what interrupted saves of a notebook left beside it: temp copies (`.<name>.nbagent-<pid>-
 * <hex>.tmp`) whose writer process is gone, and the lock's takeover debris (see src/sys/lock-file.ts). Runs
 * before a save, at most once a minute per notebook in a process. Rules: docs/notebook-tool.md
 * ("Files").
 */
import { readdirSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { unlink } from "../sys/fs-promises.js";
import { inspectLockFile, ownerGone } from "../sys/lock-file.js";
import { processAlive } from "../sys/proc.js";
import { lockPathFor } from "./lock.js";

const EVERY_MS = 60_000;
const lastSweep = new Map<string, number>();

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/**
 * The names removed (empty when there was nothing to remove or it ran moments ago). `key` names the
 * notebook for "moments ago" when `target` is a pinned name (/proc/self/fd/N/…, confined-path.ts).
 */
export async function sweepLeftovers(target: string, force = false, key = target): Promise<string[]> {
  const now = Date.now();
  if (!force && now - (lastSweep.get(key) ?? 0) < EVERY_MS) return [];
  lastSweep.set(key, now);
  if (lastSweep.size > 1000) lastSweep.clear();
  const dir = dirname(target);
  const name = basename(target);
  let entries: string[];
  try {
    // Synchronous (a notebook's folder lists in microseconds; see regular-file.ts).
    entries = readdirSync(dir);
  } catch {
    return [];
  }
  const temp = new RegExp(`^\\.${escapeRegExp(name)}\\.nbagent-(\\d+)-[0-9a-f]+\\.tmp$`);
  const lockName = basename(lockPathFor(target));
  const removed: string[] = [];
  const remove = async (entry: string) => {
    try {
      await unlink(join(dir, entry));
      removed.push(entry);
    } catch {
      /* gone already, or not ours to remove */
    }
  };
  // Read after the listing: a breaker listed was made for a lock that was at the path before now,
  // and a lock id once replaced never comes back.
  let current: string | undefined;
  try {
    current = (await inspectLockFile(join(dir, lockName)))?.id;
  } catch {
    return removed;
  }
  for (const entry of entries) {
    const m = temp.exec(entry);
    if (m) {
      if (!processAlive(Number(m[1]))) await remove(entry);
      continue;
    }
    if (!entry.startsWith(`${lockName}.`)) continue;
    const rest = entry.slice(lockName.length + 1);
    if (rest.startsWith("break-")) {
      const staleId = rest.slice("break-".length).split("-")[0];
      if (staleId !== current) await remove(entry);
    } else if (rest.startsWith("new-")) {
      const seen = await inspectLockFile(join(dir, entry)).catch(() => undefined);
      if (seen?.owner && ownerGone(seen.owner)) await remove(entry);
    }
  }
  return removed;
}

/**
 * Named sessions on a gateway (docs/backends.md "Named sessions"): a python session whose name the
 * caller chose keeps its kernel on the gateway after this process ends, and a later process joins it
 * again by name. Names map to gateway kernel ids in a registry file in the per-user state dir,
 *
 *   <state>/named-sessions/<hash of the gateway>.json   { sessions: name → {kernelId, createdAt,
 *                                                        lastUsedAt, cwd}, retired: name → {why, at, …} }
 *
 * written atomically (temp file + rename) under a lock file, so concurrent processes lose no entry.
 * Idle rule: a named kernel unused for longer than the idle timeout (by the registry's lastUsedAt)
 * that the gateway reports idle with no connection is shut down by whichever process sweeps first;
 * one the gateway no longer has is recorded as gone. Either way the name keeps a retired record,
 * and the next call on it starts a fresh kernel whose lease carries that record.
 */

import { mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { type Kernel, type KernelBackend, type KernelStartOptions, speaksPython } from "../kernel/types.js";
import { writeFileAtomic } from "../sys/atomic-write.js";
import { createHash } from "../sys/crypto.js";
import { readFile } from "../sys/fs-promises.js";
import { acquireLockFile } from "../sys/lock-file.js";
import { namedKey, type RetiredSession, type StartedKernel } from "./session.js";

/** A kernel as the gateway lists it (GET /api/kernels). */
export interface GatewayKernelState {
  id: string;
  name: string;
  lastActivity: Date | undefined;
  executionState: string;
  connections: number;
}

/** What named sessions need from a gateway backend. */
export interface NamedSessionGateway {
  startKernel(options: KernelStartOptions): Promise<Kernel>;
  attachKernel(
    kernelId: string,
    options?: { signal?: AbortSignal; startTimeoutMs?: number },
  ): Promise<Kernel>;
  getKernel(kernelId: string): Promise<GatewayKernelState | undefined>;
  listKernels(): Promise<GatewayKernelState[]>;
  deleteKernel(kernelId: string): Promise<void>;
}

/**
 * A backend whose facts say it keeps named sessions, as the server they are kept on. Declaring the
 * fact without these methods is a programming error, thrown here.
 */
export function namedSessionGateway(backend: KernelBackend): NamedSessionGateway {
  const b = backend as Partial<NamedSessionGateway>;
  if (!b.attachKernel || !b.getKernel || !b.listKernels || !b.deleteKernel)
    throw new Error(
      `the ${backend.name} backend says it keeps named sessions but cannot list, join or end kernels`,
    );
  return backend as KernelBackend & NamedSessionGateway;
}

/** One registry entry (times in ms since the epoch in memory, ISO strings in the file). */
export interface NamedSessionRecord {
  kernelId: string;
  createdAt: number;
  lastUsedAt: number;
  cwd: string;
}

/** A named session for `nbagent sessions`. */
export interface NamedSessionInfo {
  name: string;
  kernelId: string;
  cwd: string;
  createdAt: number;
  /** Since the last call on it ended (any process). */
  idleMs: number;
  /** The gateway's execution_state ("idle", "busy", …), or "gone" when it no longer has the kernel. */
  state: string;
  /** Processes connected to it now. */
  connections?: number;
  /** The kernel process's resident memory (asked of the kernel while idle; absent when busy or not known). */
  memoryBytes?: number;
}

interface RegistryFile {
  version: 1;
  gateway: string;
  sessions: Record<string, { kernelId: string; createdAt: string; lastUsedAt: string; cwd: string }>;
  retired: Record<
    string,
    { kernelId: string; why: RetiredSession["why"]; at: string; lastUsed: string; idleTimeoutMs?: number }
  >;
}

interface Registry {
  sessions: Map<string, NamedSessionRecord>;
  retired: Map<string, RetiredSession & { kernelId: string }>;
}

/** Retired records kept per registry (the newest). */
const MAX_RETIRED = 256;
/**
 * Waiting longer than this for the registry lock fails the update. A lock is taken over only when
 * its holder is gone (src/sys/lock-file.ts); a live holder reads and rewrites one small file.
 */
const LOCK_TIMEOUT_MS = 30_000;
/** The memory probe: bounded short attach + one silent execute. */
const PROBE_TIMEOUT_MS = 3_000;

/** A kernel id the gateway does not know (B's KernelGoneError, by shape so any backend fits). */
export function isKernelGone(err: unknown): boolean {
  const e = err as { name?: string } | undefined;
  return e?.name === "KernelGoneError";
}

/** The registry file for a gateway identity (a URL, or `shared:<interpreter>` for the shared one). */
export function registryPath(stateRoot: string, gatewayIdentity: string): string {
  const hash = createHash("sha256").update(gatewayIdentity).digest("hex").slice(0, 16);
  return join(stateRoot, "named-sessions", `${hash}.json`);
}

export interface NamedSessionsOptions {
  /** Registry file (registryPath). */
  file: string;
  /** What the registry is for (written into the file, for people reading it). */
  gatewayIdentity: string;
  /** The gateway backend (resolved on first use). */
  gateway: () => Promise<NamedSessionGateway>;
  /** Unused this long (registry lastUsedAt) and idle on the gateway → shut down (default 5 min). */
  idleTimeoutMs?: number;
  /** How long an update waits for another process holding the registry lock (default 30 s). */
  lockTimeoutMs?: number;
  now?: () => number;
}

export class NamedSessions {
  readonly file: string;
  readonly idleTimeoutMs: number;
  private readonly now: () => number;

  constructor(private readonly options: NamedSessionsOptions) {
    this.file = options.file;
    this.idleTimeoutMs = options.idleTimeoutMs ?? 5 * 60_000;
    this.now = options.now ?? Date.now;
  }

  /**
   * The kernel for `name`: the running one recorded for it (re-attached, state kept), else a new one
   * (recorded; the lease says what became of the old one, when there was one).
   */
  async open(
    name: string,
    cwd: string,
    startOptions: KernelStartOptions,
    attachOptions: { signal?: AbortSignal; startTimeoutMs?: number } = {},
  ): Promise<StartedKernel> {
    const gw = await this.options.gateway();
    await this.sweep().catch(() => []); // cleanup is best effort; the open below decides
    const record = (await this.read()).sessions.get(name);
    if (record) {
      try {
        const kernel = await gw.attachKernel(record.kernelId, attachOptions);
        await this.touch(name, record.kernelId);
        return { kernel, named: { name, kernelId: record.kernelId, reattached: true } };
      } catch (err) {
        if (!isKernelGone(err)) throw err;
        await this.retireIf(name, record.kernelId, "gone", this.now());
      }
    }
    const kernel = await gw.startKernel(startOptions);
    const kernelId = kernel.kernelId;
    if (!kernelId) {
      await kernel.shutdown().catch(() => {});
      throw new Error("the gateway gave the new kernel no id; a named session cannot be kept");
    }
    let gone: RetiredSession | undefined;
    let other: NamedSessionRecord | undefined;
    await this.update((reg) => {
      other = reg.sessions.get(name);
      if (other && other.kernelId !== record?.kernelId) return; // another process was quicker
      const r = reg.retired.get(name);
      if (r) {
        const { kernelId: _, ...retired } = r;
        gone = retired;
      }
      reg.retired.delete(name);
      const now = this.now();
      reg.sessions.set(name, { kernelId, createdAt: now, lastUsedAt: now, cwd });
      other = undefined;
    });
    if (other) {
      // Two processes started the name at once: keep the recorded kernel, drop ours.
      await kernel.shutdown().catch(() => {});
      const joined = await gw.attachKernel(other.kernelId, attachOptions);
      return { kernel: joined, named: { name, kernelId: other.kernelId, reattached: true } };
    }
    return { kernel, named: { name, kernelId, reattached: false, gone } };
  }

  /** A call on the session ended: its idle time starts now. */
  async touch(name: string, kernelId: string): Promise<void> {
    await this.update((reg) => {
      const r = reg.sessions.get(name);
      if (r && r.kernelId === kernelId) r.lastUsedAt = this.now();
    });
  }

  /**
   * Shuts down named kernels unused for longer than the idle timeout (idle on the gateway, nobody
   * connected) and records kernels the gateway no longer has. Returns what it retired.
   */
  async sweep(now = this.now()): Promise<{ name: string; why: "idle" | "gone" }[]> {
    const reg = await this.read();
    if (reg.sessions.size === 0) return [];
    const gw = await this.options.gateway();
    const live = new Map((await gw.listKernels()).map((k) => [k.id, k]));
    const out: { name: string; why: "idle" | "gone" }[] = [];
    for (const [name, r] of reg.sessions) {
      const k = live.get(r.kernelId);
      if (!k) {
        if (await this.retireIf(name, r.kernelId, "gone", now)) out.push({ name, why: "gone" });
        continue;
      }
      if (now - r.lastUsedAt <= this.idleTimeoutMs || k.executionState === "busy" || k.connections > 0)
        continue;
      await gw.deleteKernel(r.kernelId);
      if (await this.retireIf(name, r.kernelId, "idle", now)) out.push({ name, why: "idle" });
    }
    return out;
  }

  /** Every named session of this gateway (after a sweep), with its state and memory when idle. */
  async list(): Promise<NamedSessionInfo[]> {
    await this.sweep().catch(() => []);
    const reg = await this.read();
    const gw = await this.options.gateway();
    const live = new Map((await gw.listKernels()).map((k) => [k.id, k]));
    const now = this.now();
    const out: NamedSessionInfo[] = [];
    for (const [name, r] of [...reg.sessions].sort((a, b) => a[0].localeCompare(b[0]))) {
      const k = live.get(r.kernelId);
      const info: NamedSessionInfo = {
        name,
        kernelId: r.kernelId,
        cwd: r.cwd,
        createdAt: r.createdAt,
        idleMs: Math.max(0, now - r.lastUsedAt),
        state: k?.executionState ?? "gone",
        connections: k?.connections,
      };
      if (k?.executionState === "idle") info.memoryBytes = await probeMemory(gw, r.kernelId);
      out.push(info);
    }
    return out;
  }

  /** Ends a named session's kernel and forgets the name (a later call on it starts over); false if unknown. */
  async kill(name: string): Promise<boolean> {
    const record = (await this.read()).sessions.get(name);
    if (!record) return false;
    const gw = await this.options.gateway();
    await gw.deleteKernel(record.kernelId);
    await this.retireIf(name, record.kernelId, "killed", this.now());
    return true;
  }

  /** The names recorded now (no gateway call). */
  async names(): Promise<string[]> {
    return [...(await this.read()).sessions.keys()].sort();
  }

  /** Moves `name` to the retired records when it still maps to kernelId; true when it did. */
  private async retireIf(
    name: string,
    kernelId: string,
    why: "idle" | "gone" | "killed",
    at: number,
  ): Promise<boolean> {
    let done = false;
    await this.update((reg) => {
      const r = reg.sessions.get(name);
      if (!r || r.kernelId !== kernelId) return;
      reg.sessions.delete(name);
      reg.retired.delete(name);
      reg.retired.set(name, {
        key: namedKey(name),
        kernelId,
        why,
        at,
        lastUsed: r.lastUsedAt,
        ...(why === "idle" ? { idleTimeoutMs: this.idleTimeoutMs } : {}),
      });
      for (const k of reg.retired.keys()) {
        if (reg.retired.size <= MAX_RETIRED) break;
        reg.retired.delete(k);
      }
      done = true;
    });
    return done;
  }

  private async read(): Promise<Registry> {
    let text: string;
    try {
      text = await readFile(this.file, "utf8");
    } catch {
      return { sessions: new Map(), retired: new Map() };
    }
    return parseRegistry(text);
  }

  /** Read-modify-write under the lock, written atomically. */
  private async update(change: (reg: Registry) => void): Promise<void> {
    mkdirSync(dirname(this.file), { recursive: true, mode: 0o700 });
    const held = await acquireLockFile(`${this.file}.lock`, {
      timeoutMs: this.options.lockTimeoutMs ?? LOCK_TIMEOUT_MS,
      maxPollMs: 50,
    });
    try {
      const reg = await this.read();
      change(reg);
      const data: RegistryFile = {
        version: 1,
        gateway: this.options.gatewayIdentity,
        sessions: Object.fromEntries(
          [...reg.sessions].map(([n, r]) => [
            n,
            {
              kernelId: r.kernelId,
              createdAt: iso(r.createdAt),
              lastUsedAt: iso(r.lastUsedAt),
              cwd: r.cwd,
            },
          ]),
        ),
        retired: Object.fromEntries(
          [...reg.retired].map(([n, r]) => [
            n,
            {
              kernelId: r.kernelId,
              why: r.why,
              at: iso(r.at),
              lastUsed: iso(r.lastUsed),
              ...(r.idleTimeoutMs !== undefined ? { idleTimeoutMs: r.idleTimeoutMs } : {}),
            },
          ]),
        ),
      };
      await writeFileAtomic(this.file, `${JSON.stringify(data, null, 2)}\n`, { mode: 0o600 });
    } finally {
      held.release();
    }
  }
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

function ms(text: unknown): number {
  const t = typeof text === "string" ? Date.parse(text) : Number.NaN;
  return Number.isFinite(t) ? t : 0;
}

/** A registry file's contents; an unreadable one counts as empty (its kernels are then left to the gateway). */
function parseRegistry(text: string): Registry {
  const reg: Registry = { sessions: new Map(), retired: new Map() };
  let data: Partial<RegistryFile>;
  try {
    data = JSON.parse(text);
  } catch {
    return reg;
  }
  for (const [name, r] of Object.entries(data.sessions ?? {})) {
    if (typeof r?.kernelId !== "string") continue;
    reg.sessions.set(name, {
      kernelId: r.kernelId,
      createdAt: ms(r.createdAt),
      lastUsedAt: ms(r.lastUsedAt),
      cwd: String(r.cwd ?? ""),
    });
  }
  for (const [name, r] of Object.entries(data.retired ?? {})) {
    if (!r || !["idle", "gone", "killed"].includes(r.why)) continue;
    reg.retired.set(name, {
      key: namedKey(name),
      kernelId: String(r.kernelId ?? ""),
      why: r.why,
      at: ms(r.at),
      lastUsed: ms(r.lastUsed),
      ...(typeof r.idleTimeoutMs === "number" && r.idleTimeoutMs >= 0
        ? { idleTimeoutMs: r.idleTimeoutMs }
        : {}),
    });
  }
  return reg;
}

/** The kernel's resident memory, asked of the kernel itself through a short attach; undefined if not told in time. */
async function probeMemory(gw: NamedSessionGateway, kernelId: string): Promise<number | undefined> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), PROBE_TIMEOUT_MS);
  let kernel: Kernel | undefined;
  try {
    kernel = await gw.attachKernel(kernelId, { signal: controller.signal, startTimeoutMs: PROBE_TIMEOUT_MS });
    if (!speaksPython(kernel.info)) return undefined; // the probe is Python
    const r = await kernel.execute(
      "print(next((l.split()[1] for l in open('/proc/self/status') if l.startswith('VmRSS:')), ''))",
      { silent: true, storeHistory: false, timeoutMs: PROBE_TIMEOUT_MS, signal: controller.signal },
    );
    const kb = Number(r.text.trim());
    return r.status === "ok" && Number.isFinite(kb) && kb > 0 ? kb * 1024 : undefined;
  } catch {
    return undefined;
  } finally {
    clearTimeout(timer);
    await kernel?.detach?.().catch(() => {});
  }
}

/**
 * The attacker's harness (docs/isolation.md): runs kernel code through the real tools of the built
 * CLI (dist/cli/nbagent.js, as installed), in a host process that runs as root (this test process)
 * or as the unprivileged user `nobody` (through `runuser`), with a state directory, cwd, HOME and
 * TMPDIR of its own that its user owns. Each host has a random secret in its own environment
 * (NBAGENT_TEST_API_KEY, NBAGENT_MCP_TOKEN): the secrets a kernel must never reach.
 *
 * Attack snippets print one machine-checkable line per attack:
 *   `ATTACK <name>: blocked <detail>`  the attack failed (what the promise wants)
 *   `ATTACK <name>: ESCAPED <detail>` the attack worked
 * and `attackVerdicts` collects them from the model's text.
 */
import assert from "node:assert/strict";
import { type ChildProcessWithoutNullStreams, execFileSync, spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import {
  chmodSync,
  chownSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  symlinkSync,
} from "node:fs";
import { join } from "node:path";
import { after, before } from "node:test";
import { fileURLToPath } from "node:url";
import { TEST_PYTHON } from "../python.js";

export const ROOT = fileURLToPath(new URL("../..", import.meta.url));
export const PYTHON = TEST_PYTHON;
export const NOBODY_UID = 65534;
export const IS_ROOT = process.getuid?.() === 0;
const RUNUSER =
  ["/usr/sbin/runuser", "/sbin/runuser", "/usr/bin/runuser"].find((p) => existsSync(p)) ?? "runuser";

/** Who runs the host: root (this test process) or nobody; "user" when the tests do not run as root. */
export type Who = "root" | "nobody" | "user";

/** The principals each attack runs as; the nobody variant needs root to switch users. */
export const PRINCIPALS: Who[] = IS_ROOT ? ["root", "nobody"] : ["user"];

/** A test-name suffix that says who ran it (and that the nobody variant was skipped when not root). */
export function asWho(who: Who): string {
  return who === "user" ? "as this user (not root: the nobody variant is skipped)" : `as ${who}`;
}

/** The sandbox settings each attack runs under. */
export const SANDBOXES: { name: string; args: string[] }[] = [
  { name: "no sandbox", args: [] },
  { name: "--sandbox", args: ["--sandbox"] },
  { name: "--sandbox=net-off", args: ["--sandbox=net-off"] },
];

/** A fresh random secret, put in each host's own environment. */
export const SECRET = `nbagent-secret-${randomBytes(12).toString("hex")}`;
export const MCP_SECRET = `nbagent-mcp-${randomBytes(12).toString("hex")}`;

let bundleDir: string | undefined;
let workRoot: string | undefined;

/** The CLI bundle the hosts run (readable by nobody: built in the worktree, or copied). */
export function bundle(): string {
  assert.ok(bundleDir, "setUp() was not called");
  return join(bundleDir, "cli", "nbagent.js");
}

/**
 * Builds a private CLI bundle before the file's tests, in a package of its own under a temp dir
 * (package.json, dist's files, node_modules): not in dist/, where `npm pack` of the install tests
 * would meet it half-made. Removes it and every temp dir after. When nobody cannot read
 * node_modules through the link, it is copied there instead.
 */
export function setUp(): void {
  before(() => {
    execFileSync(process.execPath, ["scripts/copy-assets.mjs"], { cwd: ROOT });
    // Not under the run's TMPDIR: that is root's (0700), nobody could not reach its own dirs.
    workRoot = mkdtempSync("/tmp/nbagent-security-");
    chmodSync(workRoot, 0o755);
    const pkg = join(workRoot, "pkg");
    mkdirSync(pkg);
    cpSync(join(ROOT, "package.json"), join(pkg, "package.json"));
    cpSync(join(ROOT, "dist"), join(pkg, "dist"), {
      recursive: true,
      filter: (src) => !/[/\\]test-security-[^/\\]*$/.test(src),
    });
    symlinkSync(join(ROOT, "node_modules"), join(pkg, "node_modules"));
    bundleDir = join(pkg, "dist", "test-security");
    execFileSync(process.execPath, ["scripts/bundle.mjs", "cli", join(bundleDir, "cli")], { cwd: ROOT });
    execFileSync("chmod", ["-R", "a+rX", pkg]);
    if (IS_ROOT && !nobodyCanRun(bundle())) {
      rmSync(join(pkg, "node_modules"));
      cpSync(join(ROOT, "node_modules"), join(pkg, "node_modules"), { recursive: true, dereference: true });
      execFileSync("chmod", ["-R", "a+rX", pkg]);
      assert.ok(nobodyCanRun(bundle()), `nobody cannot run ${bundle()} even from a copy`);
    }
  });
  after(() => {
    if (workRoot) rmSync(workRoot, { recursive: true, force: true });
  });
}

function nobodyCanRun(entry: string): boolean {
  const r = spawnSync(RUNUSER, ["-u", "nobody", "--", process.execPath, entry, "--help"], {
    encoding: "utf8",
    cwd: "/",
    env: { PATH: "/usr/bin:/bin" },
  });
  if (r.status !== 0) process.stderr.write(`nobody cannot run ${entry}: ${r.error ?? r.stderr}\n`);
  return r.status === 0;
}

/** A host's own folders, owned by its user: state (0700), cwd, home, tmp, and `outside` (not its cwd). */
export interface Place {
  who: Who;
  dir: string;
  state: string;
  cwd: string;
  home: string;
  tmp: string;
}

let places = 0;

export function newPlace(who: Who): Place {
  assert.ok(workRoot, "setUp() was not called");
  const dir = join(workRoot, `p${places++}`);
  const place = {
    who,
    dir,
    state: join(dir, "state"),
    cwd: join(dir, "cwd"),
    home: join(dir, "home"),
    tmp: join(dir, "tmp"),
  };
  mkdirSync(dir, { mode: 0o755 });
  for (const d of [place.state, place.cwd, place.home, place.tmp]) mkdirSync(d, { mode: 0o700 });
  if (who === "nobody") for (const d of [dir, place.state, place.cwd, place.home, place.tmp]) own(d);
  return place;
}

/** Gives a path to nobody (no-op for other principals' places). */
export function own(path: string): void {
  chownSync(path, NOBODY_UID, NOBODY_UID);
}

/** The environment a host gets: minimal, with the secrets, the state dir and its own HOME/TMPDIR. */
export function hostEnv(place: Place, extra: Record<string, string> = {}): Record<string, string> {
  return {
    PATH: "/usr/local/bin:/usr/bin:/bin",
    LANG: "C.UTF-8",
    NO_COLOR: "1",
    HOME: place.home,
    TMPDIR: place.tmp,
    NBAGENT_PYTHON: PYTHON,
    NBAGENT_STATE_DIR: place.state,
    NBAGENT_TEST_API_KEY: SECRET,
    NBAGENT_MCP_TOKEN: MCP_SECRET,
    ...extra,
  };
}

/** argv and env that run `nbagent ARGS` as the place's user. */
export function command(
  place: Place,
  args: string[],
  extraEnv: Record<string, string> = {},
): { file: string; argv: string[]; env: Record<string, string> } {
  const env = hostEnv(place, extraEnv);
  const node = [process.execPath, bundle(), ...args];
  if (place.who !== "nobody") return { file: node[0], argv: node.slice(1), env };
  // -m keeps the environment (HOME, PATH too); the variables never appear on a command line, where
  // any process could read them in /proc/<pid>/cmdline.
  return { file: RUNUSER, argv: ["-m", "-u", "nobody", "--", ...node], env };
}

export interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs `nbagent ARGS` to completion as the place's user, in its cwd. */
export function nbagent(
  place: Place,
  args: string[],
  extraEnv: Record<string, string> = {},
  input = "",
): Promise<RunResult> {
  const c = command(place, args, extraEnv);
  const child = spawn(c.file, c.argv, { cwd: place.cwd, env: c.env, stdio: ["pipe", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (d: string) => {
    stdout += d;
  });
  child.stderr.setEncoding("utf8").on("data", (d: string) => {
    stderr += d;
  });
  child.stdin.end(input);
  return new Promise((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

// biome-ignore lint/suspicious/noExplicitAny: tool results are arbitrary JSON
export type Json = any;

/** One tool result: the model's text (all text parts), isError and the whole object. */
export interface Answer {
  text: string;
  isError: boolean;
  json: Json;
}

function answer(json: Json): Answer {
  if (json.error) return { text: `batch refused the line: ${json.error}`, isError: true, json };
  const text = (json.content as { type: string; text?: string }[])
    .filter((c) => c.type === "text")
    .map((c) => c.text)
    .join("\n");
  return { text, isError: json.isError === true, json };
}

/** A long-lived `nbagent batch` host: one tool call at a time, answered in order. */
export class Host {
  readonly child: ChildProcessWithoutNullStreams;
  private buffered = "";
  private err = "";
  private readonly ready: string[] = [];
  private readonly waiting: ((line: string | undefined) => void)[] = [];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  constructor(
    readonly place: Place,
    args: string[] = [],
    extraEnv: Record<string, string> = {},
  ) {
    const c = command(place, ["batch", "--cwd", place.cwd, ...args], extraEnv);
    this.child = spawn(c.file, c.argv, { cwd: place.cwd, env: c.env, stdio: ["pipe", "pipe", "pipe"] });
    this.child.stdout.setEncoding("utf8").on("data", (d: string) => {
      this.buffered += d;
      for (let nl = this.buffered.indexOf("\n"); nl >= 0; nl = this.buffered.indexOf("\n")) {
        const line = this.buffered.slice(0, nl);
        this.buffered = this.buffered.slice(nl + 1);
        const w = this.waiting.shift();
        if (w) w(line);
        else this.ready.push(line);
      }
    });
    this.child.stderr.setEncoding("utf8").on("data", (d: string) => {
      this.err += d;
    });
    this.exited = new Promise((resolve) =>
      this.child.on("close", (code, signal) => {
        for (const w of this.waiting.splice(0)) w(undefined);
        resolve({ code, signal });
      }),
    );
  }

  get stderr(): string {
    return this.err;
  }

  /** Sends one call and resolves with its result. */
  async call(tool: string, params: Json): Promise<Answer> {
    this.child.stdin.write(`${JSON.stringify({ tool, params })}\n`);
    const line =
      this.ready.shift() ?? (await new Promise<string | undefined>((resolve) => this.waiting.push(resolve)));
    if (line === undefined) throw new Error(`the host exited before answering; stderr:\n${this.err}`);
    return answer(JSON.parse(line));
  }

  /** The python tool with these cells (and params). */
  python(code: string | string[], params: Json = {}): Promise<Answer> {
    const cells = (Array.isArray(code) ? code : [code]).map((c) => ({ code: c }));
    return this.call("python", { timeout: 120, ...params, cells });
  }

  /** Ends stdin and waits for the host to exit (it shuts its kernels down). */
  async close(): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    this.child.stdin.end();
    return this.exited;
  }
}

/** Starts a batch host, runs `fn`, and closes the host whatever happens. */
export async function withHost<T>(
  place: Place,
  args: string[],
  extraEnv: Record<string, string>,
  fn: (host: Host) => Promise<T>,
): Promise<T> {
  const host = new Host(place, args, extraEnv);
  try {
    return await fn(host);
  } finally {
    await host.close();
  }
}

/** Runs one snippet in a fresh host as `who` (with `args`, e.g. --sandbox) and returns the text. */
export async function runSnippet(
  who: Who,
  code: string,
  options: { args?: string[]; env?: Record<string, string>; place?: Place } = {},
): Promise<Answer> {
  const place = options.place ?? newPlace(who);
  return withHost(place, options.args ?? [], options.env ?? {}, (h) => h.python(code));
}

/** `ATTACK name: verdict detail` lines of a text, by name. */
export function attackVerdicts(text: string): Map<string, { verdict: string; line: string }> {
  const out = new Map<string, { verdict: string; line: string }>();
  for (const m of text.matchAll(/^ATTACK ([\w.-]+): (blocked|ESCAPED)\b.*$/gm))
    out.set(m[1], { verdict: m[2], line: m[0] });
  return out;
}

/** Asserts that the text has a verdict line for every name and each says `blocked`. */
export function assertBlocked(text: string, names: string[]): void {
  const verdicts = attackVerdicts(text);
  const problems: string[] = [];
  for (const name of names) {
    const v = verdicts.get(name);
    if (!v) problems.push(`${name}: no verdict line`);
    else if (v.verdict !== "blocked") problems.push(v.line);
  }
  assert.deepEqual(
    problems,
    [],
    `attacks that were not blocked:\n${problems.join("\n")}\n--- text ---\n${text}`,
  );
}

/** The text never holds either host secret. */
export function assertNoSecret(text: string): void {
  assert.ok(
    !text.includes(SECRET) && !text.includes(MCP_SECRET),
    `a host secret reached the kernel:\n${text}`,
  );
}

/** Every file name under dir (recursively), for messages. */
export function listTree(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string, prefix: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      out.push(prefix + e.name);
      if (e.isDirectory()) walk(join(d, e.name), `${prefix}${e.name}/`);
    }
  };
  walk(dir, "");
  return out;
}

/** A cell that sleeps is interrupted through the runs tool and raises KeyboardInterrupt; the kernel lives on. */
export async function assertInterruptWorks(host: Host): Promise<void> {
  await host.python("alive = 'yes'");
  let r = await host.python("import time\nprint('started', flush=True)\ntime.sleep(600)", {
    wait: 2,
    timeout: 900,
  });
  const run = /run (r\d+)/.exec(r.text)?.[1];
  assert.ok(run, `the call did not go on in the background:\n${r.text}`);
  while (!/started/.test(r.text)) r = await host.call("runs", { run_id: run, wait: 2 });
  const stopped = await host.call("runs", { run_id: run, action: "interrupt" });
  assert.match(stopped.text, /KeyboardInterrupt/, stopped.text);
  const after = await host.python("print(alive)");
  assert.match(after.text, /^yes$/m, after.text);
}

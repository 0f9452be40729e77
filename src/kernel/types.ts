/**
 * The one kernel interface every backend (local ZeroMQ, shared gateway, remote gateway) implements.
 * runtime/ and tools/ depend only on this file, never on a backend.
 * Backends may add fields; they must not change the meaning of these.
 */
import type { DeathCause } from "./errors.js";

/** A rich output captured from execute_result / display_data (docs/output.md, "Rich outputs"). */
export interface DisplayOutput {
  /** "json" for application/json, "image" for image/png|jpeg|svg+xml, "text" when only text came. */
  type: "json" | "image" | "text";
  /** Full MIME bundle as the kernel sent it (data), with its metadata. */
  data: Record<string, unknown>;
  metadata: Record<string, unknown>;
  /** For images: the MIME type (image/png, image/jpeg, image/svg+xml). */
  mimeType?: string;
  /** Text chosen by MIME precedence markdown > plain > html→markdown (may be empty). */
  text: string;
  /** execute_result carries an execution count; display_data does not. */
  executionCount?: number | null;
  /** transient.display_id when present. */
  displayId?: string;
  /** Which IOPub message produced it. */
  source: "execute_result" | "display_data" | "update_display_data";
}

/** A structured status event (application/x-nbagent-status, or the original's x-xcsh-status). */
export interface StatusEvent {
  op: string;
  [key: string]: unknown;
}

export interface KernelErrorInfo {
  name: string;
  value: string;
  traceback: string[];
}

/** A raw Jupyter message (header/parent_header/metadata/content/buffers). */
export interface JupyterMessage<C = Record<string, unknown>> {
  header: {
    msg_id: string;
    msg_type: string;
    session: string;
    username: string;
    date: string;
    version: string;
  };
  parent_header: Partial<JupyterMessage["header"]>;
  metadata: Record<string, unknown>;
  content: C;
  buffers?: Uint8Array[];
  channel?: "shell" | "iopub" | "stdin" | "control";
}

/**
 * Something an execution did or saw besides the kernel's own output, reported as a value; only
 * tools/ turns these into words (docs/kernel-state.md).
 */
export type ExecutionNotice =
  /** The first input_request was answered with an empty string (no interactive stdin). */
  | { kind: "stdin-refused"; prompt: string }
  /** The execution's time ran out; the kernel was interrupted. */
  | { kind: "timed-out"; afterMs: number }
  /**
   * The kernel died while this request was out (its code may have run); `limit`: a limit ended it;
   * `cause`: the typed failure that ended it, when there is one (kernel/errors.ts).
   */
  | {
      kind: "kernel-died";
      reason: string;
      codeStarted: boolean;
      limit?: KernelLimitHit;
      cause?: DeathCause;
    }
  /** The kernel was already dead when the request was to be sent: nothing ran. */
  | { kind: "kernel-not-running"; reason: string; cause?: DeathCause }
  /** The kernel went idle without an execute_reply (its request handler failed). */
  | { kind: "no-reply" }
  /** After an interrupt the kernel stayed busy and was restarted (state lost). */
  | { kind: "restarted-after-interrupt" }
  /**
   * The kernel stopped responding to the cell, rather than being slow: when the time ran out (or the
   * call was cancelled) it was asked kernel_info on its control channel and answered, but never
   * finished that request either (no IOPub idle), and the cell stayed busy through the interrupt's
   * grace. ipykernel does this when its own handler fails after the code ran, e.g. once sys.stdout
   * was replaced or closed: no request can finish any more. `silentMs`: how long the cell had sent
   * nothing (no output, no reply) when the time ran out. Comes before `restarted-after-interrupt`.
   */
  | { kind: "kernel-unresponsive"; silentMs: number }
  /** While this ran, `refused` starts of a process or thread failed at the kernel's process limit. */
  | { kind: "process-limit-reached"; maxProcesses: number; refused: number };

export interface ExecuteOptions {
  signal?: AbortSignal;
  /** One deadline for this execution; on expiry: interrupt, and the text notes the timeout. */
  timeoutMs?: number;
  /** Sanitised-or-not text chunks in arrival order: stream text, tracebacks, notices. */
  onChunk?: (text: string, kind: "stdout" | "stderr" | "error") => void;
  /** What happened besides output (timeout, stdin refused, death, …), in order with the chunks. */
  onNotice?: (notice: ExecutionNotice) => void;
  onDisplay?: (display: DisplayOutput) => void;
  onStatusEvent?: (event: StatusEvent) => void;
  /** Every IOPub message whose parent is this request (the notebook output collector uses these). */
  onIOPub?: (msg: JupyterMessage) => void;
  /**
   * Default false: the first input_request is answered empty and flagged (docs/python-tool.md); any further one in
   * the same execution gets end-of-file, so code that reads until input ends (pdb after `%pdb on`,
   * `while True: input()`) stops instead of asking forever.
   */
  allowStdin?: boolean;
  /**
   * Tell the kernel there is no stdin at all (execute_request allow_stdin: false), so input() raises
   * StdinNotImplementedError in the user's code — what nbclient does, for notebook runs that must
   * match it. Default false (the kernel may ask; the answer is as above).
   */
  stdinDisabled?: boolean;
  silent?: boolean;
  storeHistory?: boolean;
  /** Bounded wait for idle after an interrupt before the kernel is restarted (default 10 s). */
  interruptGraceMs?: number;
  /**
   * How long an interrupt waits for the kernel to begin the request (its execute_input) before it is
   * sent anyway (default INTERRUPT_BEFORE_BEGIN_MS, and at most half the grace).
   */
  interruptBeforeBeginMs?: number;
  /**
   * How long after this request's `status: idle` its execute_reply may still arrive (default 5 s).
   * A kernel whose request handler raised (ipykernel logs "Exception in message handler") goes idle
   * and never replies; past this wait the execution ends with an error instead of hanging.
   */
  replyAfterIdleMs?: number;
  /**
   * Default true. When false the backend does not accumulate chunk text into `ExecuteResult.text`
   * (left ""): the caller streams `onChunk` into its own bounded sink. Needed for unbounded output
   * (the python tool must survive 1 GiB printed with bounded host memory).
   */
  keepText?: boolean;
  /** clear_output(wait) from this execution (the notebook writer needs it; also in onIOPub). */
  onClearOutput?: (wait: boolean) => void;
  /** With allowStdin: answers an input_request (prompt, password) → the value sent back. */
  onInputRequest?: (prompt: string, password: boolean) => string | Promise<string>;
  /**
   * This request's execute_reply arrived (its code has ended; its idle, and IOPub output that trails
   * the reply, may still come). Called at once, before the execution ends, so a caller can send the
   * next request then (`Kernel.sendAhead`, docs/runs.md "Pipelined cells"): return true when it did.
   * Then the rest of this execution belongs to its code no more: an abort or time limit that comes
   * now sends no interrupt (it would hit the next request's code) but ends this execution as its
   * reply says, and a kernel death before its idle is the next request's, not this one's.
   */
  onReply?: (reply: ReplySeen) => boolean | undefined;
  /**
   * The request was sent already (`Kernel.sendAhead`): the execution takes it over instead of
   * sending one — its messages that came meanwhile first, in order. Its code counts as started
   * (it may have run, and a kernel lost meanwhile was lost while it could run).
   */
  ahead?: SentAhead;
}

/** The request fields of an execute_request sent ahead (as ExecuteOptions gives them). */
export type AheadRequestOptions = Pick<ExecuteOptions, "silent" | "storeHistory" | "stdinDisabled"> & {
  /**
   * The request sent just before this one: the kernel runs this one only if it ran that one last
   * and that one ended ok within nbagent's guard's time (a reply's `next` said the kernel has the
   * guard; docs/runs.md, "Pipelined cells"); otherwise it answers this one `aborted` unrun.
   */
  after?: SentAhead;
};

/** An execute_reply as `ExecuteOptions.onReply` sees it. */
export interface ReplySeen {
  /** "error" also when the reply said ok but an error output came before it. */
  status: "ok" | "error" | "aborted";
  /** An interrupt (abort or time limit) was sent for this execution before the reply. */
  interrupted: boolean;
  /**
   * What the kernel does with a request sent `after` this one (AheadRequestOptions), as its reply
   * said: "run" or "abort". Absent: the kernel has no such guard, and none may be sent.
   */
  next?: "run" | "abort";
}

/**
 * An execute_request sent before its turn, queued in the kernel behind the one that runs (the
 * kernel runs them in order); its messages wait for the execution that takes it over
 * (`ExecuteOptions.ahead`). Not taken over: `release()` stops following it.
 */
export interface SentAhead {
  readonly code: string;
  /** The request's msg_id (what a request sent after it names). */
  readonly msgId: string;
  release(): void;
}

export interface ExecuteResult {
  status: "ok" | "error" | "aborted";
  executionCount: number | null;
  cancelled: boolean;
  timedOut: boolean;
  stdinRequested: boolean;
  /** The kernel died during this execution (process exit, heartbeat loss, status: dead). */
  kernelDied: boolean;
  /** After an interrupt the kernel stayed busy and was restarted (state lost). */
  kernelRestarted: boolean;
  /**
   * When the kernel sent its execute_reply (the reply's header date); absent when no reply came: the
   * kernel went idle without one (notice `no-reply`), died, or was restarted.
   */
  replyDate?: string;
  error?: KernelErrorInfo;
  displays: DisplayOutput[];
  /** All chunk text concatenated (unsanitised): the kernel's output only. */
  text: string;
  /** Every notice of this execution, in order (also sent to onNotice as they happen). */
  notices: ExecutionNotice[];
  /**
   * The request was sent to a live kernel, so its code may have run (even with no busy or
   * execute_input seen: a kernel that dies can take those with it). False only when the kernel was
   * dead before the request was sent: then nothing of it ran.
   */
  codeStarted: boolean;
  durationMs: number;
}

export interface KernelInfo {
  protocolVersion: string;
  implementation: string;
  languageName: string;
  languageVersion: string;
  /** Pygments lexer / codemirror name, for renderers. */
  language: string;
  banner: string;
  /** The kernel_info_reply's language_info as sent (saved as a notebook's metadata.language_info). */
  languageInfo?: Record<string, unknown>;
  /**
   * The session id in the headers of the kernel's replies: each kernel process makes its own, so a
   * reply with another one comes from a new process (the kernel was restarted).
   */
  session?: string;
}

/**
 * The kernel runs Python (ipykernel, xeus-python …), judged by its language_info: only such a kernel
 * gets nbagent's Python set-up code (docs/kernels.md, "Kernels of other languages").
 */
export function speaksPython(info: Pick<KernelInfo, "languageName">): boolean {
  return info.languageName.trim().toLowerCase() === "python";
}

/**
 * What the kernel process is kept from (docs/isolation.md), as the launched kernel reported it.
 * `pidNamespace: false` means the kernel can see (and read /proc/<pid>/environ of) every other
 * process of this user, the host included; `reason` says why it could not be had.
 */
export interface KernelIsolation {
  /** The kernel sees only its own processes, which all end with it. */
  pidNamespace: boolean;
  /** How the namespace was made (the unshare(2) system call, from the kernel's wrapper). */
  via?: "unshare";
  /**
   * The kernel runs below an init of its own with no capabilities, a seccomp filter, read-only
   * /proc/sys and /sys, a minimal /dev and nbagent's state hidden (docs/isolation.md). False with
   * a `reason` when the namespace was had but one of those steps failed.
   */
  confined?: boolean;
  /** Present when the kernel runs in the filesystem/network sandbox (bubblewrap). */
  sandbox?: { writable: string[]; network: boolean };
  /** Why the PID namespace (or the sandbox asked for) could not be had. */
  reason?: string;
}

/** The opt-in sandbox (docs/isolation.md): read-only filesystem except these paths, optional network. */
export interface KernelSandbox {
  /** Writable besides the kernel's cwd, a private temp dir and the connection-file directory. */
  writable: string[];
  /** false: no network at all (the kernel is then reached over unix sockets). */
  network: boolean;
}

export interface KernelStartOptions {
  /** Kernelspec name (default "python3"). */
  kernelName?: string;
  /** Explicit interpreter for a python kernel (overrides the kernelspec's argv[0]). */
  python?: string;
  /** Working directory of the kernel process. */
  cwd?: string;
  /** Environment for the kernel process (already filtered of secrets by the caller). */
  env?: Record<string, string>;
  signal?: AbortSignal;
  /** Bound on the whole start (spawn + kernel_info_reply). */
  startTimeoutMs?: number;
  /** A kernel process that has said nothing for this long is killed and started again (default max(20 s, startTimeoutMs/3)). */
  startStallMs?: number;
  /** Appended to the kernelspec's argv (e.g. `--HistoryManager.hist_file=:memory:`, as nbclient passes). */
  extraArguments?: string[];
  /** Run the kernel in the sandbox (local backend; refused with an Error: where bubblewrap is missing). */
  sandbox?: KernelSandbox;
  /**
   * What of nbagent's own state the kernel may see (docs/isolation.md). Default: the per-user state
   * directory is hidden, only the kernel's own connection files are put back.
   */
  confinement?: KernelConfinement;
  /** Per-kernel resource limits (docs/isolation.md); unset fields get the defaults there. */
  limits?: KernelLimits;
}

/**
 * nbagent's own state a kernel must not see (other kernels' connection files and keys, the shared
 * gateway's token, the named-session registry, other sessions' artifacts): each `hide` folder is
 * covered by an empty one in the kernel's mount namespace, then each `expose` folder (inside a hidden
 * one) is put back at its own path, writable. The kernel's own connection folder is always put back.
 */
export interface KernelConfinement {
  hide: string[];
  expose: string[];
}

/** Resource limits for one kernel and everything it starts (docs/isolation.md). */
export interface KernelLimits {
  /** Most processes (and threads) alive at once in the kernel's namespace. */
  maxProcesses?: number;
  /** Most memory the kernel and its children may use, in bytes. */
  memoryBytes?: number;
  /** Most CPU time the kernel and its children may use per unit of time, in CPUs (1.5: one and a half cores). */
  cpus?: number;
}

/**
 * A limit the kernel ran into (docs/isolation.md), as read from its cgroups after it ended: the
 * out-of-memory killer killed a process of the kernel at its memory limit, or starts of processes
 * or threads were refused at its process limit.
 */
export type KernelLimitHit =
  | { kind: "memory-limit"; limitBytes: number; oomKills: number }
  | { kind: "process-limit"; maxProcesses: number; refused: number };

/** `limit`: a limit the kernel hit, when that is known (local kernels with cgroup limits). */
export type KernelDeathListener = (reason: string, limit?: KernelLimitHit, cause?: DeathCause) => void;

export interface Kernel {
  readonly id: string;
  readonly backend: "local" | "gateway";
  readonly info: KernelInfo;
  /** What the kernel is kept from; undefined when the backend cannot tell (remote kernels). */
  readonly isolation?: KernelIsolation;
  /** Process state, heartbeat, and status: dead/restarting messages (docs/python-tool.md). */
  isAlive(): boolean;
  onDeath(listener: KernelDeathListener): () => void;
  /** True while an execution (or other shell request) is in flight. */
  isBusy(): boolean;
  /**
   * The memory the kernel (and what it started) uses now, in bytes, read on this machine (local
   * kernels); undefined when it is not known here (a gateway's kernels run elsewhere).
   */
  memoryBytes?(): number | undefined;
  execute(code: string, options?: ExecuteOptions): Promise<ExecuteResult>;
  /**
   * Sends an execute_request now, while another execution may still be running, for a later
   * `execute(code, { ahead })` to take over (docs/runs.md, "Pipelined cells"); undefined when the
   * kernel cannot take one now (not running, restarting). Optional: backends without it run cells one
   * request at a time.
   */
  sendAhead?(code: string, options?: AheadRequestOptions): SentAhead | undefined;
  interrupt(): Promise<void>;
  /** Restart in place (same id); state is lost. */
  restart(): Promise<void>;
  /** shutdown_request, then SIGTERM, then SIGKILL, each bounded; idempotent. */
  shutdown(): Promise<void>;
  /** The server's id for the kernel on a gateway backend (what a later process attaches to). */
  readonly kernelId?: string;
  /** Closes the connection and leaves the kernel running (gateway backends); idempotent. */
  detach?(): Promise<void>;
  /**
   * The connection was lost, not (as far as anyone can tell) the kernel: its gateway stayed
   * unreachable past the reconnect window (death cause `unreachable`). `reconnect()` may find it
   * again with its state (docs/backends.md, "Across a real network").
   */
  isDisconnected?(): boolean;
  /**
   * Connects again to the same kernel on its server. Rejects with KernelGoneError when the server no
   * longer has it, or with the failure to reach the server (the kernel stays disconnected).
   */
  reconnect?(): Promise<Reconnection>;
}

/** What connecting again to a disconnected kernel found. */
export interface Reconnection {
  /** The same process answered (its state is there); false: the server restarted it meanwhile. */
  sameProcess: boolean;
  /** The server reported it busy: a cell sent before the loss may still be running. */
  busy: boolean;
}

/**
 * What a kind of backend can do for its kernels (docs/backends.md "Backends as a registry"). The
 * runtime decides by these, never by a backend's name, so a new backend is its own folder, its facts
 * and one registration (runtime/backends.ts).
 */
export interface BackendFacts {
  /** Its kernels can be sandboxed (KernelStartOptions.sandbox): nbagent starts them on this machine. */
  readonly sandbox: boolean;
  /** Resource limits (KernelStartOptions.limits) are applied to its kernels. */
  readonly limits: boolean;
  /** nbagent's own state can be hidden from its kernels (KernelStartOptions.confinement). */
  readonly confinement: boolean;
  /** Its kernels run the interpreter nbagent is given (KernelStartOptions.python). */
  readonly interpreter: boolean;
  /** A kernel's memory can be read here (Kernel.memoryBytes). */
  readonly memory: boolean;
  /**
   * Its kernels run with this machine's environment: they are given the host's variables (its
   * secrets withheld). False: they keep what their server gives them (its PATH, HOME, devices) and
   * are given only nbagent's own variables, the host's `KERNEL_*` ones (Enterprise Gateway reads
   * those) and those the embedding host sets.
   */
  readonly hostEnvironment: boolean;
  /**
   * Its kernels live on a server that outlives this process: one can be kept under a name and
   * joined again by another process (attachKernel; named sessions).
   */
  readonly namedSessions: boolean;
  /**
   * Its kernels are reached over a connection to a server: the server may be unreachable or refuse
   * the credentials, and the environment a kernel is given is sent there.
   */
  readonly remote: boolean;
}

export interface KernelBackend {
  readonly name: string;
  /** What it can do for its kernels: the runtime asks these (BackendFacts). */
  readonly facts: BackendFacts;
  startKernel(options: KernelStartOptions): Promise<Kernel>;
  /** The kernelspec names startKernel accepts (for a local backend: those of this interpreter). */
  kernelSpecNames(options?: { python?: string }): Promise<string[]>;
  /** A kernelspec's display name and language, as notebooks record it in metadata.kernelspec. */
  kernelSpecInfo?(
    name: string,
    options?: { python?: string },
  ): Promise<{ name: string; displayName: string; language: string }>;
  /** Joins a running kernel by its server id (gateway backends only). */
  attachKernel?(
    kernelId: string,
    options?: { signal?: AbortSignal; startTimeoutMs?: number },
  ): Promise<Kernel>;
  /** Stop everything this backend started (kernels, helper processes). */
  dispose(): Promise<void>;
}

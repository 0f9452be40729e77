/**
 * The init script run inside every kernel before user code, after each start or restart
 * (docs/python-tool.md):
 * chdir to the session's cwd, copy the session env into os.environ, put cwd first on sys.path when
 * missing, bound the size of stream messages, and load the prelude helpers into the user namespace.
 *
 * Bounded stream messages: ipykernel buffers stdout/stderr and publishes them every 0.2 s, so a
 * fast writer sends one huge message (hundreds of MB), which no host can receive in bounded memory.
 * The init script wraps each stream's write so it flushes (synchronously, through ipykernel's own
 * flush) once STREAM_FLUSH_CHARS have been written since the last flush.
 *
 * No lost output: IOPub is PUB/SUB, and a PUB socket silently DROPS messages once its high-water
 * mark is reached — a host that reads slower than the kernel prints (a loaded machine, a slow disk
 * under the artifact) lost output, and could lose the `status: idle` that ends an execution. The
 * init script sets ZMQ_XPUB_NODROP on the kernel's IOPub socket (from its IO thread, which owns
 * it), so the kernel's publisher waits instead: backpressure reaches the printing code, and the
 * host's memory stays bounded by its receive high-water mark times STREAM_FLUSH_CHARS.
 *
 * Values travel as JSON string
 * literals (valid Python literals), and the prelude as source text, so this also works for a kernel
 * on another machine.
 */
import { PRELUDE_PATH, preludeSource } from "./prelude.js";

export const STREAM_FLUSH_CHARS = 16 * 1024;

/** The guard lines (inside a function body, 4-space indent): bounded stream messages and no-drop IOPub. */
function streamGuardLines(): string[] {
  return [
    "    import sys",
    "    for stream in (sys.stdout, sys.stderr):",
    "        if getattr(stream, '_nbagent_bounded', False) or not hasattr(stream, 'flush'):",
    "            continue",
    "        def bounded(s, _write=stream.write, _flush=stream.flush, _n=[0]):",
    `            if not isinstance(s, str) or len(s) <= ${STREAM_FLUSH_CHARS}:`,
    "                parts = (s,)",
    "            else:",
    `                parts = (s[i:i + ${STREAM_FLUSH_CHARS}] for i in range(0, len(s), ${STREAM_FLUSH_CHARS}))`,
    "            for part in parts:",
    "                _write(part)",
    "                _n[0] += len(part)",
    `                if _n[0] >= ${STREAM_FLUSH_CHARS}:`,
    "                    _n[0] = 0",
    "                    _flush()",
    "            return len(s)",
    "        try:",
    "            stream.write = bounded",
    "            stream._nbagent_bounded = True",
    "        except (AttributeError, TypeError):",
    "            pass",
    "    try:",
    "        import zmq",
    "        io = get_ipython().kernel.iopub_socket.io_thread",
    "        io.schedule(lambda: io.socket.setsockopt(zmq.XPUB_NODROP, 1))",
    "    except Exception:",
    "        pass",
    ...quickCellEndLines(),
    ...aheadGuardLines(),
  ];
}

/**
 * How long a cell may take and still let the request queued behind it run (the guard below): a
 * cell that ran longer may have given another writer time to edit the next cell, whose request
 * then went with the old source, so the kernel drops that request and the run sends the cell again
 * with its source as it is then (docs/runs.md, "Pipelined cells").
 */
export const AHEAD_QUICK_MS = 20;

/**
 * The guard that lets a run queue a cell two ahead (docs/runs.md, "Pipelined cells"): an
 * execute_request whose metadata names `nbagent_after` runs only when the request the kernel took
 * just before it is that one, and it ended `ok` within AHEAD_QUICK_MS; otherwise the kernel answers it
 * `aborted` without running it (no execution count taken). Each execute_reply's metadata says
 * which it will be for a request behind it (`nbagent_next`: run or abort), so the host knows at the
 * reply and a kernel without the guard (another kernel, another ipykernel) is never sent one.
 * Installed only where ipykernel's shell handler and finish_metadata have the shapes read here.
 */
function aheadGuardLines(): string[] {
  return [
    "    try:",
    "        import inspect as _inspect, time as _time",
    "        kernel = get_ipython().kernel",
    "        handlers = kernel.shell_handlers",
    "        handler = handlers.get('execute_request')",
    "        ok = (",
    "            not getattr(handler, '_nbagent_ahead', False)",
    "            and _inspect.iscoroutinefunction(handler)",
    "            and list(_inspect.signature(handler).parameters) == ['stream', 'ident', 'parent']",
    "            and callable(getattr(kernel, 'finish_metadata', None))",
    "            and callable(getattr(getattr(kernel, 'session', None), 'send', None))",
    "        )",
    "        if ok:",
    "            last = {'id': None, 'go': False, 't0': 0.0}",
    "            async def execute_request(stream, ident, parent, _handler=handler, _last=last, _kernel=kernel):",
    "                after = (parent.get('metadata') or {}).get('nbagent_after')",
    "                msg_id = parent['header']['msg_id']",
    "                if after is not None and not (_last['go'] and _last['id'] == after):",
    "                    _last['id'], _last['go'] = msg_id, False",
    "                    _kernel.session.send(stream, 'execute_reply', {'status': 'aborted'}, parent,",
    "                        metadata={'status': 'aborted', 'nbagent_next': 'abort'}, ident=ident)",
    "                    return",
    "                _last['id'], _last['go'], _last['t0'] = msg_id, False, _time.monotonic()",
    "                await _handler(stream, ident, parent)",
    "            def finish_metadata(parent, metadata, reply_content, _finish=kernel.finish_metadata, _last=last):",
    "                md = _finish(parent, metadata, reply_content)",
    "                if (parent.get('header') or {}).get('msg_id') == _last['id'] and isinstance(md, dict):",
    "                    quick = _time.monotonic() - _last['t0'] < " + AHEAD_QUICK_MS / 1000,
    "                    _last['go'] = reply_content.get('status') == 'ok' and quick",
    "                    md['nbagent_next'] = 'run' if _last['go'] else 'abort'",
    "                return md",
    "            execute_request._nbagent_ahead = True",
    "            kernel.finish_metadata = finish_metadata",
    "            handlers['execute_request'] = execute_request",
    "    except Exception:",
    "        pass",
  ];
}

/**
 * The guard lines that end a cell sooner (docs/runs.md, "Between cells"): ipykernel sleeps 0.5 ms
 * before each reply (`_execute_sleep`, for clients that stop reading at the reply; nbagent reads
 * to the idle status, which follows the cell's last output on IOPub), and flushes stdout and
 * stderr four times a cell, each flush a round trip to its IO thread even with nothing written.
 * An empty stream's flush is skipped (nothing buffered and no flush pending: there is nothing it
 * could send, and what the IO thread is sending goes before the idle status all the same). And it
 * reads the signature of the same two methods twice a cell (`_accepts_cell_id`): the answer is kept
 * per function. Only where ipykernel has these attributes; another kernel or version is left as it is.
 */
function quickCellEndLines(): string[] {
  return [
    "    try:",
    "        kernel = get_ipython().kernel",
    "        if isinstance(getattr(kernel, '_execute_sleep', None), float):",
    "            kernel._execute_sleep = 0.0",
    "    except Exception:",
    "        pass",
    "    import io as _io",
    "    for stream in (sys.stdout, sys.stderr):",
    "        if getattr(stream, '_nbagent_quick_flush', False) or getattr(stream, 'echo', None) is not None:",
    "            continue",
    "        if not isinstance(getattr(stream, '_buffer', None), _io.StringIO) or not isinstance(getattr(stream, '_flush_pending', None), bool):",
    "            continue",
    "        def flush(_s=stream, _flush=stream.flush):",
    "            if _s._flush_pending or _s._buffer.tell():",
    "                _flush()",
    "        try:",
    "            stream.flush = flush",
    "            stream._nbagent_quick_flush = True",
    "        except (AttributeError, TypeError):",
    "            pass",
    "    try:",
    "        import ipykernel.kernelbase as _kb, ipykernel.ipkernel as _ik",
    "        accepts = _kb._accepts_cell_id",
    "        if not getattr(accepts, '_nbagent_cached', False):",
    "            known = {}",
    "            def cached(meth, _accepts=accepts, _known=known):",
    "                key = getattr(meth, '__func__', meth)",
    "                if key not in _known:",
    "                    _known[key] = _accepts(meth)",
    "                return _known[key]",
    "            cached._nbagent_cached = True",
    "            _kb._accepts_cell_id = cached",
    "            if getattr(_ik, '_accepts_cell_id', None) is accepts:",
    "                _ik._accepts_cell_id = cached",
    "    except Exception:",
    "        pass",
  ];
}

/**
 * Only the output guards (bounded stream messages, no-drop IOPub), for kernels that must otherwise
 * stay untouched — `nbagent run`'s, whose notebooks must come out as nbclient writes them. Run it
 * silently (no execution count, no history).
 */
export function streamGuardScript(): string {
  return [
    "def __nbagent_guard():",
    ...streamGuardLines(),
    "__nbagent_guard()",
    "del __nbagent_guard",
    "",
  ].join("\n");
}

/**
 * Printed by the init script when the session's cwd does not exist where the kernel runs (a remote
 * gateway's machine), followed by the directory the kernel stays in.
 */
export const CWD_MISSING_MARKER = "__nbagent_cwd_missing__ ";

/** The directory the kernel stayed in when the init script could not enter the session's cwd. */
export function cwdMissingFrom(initOutput: string): string | undefined {
  const at = initOutput.indexOf(CWD_MISSING_MARKER);
  if (at < 0) return undefined;
  return initOutput.slice(at + CWD_MISSING_MARKER.length).split("\n")[0];
}

export function initScript(cwd: string, env: Record<string, string>, prelude = preludeSource()): string {
  const lit = (s: string) => JSON.stringify(s);
  return [
    "def __nbagent_init():",
    "    import json, os, sys",
    `    cwd = ${lit(cwd)}`,
    "    try:",
    "        os.chdir(cwd)",
    "    except OSError:",
    "        cwd = os.getcwd()",
    `        print(${lit(CWD_MISSING_MARKER)} + cwd)`,
    `    os.environ.update(json.loads(${lit(JSON.stringify(env))}))`,
    "    if cwd not in sys.path:",
    "        sys.path.insert(0, cwd)",
    ...streamGuardLines(),
    `    exec(compile(${lit(prelude)}, ${lit(PRELUDE_PATH)}, "exec"), globals())`,
    "__nbagent_init()",
    "del __nbagent_init",
    "",
  ].join("\n");
}

"""nbagent prelude: small helpers loaded into every kernel the python tool starts.

Each public function's first docstring line is shown to the model in the python tool's description
(nbagent reads this file; keep those lines short and accurate). Private names start with `_nb`.
"""

import os as _nb_os
import signal as _nb_signal
import subprocess as _nb_subprocess


class _NbText(str):
    """A str that shows as plain text (not a quoted repr) when it is a cell's last expression."""

    def __repr__(self):
        return str(self)


class RunResult:
    """Outcome of run(): stdout, stderr, code (exit status; -9 when killed), ok, timed_out."""

    def __init__(self, cmd, stdout, stderr, code, timed_out=False):
        self.cmd, self.stdout, self.stderr, self.code, self.timed_out = cmd, stdout, stderr, code, timed_out

    @property
    def ok(self):
        return self.code == 0

    def __repr__(self):
        parts = [p for p in (self.stdout.rstrip("\n"), self.stderr.rstrip("\n")) if p]
        if self.timed_out:
            parts.append("[timed out]")
        if self.code != 0:
            parts.append(f"[exit code {self.code}]")
        return "\n".join(parts) or "(ok)"

    def __str__(self):
        return self.stdout

    def __bool__(self):
        return self.ok


def _nb_killpg(proc):
    try:
        _nb_os.killpg(proc.pid, _nb_signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run(cmd, cwd=None, timeout=None, input=None, check=False):
    """run(cmd, cwd=None, timeout=None) -> RunResult(stdout, stderr, code): run a shell command (str) or argv (list) in its own process group; killed on interrupt or timeout."""
    proc = _nb_subprocess.Popen(
        cmd,
        shell=isinstance(cmd, str),
        cwd=cwd,
        stdin=_nb_subprocess.PIPE if input is not None else _nb_subprocess.DEVNULL,
        stdout=_nb_subprocess.PIPE,
        stderr=_nb_subprocess.PIPE,
        text=True,
        errors="replace",
        start_new_session=True,
    )
    timed_out = False
    try:
        out, err = proc.communicate(input=input, timeout=timeout)
    except _nb_subprocess.TimeoutExpired:
        timed_out = True
        _nb_killpg(proc)
        out, err = proc.communicate()
    except BaseException:
        _nb_killpg(proc)
        proc.wait()
        raise
    result = RunResult(cmd, out or "", err or "", -9 if timed_out else proc.returncode, timed_out)
    if check and not result.ok:
        raise RuntimeError(f"command failed ({result.code}): {cmd}\n{result.stderr}")
    return result


def read(path, offset=None, limit=None):
    """read(path, offset=None, limit=None) -> str: a text file's content, optionally lines [offset, offset+limit) (1-based)."""
    with open(path, encoding="utf-8", errors="replace") as f:
        if offset is None and limit is None:
            return _NbText(f.read())
        lines = f.readlines()
    start = max(0, (offset or 1) - 1)
    end = len(lines) if limit is None else start + limit
    return _NbText("".join(lines[start:end]))


def _nb_write(path, text, mode):
    _nb_os.makedirs(_nb_os.path.dirname(_nb_os.path.abspath(path)), exist_ok=True)
    with open(path, mode, encoding="utf-8") as f:
        f.write(text)
    return path


def write(path, text):
    """write(path, text) -> path: write a text file (creating parent directories), replacing its content."""
    return _nb_write(path, text, "w")


def append(path, text):
    """append(path, text) -> path: append text to a file (creating it and its parent directories)."""
    return _nb_write(path, text, "a")


_NB_SKIP_DIRS = {".git", "node_modules", "__pycache__", ".venv", "venv", ".mypy_cache", ".ipynb_checkpoints"}


def _nb_walk(path):
    for root, dirs, files in _nb_os.walk(path):
        dirs[:] = sorted(d for d in dirs if d not in _NB_SKIP_DIRS)
        yield root, dirs, sorted(files)


def find(pattern="*", path=".", limit=1000):
    """find(pattern='*', path='.', limit=1000) -> list[str]: files whose name (or relative path) matches a glob, skipping .git/node_modules/venvs."""
    import fnmatch

    out = []
    for root, _dirs, files in _nb_walk(path):
        for name in files:
            rel = _nb_os.path.relpath(_nb_os.path.join(root, name), path)
            if fnmatch.fnmatch(name, pattern) or fnmatch.fnmatch(rel, pattern):
                out.append(_nb_os.path.join(root, name) if path != "." else rel)
                if len(out) >= limit:
                    return out
    return out


def grep(pattern, path=".", glob="*", ignore_case=False, limit=200):
    """grep(pattern, path='.', glob='*', ignore_case=False, limit=200) -> list[str]: 'file:line: text' for lines matching a regex."""
    import fnmatch
    import re

    rx = re.compile(pattern, re.IGNORECASE if ignore_case else 0)
    paths = [path] if _nb_os.path.isfile(path) else [
        _nb_os.path.join(root, name) for root, _d, files in _nb_walk(path) for name in files if fnmatch.fnmatch(name, glob)
    ]
    out = []
    for p in paths:
        try:
            with open(p, encoding="utf-8", errors="strict") as f:
                for i, line in enumerate(f, 1):
                    if rx.search(line):
                        out.append(f"{p}:{i}: {line.rstrip()}")
                        if len(out) >= limit:
                            return out
        except (UnicodeDecodeError, OSError):
            continue
    return out


def tree(path=".", depth=2):
    """tree(path='.', depth=2) -> str: an indented listing of a directory (directories end with /)."""
    lines = [path.rstrip("/") + "/"]

    def walk(d, prefix, level):
        try:
            entries = sorted(e for e in _nb_os.listdir(d) if e not in _NB_SKIP_DIRS)
        except OSError:
            return
        for e in entries:
            full = _nb_os.path.join(d, e)
            is_dir = _nb_os.path.isdir(full)
            lines.append(f"{prefix}{e}{'/' if is_dir else ''}")
            if is_dir and level < depth:
                walk(full, prefix + "  ", level + 1)

    walk(path, "  ", 1)
    return _NbText("\n".join(lines))


def diff(a, b, context=3):
    """diff(a, b, context=3) -> str: unified diff of two files (paths) or two strings."""
    import difflib

    def load(x):
        if isinstance(x, str) and "\n" not in x and _nb_os.path.isfile(x):
            with open(x, encoding="utf-8", errors="replace") as f:
                return x, f.read()
        return "a" if x is a else "b", x

    name_a, text_a = load(a)
    name_b, text_b = load(b)
    lines = difflib.unified_diff(
        text_a.splitlines(keepends=True), text_b.splitlines(keepends=True), name_a, name_b, n=context
    )
    return _NbText("".join(lines))


def env(name=None, value=None):
    """env(name=None, value=None): all environment variables (dict), one (str or None), or set one when value is given."""
    if name is None:
        return dict(_nb_os.environ)
    if value is not None:
        _nb_os.environ[name] = str(value)
    return _nb_os.environ.get(name)


def status(op, **data):
    """status(op, **data): emit a structured status event (shown to the agent's UI, not as text output)."""
    from IPython.display import display

    display({"application/x-nbagent-status": {"op": op, **data}}, raw=True)

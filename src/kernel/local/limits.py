"""Per-kernel resource limits (docs/isolation.md, "Limits").

`apply_limits(limits, kernel_id)` is called once in the process that will start the kernel (pid 1 of
the kernel's PID namespace), before it forks the kernel, while it may still write the host's cgroups:
everything it starts afterwards inherits the limits. For each limit the first mechanism that works is
used:

- cgroup v2 (the unified hierarchy has the controller): a child group `nbagent-<kernel_id>` under this
  process's own group (or next to it, when the own group holds processes and so cannot delegate
  controllers), with pids.max / memory.max / cpu.max;
- cgroup v1 (a hierarchy of its own per controller): a child group `nbagent-<kernel_id>` under this
  process's own group in the `pids`, `memory` and `cpu` hierarchies, with pids.max /
  memory.limit_in_bytes / cpu.cfs_quota_us;
- rlimits: RLIMIT_NPROC (not enforced for uid 0; counted per user and user namespace) and
  RLIMIT_DATA (per process; RLIMIT_AS would count reserved address space, and OpenBLAS, glibc's
  per-thread arenas and thread stacks reserve far more than they use: numpy spins or fails at import
  under an RLIMIT_AS it would never reach in real memory). A CPU limit has none: RLIMIT_CPU is total
  seconds, not a rate, so without a cpu controller there is no CPU limit, and the answer says why.

Always, whatever was asked: RLIMIT_NOFILE (soft and hard) at `openFiles` (default
_LIM_OPEN_FILES), and the size of the kernel's tmpfs mounts (its private /dev/shm, mounted by pidns.py
after this; `tmpfs_bytes()`) from `tmpfsBytes`, else half the memory limit, else an eighth of the RAM.

The process joins the groups itself (writes "0" to cgroup.procs). The answer is a dict (JSON-able) the
host keeps: it reads how the kernel died from the groups and removes them once the kernel has ended
(`remove_limit_cgroups`, or the host's own code in limits.ts).

Only os and sys at module level: this file may be prepended to the kernel's wrapper.
"""

import os
import sys

_NBAGENT_CGROUP_PREFIX = "nbagent-"
# Open files per process (soft and hard): ipykernel and ZeroMQ hold a few dozen, data work may open
# hundreds; four times the usual soft default of 1024, far below what exhausts the host's file table.
_LIM_OPEN_FILES = 4096
# cgroup CPU bandwidth: quota per period (the kernel's default period, 100 ms; the least quota, 1 ms).
_LIM_CPU_PERIOD_US = 100000
_LIM_CPU_MIN_QUOTA_US = 1000
_lim_tmpfs = []  # the size apply_limits chose for the kernel's tmpfs mounts (at most one entry)


def default_tmpfs_bytes(memory_bytes=None):
    """The size of a kernel's tmpfs mounts (/dev/shm, and the sandbox's $TMPDIR): half the memory
    limit (tmpfs pages count in it; half, so a full /tmp is ENOSPC while the kernel lives), else an
    eighth of the machine's RAM (tmpfs pages belong to no process: the out-of-memory killer cannot
    free them by killing one). Whole MiB. limit-values.ts `tmpfsBytes` answers the same."""
    mib = 1 << 20
    if memory_bytes:
        return max(mib, int(memory_bytes) // 2 // mib * mib)
    try:
        ram = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        ram = 8 << 30
    return max(64 * mib, ram // 8 // mib * mib)


def tmpfs_bytes():
    """The size for the kernel's tmpfs mounts: what apply_limits chose, else the default."""
    return _lim_tmpfs[0] if _lim_tmpfs else default_tmpfs_bytes()


def _lim_read(path):
    with open(path) as f:
        return f.read()


def _lim_write(path, text):
    # One write(2) per value: cgroup files take a whole value per write.
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _lim_mounts():
    """[(root, mount point, fstype, super options)] of the cgroup file systems this process sees."""
    out = []
    try:
        lines = _lim_read("/proc/self/mountinfo").splitlines()
    except OSError:
        return out
    for line in lines:
        left, _, right = line.partition(" - ")
        fields, rfields = left.split(), right.split()
        if len(fields) < 5 or len(rfields) < 3 or rfields[0] not in ("cgroup", "cgroup2"):
            continue
        point = fields[4].replace("\\040", " ")
        out.append((fields[3], point, rfields[0], set(rfields[2].split(","))))
    return out


def _lim_own_groups():
    """{controller or "" (v2): path} from /proc/self/cgroup."""
    groups = {}
    try:
        lines = _lim_read("/proc/self/cgroup").splitlines()
    except OSError:
        return groups
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        if parts[1] == "":
            groups[""] = parts[2]
        for c in parts[1].split(","):
            if c:
                groups[c] = parts[2]
    return groups


def _lim_dir(mount_root, point, path):
    """The directory of cgroup `path` under a mount whose root is `mount_root`, or None."""
    if mount_root != "/":
        if path != mount_root and not path.startswith(mount_root.rstrip("/") + "/"):
            return None
        path = path[len(mount_root) :]
    return point.rstrip("/") + "/" + path.strip("/") if path.strip("/") else point.rstrip("/") or "/"


def _lim_v2_base(controllers):
    """(base dir, None) under which a group with `controllers` can be made in cgroup v2, else (None, why)."""
    own = _lim_own_groups().get("")
    mount = next((m for m in _lim_mounts() if m[2] == "cgroup2"), None)
    if own is None or mount is None:
        return None, "no cgroup v2 hierarchy"
    here = _lim_dir(mount[0], mount[1], own)
    if here is None:
        return None, "this process's cgroup v2 group is outside the mounted hierarchy"
    try:
        available = set(_lim_read(here + "/cgroup.controllers").split())
    except OSError as err:
        return None, "cannot read %s/cgroup.controllers (%s)" % (here, err.strerror)
    missing = [c for c in controllers if c not in available]
    if missing:
        return None, "cgroup v2 has no %s controller here" % "/".join(missing)
    parent = os.path.dirname(here)
    why = None
    for base in [here] + ([parent] if parent.startswith(mount[1].rstrip("/") + "/") else []):
        try:
            enabled = set(_lim_read(base + "/cgroup.subtree_control").split())
            for c in controllers:
                if c not in enabled:
                    _lim_write(base + "/cgroup.subtree_control", "+" + c)
            if os.access(base, os.W_OK):
                return base, None
            why = "%s is not writable (no delegation)" % base
        except OSError as err:
            why = "cannot enable %s in %s (%s)" % ("/".join(controllers), base, err.strerror)
    return None, why


def _lim_v1_base(controller):
    """(own group's dir in the v1 hierarchy of `controller`, None) or (None, why)."""
    own = _lim_own_groups().get(controller)
    mount = next((m for m in _lim_mounts() if m[2] == "cgroup" and controller in m[3]), None)
    if own is None or mount is None:
        return None, "no cgroup v1 %s hierarchy" % controller
    here = _lim_dir(mount[0], mount[1], own)
    if here is None:
        return None, "this process's %s group is outside the mounted hierarchy" % controller
    if not os.access(here, os.W_OK):
        return None, "%s is not writable" % here
    return here, None


def _lim_make_group(base, kernel_id, values):
    """mkdir base/nbagent-<id>, write each (file, value), join it. The dir, or raises OSError."""
    path = base.rstrip("/") + "/" + _NBAGENT_CGROUP_PREFIX + kernel_id
    try:
        os.mkdir(path, 0o755)
    except FileExistsError:
        pass
    try:
        for name, value, required in values:
            try:
                _lim_write(path + "/" + name, value)
            except OSError:
                if required:
                    raise
        _lim_write(path + "/cgroup.procs", "0")
    except OSError:
        try:
            os.rmdir(path)
        except OSError:
            pass
        raise
    return path


def _lim_host_uid():
    """This process's real uid as the initial user namespace knows it (None when unknown)."""
    uid = os.getuid()
    try:
        for line in _lim_read("/proc/self/uid_map").splitlines():
            inside, outside, count = (int(x) for x in line.split())
            if inside <= uid < inside + count:
                return outside + uid - inside
    except (OSError, ValueError):
        pass
    return None


def _lim_own_userns():
    """True inside a user namespace other than the initial one (its uid_map is not the identity)."""
    try:
        return _lim_read("/proc/self/uid_map").split() != ["0", "0", "4294967295"]
    except OSError:
        return False


def _lim_rlimit(which, value):
    import resource

    res = getattr(resource, which)
    soft, hard = resource.getrlimit(res)
    if hard != resource.RLIM_INFINITY and hard < value:
        value = hard
    resource.setrlimit(res, (value, value))
    return value


def _lim_cpu_quota(cpus):
    return max(_LIM_CPU_MIN_QUOTA_US, int(round(float(cpus) * _LIM_CPU_PERIOD_US)))


def apply_limits(limits, kernel_id):
    """Applies {"maxProcesses": n, "memoryBytes": n, "cpus": x, "openFiles": n, "tmpfsBytes": n} (any
    may be missing or None) to this process and everything it starts from now on. Never raises.
    Returns:

    {"maxProcesses": n or None, "memoryBytes": n or None,      # the limits in force (None: none)
     "cpus": x or None, "openFiles": n or None, "tmpfsBytes": n,
     "via": "cgroup-v2" | "cgroup-v1" | "rlimit" | "mixed" | "none",   # of processes, memory, cpus
     "processesVia": mechanism or None, "memoryVia": mechanism or None, "cpusVia": mechanism or None,
     "cgroups": {"pids": dir, "memory": dir, "cpu": dir},      # the groups made (remove after the end)
     "cgroup": the first of those dirs or None,
     "reason": why a limit asked for is weaker than asked or missing (absent when all is as asked)}
    """
    limits = limits or {}
    procs = limits.get("maxProcesses")
    memory = limits.get("memoryBytes")
    cpus = limits.get("cpus")
    info = {
        "maxProcesses": None,
        "memoryBytes": None,
        "cpus": None,
        "openFiles": None,
        "tmpfsBytes": None,
        "via": "none",
        "processesVia": None,
        "memoryVia": None,
        "cpusVia": None,
        "cgroups": {},
        "cgroup": None,
    }
    reasons = []
    cpu_reasons = []
    # Whatever was asked: the tmpfs size (pidns.py mounts /dev/shm with it) and the open-files limit.
    size = limits.get("tmpfsBytes") or default_tmpfs_bytes(memory)
    del _lim_tmpfs[:]
    _lim_tmpfs.append(int(size))
    info["tmpfsBytes"] = int(size)
    try:
        info["openFiles"] = _lim_rlimit("RLIMIT_NOFILE", int(limits.get("openFiles") or _LIM_OPEN_FILES))
    except (ImportError, OSError, ValueError) as err:
        reasons.append("cannot set RLIMIT_NOFILE (%s)" % err)
    kid = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in str(kernel_id))[:200] or "kernel"
    wanted = []
    if procs:
        wanted.append("pids")
    if memory:
        wanted.append("memory")
    if cpus:
        wanted.append("cpu")
    if not wanted:
        if reasons:
            info["reason"] = "; ".join(reasons)
        return info
    if not sys.platform.startswith("linux"):
        reasons.append("cgroups exist only on Linux")
    else:
        # cgroup v2: one group with every controller wanted (without cpu when only that one is missing:
        # a tree that delegates pids and memory but not cpu keeps them in cgroup v2).
        v2 = list(wanted)
        base, why = _lim_v2_base(v2)
        cpu_v2why = why
        if base is None and "cpu" in v2 and len(v2) > 1:
            v2.remove("cpu")
            base, why = _lim_v2_base(v2)
        if base is not None:
            values = []
            if procs:
                values.append(("pids.max", str(int(procs)), True))
            if memory:
                values += [("memory.max", str(int(memory)), True), ("memory.swap.max", "0", False)]
            if "cpu" in v2:
                values.append(("cpu.max", "%d %d" % (_lim_cpu_quota(cpus), _LIM_CPU_PERIOD_US), True))
            try:
                path = _lim_make_group(base, kid, values)
                for c in v2:
                    info["cgroups"][c] = path
            except OSError as err:
                why = "cannot set up the cgroup v2 group under %s (%s)" % (base, err.strerror)
        v2why = why
        # cgroup v1: a group per hierarchy, for what cgroup v2 did not take.
        for c in wanted:
            if c in info["cgroups"]:
                continue
            base, why = _lim_v1_base(c)
            if base is None:
                if c == "cpu":
                    cpu_reasons.append("%s (cgroup v2: %s)" % (why, cpu_v2why or v2why))
                else:
                    reasons.append("%s (cgroup v2: %s)" % (why, v2why))
                continue
            if c == "pids":
                values = [("pids.max", str(int(procs)), True)]
            elif c == "memory":
                n = str(int(memory))
                values = [("memory.limit_in_bytes", n, True), ("memory.memsw.limit_in_bytes", n, False)]
            else:
                values = [
                    ("cpu.cfs_period_us", str(_LIM_CPU_PERIOD_US), True),
                    ("cpu.cfs_quota_us", str(_lim_cpu_quota(cpus)), True),
                ]
            try:
                info["cgroups"][c] = _lim_make_group(base, kid, values)
            except OSError as err:
                (cpu_reasons if c == "cpu" else reasons).append(
                    "cannot set up the cgroup v1 %s group under %s (%s)" % (c, base, err.strerror)
                )
        for c in wanted:
            if c in info["cgroups"]:
                mech = "cgroup-v2" if _lim_is_v2(info["cgroups"][c]) else "cgroup-v1"
                if c == "pids":
                    info["maxProcesses"], info["processesVia"] = int(procs), mech
                elif c == "memory":
                    info["memoryBytes"], info["memoryVia"] = int(memory), mech
                else:
                    info["cpus"], info["cpusVia"] = _lim_cpu_quota(cpus) / float(_LIM_CPU_PERIOD_US), mech
    # rlimits for what no cgroup took.
    if procs and info["processesVia"] is None:
        try:
            applied = _lim_rlimit("RLIMIT_NPROC", int(procs))
            info["maxProcesses"], info["processesVia"] = applied, "rlimit"
            if _lim_host_uid() == 0:
                reasons.append("RLIMIT_NPROC is set but not enforced for root (uid 0)")
                info["maxProcesses"] = None
            else:
                reasons.append(
                    "RLIMIT_NPROC counts this user's processes in the kernel's user namespace"
                    if _lim_own_userns()
                    else "RLIMIT_NPROC counts every process of this user, not only the kernel's"
                )
        except (ImportError, OSError, ValueError) as err:
            reasons.append("cannot set RLIMIT_NPROC (%s)" % err)
    if memory and info["memoryVia"] is None:
        try:
            info["memoryBytes"], info["memoryVia"] = _lim_rlimit("RLIMIT_DATA", int(memory)), "rlimit"
            reasons.append("RLIMIT_DATA limits each process on its own, not the kernel and its children together")
        except (ImportError, AttributeError, OSError, ValueError) as err:
            reasons.append("cannot set RLIMIT_DATA (%s)" % err)
    if cpus and info["cpusVia"] is None:
        cpu_reasons.append("no CPU limit without a cpu cgroup (RLIMIT_CPU counts total seconds, not a rate)")
        info["cpusReason"] = "; ".join(cpu_reasons)
        reasons.append(info["cpusReason"])
    vias = set(v for v in (info["processesVia"], info["memoryVia"], info["cpusVia"]) if v)
    info["via"] = vias.pop() if len(vias) == 1 else ("mixed" if vias else "none")
    dirs = sorted(set(info["cgroups"].values()))
    info["cgroup"] = dirs[0] if dirs else None
    if reasons:
        info["reason"] = "; ".join(reasons)
    return info


def _lim_files(path):
    try:
        return set(os.listdir(path))
    except OSError:
        return set()


def _lim_is_v2(path):
    return "cgroup.controllers" in _lim_files(path)


def remove_limit_cgroups(info):
    """Removes the groups apply_limits made (call once the kernel and all it started have ended).
    Returns {dir: None or why it could not be removed}."""
    out = {}
    for path in sorted(set((info or {}).get("cgroups", {}).values())):
        base = os.path.basename(path)
        if not base.startswith(_NBAGENT_CGROUP_PREFIX):
            out[path] = "not a group nbagent made"
            continue
        try:
            os.rmdir(path)
            out[path] = None
        except FileNotFoundError:
            out[path] = None
        except OSError as err:
            out[path] = err.strerror
    return out

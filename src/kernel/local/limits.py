"""Per-kernel resource limits (docs/isolation.md, "Limits").

`apply_limits(limits, kernel_id)` is called once in the process that will start the kernel (pid 1 of
the kernel's PID namespace), before it forks the kernel, while it may still write the host's cgroups:
everything it starts afterwards inherits the limits. For each limit the first mechanism that works is
used:

- cgroup v2 (the unified hierarchy has the controller): a child group `nbagent-<kernel_id>` under this
  process's own group (or next to it, when the own group holds processes and so cannot delegate
  controllers), with pids.max / memory.max;
- cgroup v1 (a hierarchy of its own per controller): a child group `nbagent-<kernel_id>` under this
  process's own group in the `pids` and `memory` hierarchies, with pids.max / memory.limit_in_bytes;
- rlimits: RLIMIT_NPROC (not enforced for uid 0; counted per user and user namespace) and
  RLIMIT_DATA (per process; RLIMIT_AS would count reserved address space, and OpenBLAS, glibc's
  per-thread arenas and thread stacks reserve far more than they use: numpy spins or fails at import
  under an RLIMIT_AS it would never reach in real memory).

The process joins the groups itself (writes "0" to cgroup.procs). The answer is a dict (JSON-able) the
host keeps: it reads how the kernel died from the groups and removes them once the kernel has ended
(`remove_limit_cgroups`, or the host's own code in limits.ts).

Only os and sys at module level: this file may be prepended to the kernel's wrapper.
"""

import os
import sys

_NBAGENT_CGROUP_PREFIX = "nbagent-"


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


def apply_limits(limits, kernel_id):
    """Applies {"maxProcesses": n, "memoryBytes": n} (either may be missing or None) to this process and
    everything it starts from now on. Never raises. Returns:

    {"maxProcesses": n or None, "memoryBytes": n or None,      # the limits in force (None: none)
     "via": "cgroup-v2" | "cgroup-v1" | "rlimit" | "mixed" | "none",
     "processesVia": mechanism or None, "memoryVia": mechanism or None,
     "cgroups": {"pids": dir, "memory": dir},                  # the groups made (remove after the end)
     "cgroup": the first of those dirs or None,
     "reason": why a limit asked for is weaker than asked or missing (absent when all is as asked)}
    """
    limits = limits or {}
    procs = limits.get("maxProcesses")
    memory = limits.get("memoryBytes")
    info = {
        "maxProcesses": None,
        "memoryBytes": None,
        "via": "none",
        "processesVia": None,
        "memoryVia": None,
        "cgroups": {},
        "cgroup": None,
    }
    reasons = []
    kid = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in str(kernel_id))[:200] or "kernel"
    wanted = []
    if procs:
        wanted.append("pids")
    if memory:
        wanted.append("memory")
    if not wanted:
        return info
    if not sys.platform.startswith("linux"):
        reasons.append("cgroups exist only on Linux")
    else:
        # cgroup v2: one group with every controller wanted.
        base, why = _lim_v2_base(wanted)
        if base is not None:
            values = []
            if procs:
                values.append(("pids.max", str(int(procs)), True))
            if memory:
                values += [("memory.max", str(int(memory)), True), ("memory.swap.max", "0", False)]
            try:
                path = _lim_make_group(base, kid, values)
                for c in wanted:
                    info["cgroups"][c] = path
            except OSError as err:
                why = "cannot set up the cgroup v2 group under %s (%s)" % (base, err.strerror)
        if not info["cgroups"]:
            v2why = why
            # cgroup v1: a group per hierarchy.
            for c in wanted:
                base, why = _lim_v1_base(c)
                if base is None:
                    reasons.append("%s (cgroup v2: %s)" % (why, v2why))
                    continue
                if c == "pids":
                    values = [("pids.max", str(int(procs)), True)]
                else:
                    n = str(int(memory))
                    values = [("memory.limit_in_bytes", n, True), ("memory.memsw.limit_in_bytes", n, False)]
                try:
                    info["cgroups"][c] = _lim_make_group(base, kid, values)
                except OSError as err:
                    reasons.append("cannot set up the cgroup v1 %s group under %s (%s)" % (c, base, err.strerror))
        for c in wanted:
            if c in info["cgroups"]:
                mech = "cgroup-v2" if _lim_is_v2(info["cgroups"][c]) else "cgroup-v1"
                if c == "pids":
                    info["maxProcesses"], info["processesVia"] = int(procs), mech
                else:
                    info["memoryBytes"], info["memoryVia"] = int(memory), mech
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
    vias = set(v for v in (info["processesVia"], info["memoryVia"]) if v)
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

// The seccomp filter (docs/isolation.md, "R5. The seccomp filter"): the docs' table lists exactly the
// system calls of pidns.py's table, and a real process under the real filter (pidns.lock_down, in a
// child Python process) gets each row's answer — while what a kernel needs keeps working.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { TEST_PYTHON } from "../python.js";

const LOCAL = fileURLToPath(new URL("../../src/kernel/local/", import.meta.url));
const DOCS = fileURLToPath(new URL("../../docs/isolation.md", import.meta.url));

/** Runs `body` after limits.py and pidns.py are loaded (as the kernel's wrapper loads them). */
function python(body: string): string {
  const program = `
import json, os
ns = {"__name__": "pidns"}
for name in ("limits.py", "pidns.py"):
    path = os.path.join(${JSON.stringify(LOCAL)}, name)
    exec(compile(open(path).read(), path, "exec"), ns)
${body}
`;
  return execFileSync(TEST_PYTHON, ["-c", program], { encoding: "utf8" });
}

test("the docs' seccomp table names every system call of pidns.py's table, and no other", () => {
  const table = JSON.parse(
    python(
      `print(json.dumps([r[0] for r in ns["SECCOMP_DENIED"]] + [ns[k][0] for k in ("SECCOMP_CLONE", "SECCOMP_CLONE3", "SECCOMP_PERSONALITY", "SECCOMP_SOCKET")]))`,
    ),
  ) as string[];
  const docs = readFileSync(DOCS, "utf8");
  const section = docs.slice(docs.indexOf("### R5. The seccomp filter"), docs.indexOf("### R6."));
  const rows = section.split("\n").filter((l) => /^\| `/.test(l));
  const named = new Set(
    rows.flatMap((r) => [...r.split("|")[1].matchAll(/`([a-z_0-9]+)/g)].map((m) => m[1])),
  );
  assert.deepEqual(
    [...new Set(table)].filter((n) => !named.has(n)),
    [],
    "in pidns.py, not in the docs",
  );
  assert.deepEqual(
    [...named].filter((n) => !table.includes(n)),
    [],
    "in the docs, not in pidns.py",
  );
});

test("under the filter each refused call fails with its errno; what a kernel needs still works", (t) => {
  if (process.platform !== "linux") return t.skip("seccomp is Linux's");
  const out = JSON.parse(
    python(`
import ctypes, platform, socket, errno
libc = ctypes.CDLL(None, use_errno=True)
problem = ns["lock_down"](libc)
if problem:
    print(json.dumps({"problem": problem})); raise SystemExit
column = 1 if platform.machine() == "x86_64" else 2
def call(nr, *args):
    ctypes.set_errno(0)
    r = libc.syscall(nr, *[ctypes.c_long(a) for a in args])
    return 0 if r >= 0 else ctypes.get_errno()
rows = {}
for row in ns["SECCOMP_DENIED"]:
    if row[column] is None or row[0] in ("reboot",):
        continue
    rows[row[0]] = [call(row[column], 0, 0, 0, 0, 0, 0), row[3]]
def sock(*args):
    try:
        socket.socket(*args).close(); return 0
    except OSError as e:
        return e.errno
nr = {r[0]: r[column] for r in ns["SECCOMP_DENIED"] if r[column] is not None}
me = os.getpid()
exact = {
    "ptrace(TRACEME)": call(nr["ptrace"], 0, 0, 0, 0),
    "kcmp(self, self)": call(nr["kcmp"], me, me, 0, 0, 0),
    "pidfd_open(self)": call(nr["pidfd_open"], me, 0),
    "io_uring_setup": call(nr["io_uring_setup"], 1, 0),
    "personality(READ_IMPLIES_EXEC)": call(ns["SECCOMP_PERSONALITY"][column], 0x0400000),
    "netlink audit": sock(16, socket.SOCK_RAW, 9),
    "netlink uevent": sock(16, socket.SOCK_RAW, 15),
    "vsock": sock(40, socket.SOCK_STREAM, 0),
    "packet": sock(17, socket.SOCK_RAW, 0),
    "clone3": call(ns["SECCOMP_CLONE3"][column], 0, 0),
}
works = {
    "personality(query)": call(ns["SECCOMP_PERSONALITY"][column], 0xFFFFFFFF),
    "netlink route": sock(16, socket.SOCK_RAW, 0),
    "tcp": sock(socket.AF_INET, socket.SOCK_STREAM, 0),
    "tcp6": sock(socket.AF_INET6, socket.SOCK_STREAM, 0) if socket.has_ipv6 else 0,
    "unix": sock(socket.AF_UNIX, socket.SOCK_STREAM, 0),
    "getaddrinfo": 0 if socket.getaddrinfo("localhost", 80) else 1,
}
pid = os.fork()
if pid == 0:
    os._exit(7)
works["fork"] = 0 if os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 7 else 1
print(json.dumps({"rows": rows, "exact": exact, "works": works}))
`),
  );
  assert.equal(out.problem, undefined, out.problem);
  for (const [name, [got, want]] of Object.entries(out.rows as Record<string, [number, number]>)) {
    // Calls that need a capability may fail with EPERM before the filter is asked; none may succeed.
    assert.ok(got === want || got === 1, `${name}: errno ${got}, the table says ${want}`);
  }
  assert.deepEqual(out.exact, {
    "ptrace(TRACEME)": 1,
    "kcmp(self, self)": 1,
    "pidfd_open(self)": 38,
    io_uring_setup: 1,
    "personality(READ_IMPLIES_EXEC)": 1,
    "netlink audit": 97,
    "netlink uevent": 97,
    vsock: 97,
    packet: 97,
    clone3: 38,
  });
  assert.deepEqual(out.works, {
    "personality(query)": 0,
    "netlink route": 0,
    tcp: 0,
    tcp6: 0,
    unix: 0,
    getaddrinfo: 0,
    fork: 0,
  });
});

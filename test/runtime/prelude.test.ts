import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import {
  createRuntime,
  Deadline,
  preludeHelpers,
  preludeSource,
  type Runtime,
} from "../../src/runtime/index.js";
import { STREAM_FLUSH_CHARS } from "../../src/runtime/init.js";
import { backendCases } from "../backends.js";
import { testSettings } from "../settings.js";

const root = mkdtempSync(join(tmpdir(), "nbagent-prelude-"));
after(() => rmSync(root, { recursive: true, force: true }));

test("helper docs are read from prelude.py itself", () => {
  const names = preludeHelpers().map((h) => h.name);
  assert.deepEqual(names, [
    "run",
    "read",
    "write",
    "append",
    "find",
    "grep",
    "tree",
    "diff",
    "env",
    "status",
  ]);
  for (const h of preludeHelpers()) {
    assert.ok(h.doc.length > 10 && !h.doc.includes("\n"), h.name);
    assert.ok(preludeSource().includes(h.doc));
  }
});

for (const backend of backendCases())
  describe(backend.name, () => {
    const cwd = mkdtempSync(join(root, `work-${backend.name}-`));
    let rt: Runtime;
    before(async () => {
      rt = createRuntime({
        settings: testSettings(),
        stateRoot: join(root, "state"),
        backend: await backend.create(),
      });
    });
    after(async () => {
      await rt.dispose();
      await backend.dispose();
    });

    async function py(code: string, seconds = 60) {
      return rt.withSession(
        { sessionId: "prelude", cwd },
        { deadline: new Deadline(seconds) },
        async (lease) => {
          let text = "";
          const statuses: unknown[] = [];
          const r = await lease.execute(code, {
            onChunk: (t) => (text += t),
            onStatusEvent: (e) => statuses.push(e),
          });
          return { ...r, text, statuses };
        },
      );
    }

    test("run returns stdout, stderr and exit code", async () => {
      const r = await py(
        "r = run('echo out; echo err >&2; exit 3')\nprint(repr(r.stdout), repr(r.stderr), r.code, r.ok)",
      );
      assert.equal(r.text, "'out\\n' 'err\\n' 3 False\n");
      const cwdRun = await py(
        "print(run('pwd', cwd='/').stdout.strip(), run(['echo', 'a b']).stdout.strip())",
      );
      assert.equal(cwdRun.text, "/ a b\n");
    });

    test("run kills the whole process group on timeout", async () => {
      const r = await py(
        [
          "r = run('sleep 60 & echo $!; wait', timeout=0.5)",
          "pid = int(r.stdout.split()[0])",
          "import os, time",
          "def alive(p):",
          "    try:",
          "        return open(f'/proc/{p}/stat').read().split()[2] != 'Z'",
          "    except FileNotFoundError:",
          "        return False",
          "end = time.time() + 5",
          "while alive(pid) and time.time() < end: time.sleep(0.02)",
          "print(r.timed_out, r.code, alive(pid))",
        ].join("\n"),
      );
      assert.equal(r.text, "True -9 False\n");
    });

    test("read, write, append, find, grep, tree, diff, env", async () => {
      const r = await py(
        [
          "write('sub/a.txt', 'one\\ntwo\\n')",
          "append('sub/a.txt', 'three\\n')",
          "write('b.py', 'import os\\n')",
          "print(repr(str(read('sub/a.txt'))), repr(str(read('sub/a.txt', offset=2, limit=1))))",
          "print(sorted(find('*.txt')), find('*.py'))",
          "print(grep('tw', '.'))",
          "print(tree('.'))",
          "print(diff('sub/a.txt', 'b.py').splitlines()[:2])",
          "env('NB_T', 'v'); print(env('NB_T'), 'PATH' in env())",
        ].join("\n"),
      );
      assert.equal(r.status, "ok", r.text);
      const lines = r.text.split("\n");
      assert.equal(lines[0], "'one\\ntwo\\nthree\\n' 'two\\n'");
      assert.equal(lines[1], "['sub/a.txt'] ['b.py']");
      assert.equal(lines[2], "['./sub/a.txt:2: two']");
      assert.deepEqual(lines.slice(3, 7), ["./", "  b.py", "  sub/", "    a.txt"]);
      assert.equal(lines[7], "['--- sub/a.txt', '+++ b.py']");
      assert.equal(lines[8], "v True");
      assert.equal(readFileSync(join(cwd, "sub/a.txt"), "utf8"), "one\ntwo\nthree\n");
    });

    test("status emits a structured status event and no text", async () => {
      const r = await py("status('fetch', url='http://x', n=2)");
      assert.equal(r.text, "");
      assert.deepEqual(r.statuses, [{ op: "fetch", url: "http://x", n: 2 }]);
    });

    test("stream output reaches the host in bounded messages, complete and in order", async () => {
      const sizes: number[] = [];
      const r = await rt.withSession({ sessionId: "prelude", cwd }, { deadline: new Deadline(60) }, (lease) =>
        lease.execute(
          "import sys\nsys.stdout.write('a' * (3 * 1024 * 1024))\nfor i in range(20000): print('b' * 99)",
          {
            keepText: false,
            onChunk: (t) => sizes.push(t.length),
          },
        ),
      );
      assert.equal(r.status, "ok");
      assert.equal(r.text, "");
      assert.equal(
        sizes.reduce((a, b) => a + b, 0),
        3 * 1024 * 1024 + 20000 * 100,
      );
      assert.ok(Math.max(...sizes) <= 2 * STREAM_FLUSH_CHARS, `largest message ${Math.max(...sizes)}`);
    });

    test("a cell ends without ipykernel's sleep and empty flushes, and each cell's output stays its own", async () => {
      // docs/runs.md "Between cells": where ipykernel has these attributes, they are changed.
      const setup = await py(
        [
          "import io, sys",
          "k = get_ipython().kernel",
          "print(getattr(k, '_execute_sleep', 0.0))",
          "def quick(s):",
          "    has = isinstance(getattr(s, '_buffer', None), io.StringIO) and isinstance(getattr(s, '_flush_pending', None), bool)",
          "    return getattr(s, '_nbagent_quick_flush', False) == has",
          "print(quick(sys.stdout), quick(sys.stderr))",
        ].join("\n"),
      );
      assert.equal(setup.text, "0.0\nTrue True\n");
      // Output written last, unterminated, from the cell and from a thread it joins, lands in its cell.
      for (let i = 0; i < 30; i++) {
        const r = await py(
          `import sys, threading\nt = threading.Thread(target=lambda: sys.stderr.write('e${i}'))\nt.start(); t.join()\nprint('o${i}', end='')`,
        );
        assert.equal(r.status, "ok");
        // stdout and stderr are two streams: either may be flushed first at the cell's end.
        assert.ok([`e${i}o${i}`, `o${i}e${i}`].includes(r.text), `cell ${i}: ${JSON.stringify(r.text)}`);
      }
    });

    test("a host that reads slower than the kernel prints loses nothing (IOPub backpressure, no drops)", async () => {
      let received = 0;
      let messages = 0;
      const r = await rt.withSession({ sessionId: "prelude", cwd }, { deadline: new Deadline(90) }, (lease) =>
        lease.execute(
          "import sys\nb = 'x' * 4095 + '\\n'\nfor _ in range(6000):\n    sys.stdout.write(b); sys.stdout.flush()",
          {
            keepText: false,
            onChunk: (t) => {
              received += t.length;
              messages++;
              // a host that stalls: its event loop is blocked for 3 s on the first message while the kernel
              // prints everything (without backpressure the kernel's publisher would drop messages)
              if (messages === 1) {
                const until = performance.now() + 3000;
                while (performance.now() < until);
              }
            },
          },
        ),
      );
      assert.equal(r.status, "ok");
      assert.equal(received, 6000 * 4096, `${messages} messages`);
    });
  });

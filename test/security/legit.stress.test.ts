/**
 * What the defences against the attacks (attacks.test.ts, docs/isolation.md) must leave working,
 * as root and as nobody, with and without the sandbox: the cwd is writable, numpy imports, `!ls`
 * and subprocess run, /dev/null and /dev/urandom work, a long output's artifact is readable by the
 * host, and an interrupt stops a running cell while the kernel keeps its state.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { assertInterruptWorks, asWho, newPlace, PRINCIPALS, setUp, withHost } from "./harness.js";

setUp();

const LEGIT = [
  "import numpy, os, subprocess",
  "print('numpy', numpy.arange(4).sum())",
  "open('written.txt', 'w').write('cwd ok')",
  "print('cwd', open('written.txt').read())",
  "print('sub', subprocess.run(['echo', 'hi'], capture_output=True, text=True).stdout.strip())",
  "ls = get_ipython().getoutput('ls')",
  "print('ls', 'written.txt' in ls)",
  "with open('/dev/null', 'w') as f: f.write('x')",
  "print('urandom', len(open('/dev/urandom', 'rb').read(16)))",
].join("\n");

for (const who of PRINCIPALS) {
  for (const sandbox of [[], ["--sandbox"], ["--sandbox=net-off"]]) {
    const name = sandbox[0] ?? "no sandbox";
    describe(`legitimate paths ${asWho(who)}, ${name}`, { concurrency: false }, () => {
      test("numpy, a writable cwd, subprocess and !ls, /dev/null and /dev/urandom work", async () => {
        const place = newPlace(who);
        await withHost(place, sandbox, {}, async (host) => {
          const r = await host.python(LEGIT);
          assert.equal(r.isError, false, r.text);
          for (const line of ["numpy 6", "cwd cwd ok", "sub hi", "ls True", "urandom 16"])
            assert.match(r.text, new RegExp(`^${line}$`, "m"), r.text);
        });
        assert.equal(readFileSync(join(place.cwd, "written.txt"), "utf8"), "cwd ok");
      });

      test("a long output is kept as an artifact the host reads back whole", async () => {
        await withHost(newPlace(who), sandbox, {}, async (host) => {
          const r = await host.python("for i in range(20000): print('line', i)");
          const id = /artifact:\/\/([0-9a-z]+-[0-9a-f]{10})/.exec(r.text)?.[1];
          assert.ok(id, r.text);
          const page = await host.call("artifact", { id, offset: 19999, limit: 2 });
          assert.equal(page.isError, false, page.text);
          assert.match(page.text, /^19999\tline 19998$/m, page.text);
          assert.match(page.text, /^20000\tline 19999$/m, page.text);
        });
      });

      test("an interrupt stops a running cell with KeyboardInterrupt; the kernel keeps its state", async () => {
        await withHost(newPlace(who), sandbox, {}, assertInterruptWorks);
      });
    });
  }
}

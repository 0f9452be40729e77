/**
 * src/sys/confined-path.ts on real files: which paths are inside the roots, which link is named as
 * leading out, and that opens check the descriptor (docs/isolation.md, "The notebook and artifact
 * tools under --sandbox"). The attacks from a real sandboxed kernel: test/security/planted-links.stress.test.ts.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import {
  constants,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import {
  checkWithin,
  isWithin,
  OutsideRootsError,
  openDirWithin,
  openFileWithin,
  pinnedPath,
  traceLinks,
} from "../../src/sys/confined-path.js";

const base = realpathSync(mkdtempSync(join(tmpdir(), "confined-")));
after(() => rmSync(base, { recursive: true, force: true }));
const root = join(base, "root");
const out = join(base, "out");
mkdirSync(join(root, "d"), { recursive: true });
mkdirSync(out);
writeFileSync(join(root, "d", "in.txt"), "inside");
writeFileSync(join(out, "secret.txt"), "outside");
symlinkSync(join(out, "secret.txt"), join(root, "link.txt"));
symlinkSync(out, join(root, "sub"));
symlinkSync("d/in.txt", join(root, "inlink.txt"));
execFileSync("mkfifo", [join(out, "fifo")]);
symlinkSync(join(out, "fifo"), join(root, "fifo"));
const roots = [root];

async function refusal(p: Promise<unknown>): Promise<OutsideRootsError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof OutsideRootsError) return e;
    throw e;
  }
  assert.fail("not refused");
}

describe("confined paths", () => {
  test("isWithin compares whole components", () => {
    assert.equal(isWithin("/a/b", ["/a/b"]), true);
    assert.equal(isWithin("/a/b/c", ["/a/b"]), true);
    assert.equal(isWithin("/a/bc", ["/a/b"]), false);
    assert.equal(isWithin("/a", ["/a/b"]), false);
    assert.equal(isWithin("/x", ["/", "/y"]), true);
  });

  test("traceLinks names the link that leads out, and where to", async () => {
    assert.deepEqual(await traceLinks(join(root, "sub", "secret.txt"), roots), {
      real: join(out, "secret.txt"),
      link: { link: join(root, "sub"), target: out },
    });
    assert.deepEqual(await traceLinks(join(root, "inlink.txt"), roots), {
      real: join(root, "d", "in.txt"),
      link: { link: join(root, "inlink.txt"), target: "d/in.txt" },
    });
    assert.deepEqual(await traceLinks(join(root, "sub", "missing", "x"), roots), {
      real: join(out, "missing", "x"),
      link: { link: join(root, "sub"), target: out },
    });
  });

  test("openFileWithin reads inside, through inside links; refuses links out, a FIFO out unopened", async () => {
    for (const p of ["d/in.txt", "inlink.txt"]) {
      const { handle, real } = await openFileWithin(join(root, p), roots, constants.O_RDONLY);
      assert.equal(real, join(root, "d", "in.txt"));
      assert.equal(await handle.readFile("utf8"), "inside");
      await handle.close();
    }
    for (const p of ["link.txt", "sub/secret.txt", "fifo"]) {
      const e = await refusal(openFileWithin(join(root, p), roots, constants.O_RDONLY));
      assert.equal(e.outside.path, join(root, p));
      assert.ok(!isWithin(e.outside.real, roots), e.message);
    }
    await assert.rejects(openFileWithin(join(root, "nope"), roots, constants.O_RDONLY), { code: "ENOENT" });
  });

  test("openDirWithin pins a folder inside; a folder link out is refused naming the file asked for", async () => {
    const { handle, real } = await openDirWithin(join(root, "d"), roots);
    assert.equal(real, join(root, "d"));
    assert.equal(readFileSync(join(pinnedPath(handle), "in.txt"), "utf8"), "inside");
    await handle.close();
    const e = await refusal(openDirWithin(join(root, "sub"), roots, "new.txt"));
    assert.equal(e.outside.path, join(root, "sub", "new.txt"));
    assert.equal(e.outside.real, join(out, "new.txt"));
    assert.deepEqual(e.outside.link, { link: join(root, "sub"), target: out });
  });

  test("checkWithin: a path with no link outside the roots is refused too", async () => {
    await checkWithin(join(root, "d", "new.txt"), roots);
    const e = await refusal(checkWithin(join(out, "x.txt"), roots));
    assert.equal(e.outside.link, undefined);
  });
});

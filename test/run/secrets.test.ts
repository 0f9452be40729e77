/**
 * What the model is told about withheld secrets and about a call that waited for a kernel slot
 * (docs/secrets.md, docs/kernel-state.md), on real kernels through the tool objects: the withheld
 * names once per session (never a value, which the kernel does not have either), NBAGENT_ALLOW_ENV
 * letting one through, and a fifth call timing out while four busy kernels hold every slot.
 */
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { realpath } from "node:fs/promises";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { filterSecrets } from "../../src/runtime/env.js";
import { createToolbox, type Toolbox } from "../../src/tools/index.js";
import { testSettings } from "../settings.js";
import { type Json, resultText, tempDir, writeNb } from "./helpers.js";

const toolboxes: Toolbox[] = [];
after(async () => {
  await Promise.all(toolboxes.map((t) => t.dispose()));
});

/** The host env this machine has, minus what it would withhold itself, plus the test's secrets. */
const HOST_ENV = {
  ...filterSecrets(process.env),
  API_KEY: "sekrit-api-key",
  POSTGRES_URL: "postgres://app:sekrit-pw@db.example/app",
  HTTPS_PROXY: "http://me:sekrit-proxy@proxy.example:3128",
  KAGGLE_KEY: "allowed-on-purpose",
  NBAGENT_TEST_PLAIN: "visible",
  NBAGENT_ALLOW_ENV: "KAGGLE_*",
};

const NOTE = (whose: string) =>
  `Note: These host environment variables look like secrets and were not passed to ${whose} (os.environ does not have them): API_KEY, HTTPS_PROXY, POSTGRES_URL. To let one through, the user must restart nbagent with NBAGENT_ALLOW_ENV=NAME[,NAME] in its environment.`;

function toolbox(
  cwd: string,
  runtime: Parameters<typeof createToolbox>[0]["runtime"] = {},
  hostEnv: Record<string, string> = HOST_ENV,
) {
  const t = createToolbox({
    settings: testSettings(hostEnv),
    cwd,
    runtime: { stateRoot: join(cwd, ".state"), ...runtime },
  });
  toolboxes.push(t);
  const byName = (name: string) => t.tools.find((x) => x.name === name)!;
  return {
    t,
    py: (params: Json, onUpdate?: (u: Json) => void) =>
      byName("python").execute("t", params, undefined, onUpdate) as Promise<Json>,
    nb: (params: Json, onUpdate?: (u: Json) => void) =>
      byName("notebook").execute("t", params, undefined, onUpdate) as Promise<Json>,
  };
}

const ENV_PROBE = [
  "import os, json",
  "print(json.dumps({k: os.environ.get(k) for k in ['API_KEY', 'POSTGRES_URL', 'HTTPS_PROXY', 'KAGGLE_KEY', 'NBAGENT_TEST_PLAIN']}))",
  "print('leak' if any('sekrit' in v for v in os.environ.values()) or b'sekrit' in open('/proc/self/environ', 'rb').read() else 'no leak')",
].join("\n");

const PROBED = `{"API_KEY": null, "POSTGRES_URL": null, "HTTPS_PROXY": null, "KAGGLE_KEY": "allowed-on-purpose", "NBAGENT_TEST_PLAIN": "visible"}\nno leak`;

describe("secrets and slots, as the model reads them", { concurrency: true }, () => {
  test("python: the first result names the withheld variables (no value); later calls and a reset do not repeat it", async () => {
    const dir = await tempDir();
    const { py } = toolbox(dir);
    const first = await py({ cells: [{ code: ENV_PROBE }] });
    assert.equal(resultText(first), `${NOTE("this session's kernel")}\n${PROBED}`);
    assert.deepEqual(first.details.sessionStart, { withheldEnv: ["API_KEY", "HTTPS_PROXY", "POSTGRES_URL"] });
    assert.doesNotMatch(JSON.stringify(first), /sekrit/);
    assert.equal(resultText(await py({ cells: [{ code: "print('again')" }] })), "again");
    // A reset keeps the session: its kernel starts over with the same environment, said already.
    assert.equal(resultText(await py({ cells: [{ code: ENV_PROBE }], reset: true })), PROBED);
    // Another session is another kernel: told once there too.
    const other = await py({ cells: [{ code: "print(1)" }], session: "other" });
    assert.equal(resultText(other), `${NOTE("this session's kernel")}\n1`);
  });

  test("python: a session replaced after the sweep says it again, after the replacement note", async () => {
    const dir = await tempDir();
    const { t, py } = toolbox(dir, { sweepIntervalMs: 3_600_000 });
    await py({ cells: [{ code: "x = 1" }] });
    t.runtime.sessions.sweep(Date.now() + 6 * 60_000);
    const lines = resultText(await py({ cells: [{ code: "print('fresh')" }] })).split("\n");
    assert.match(lines[0], /^Note: This session's kernel was shut down at /);
    assert.equal(lines[1], NOTE("this session's kernel"));
    assert.equal(lines[2], "fresh");
  });

  test("python per-call: every call is a new kernel, so every result says it", async () => {
    const dir = await tempDir();
    const { py } = toolbox(dir);
    for (let i = 0; i < 2; i++) {
      const text = resultText(await py({ cells: [{ code: ENV_PROBE }], mode: "per-call" }));
      assert.equal(text, `${NOTE("this session's kernel")}\n${PROBED}`);
    }
  });

  test("nothing withheld: no note", async () => {
    const dir = await tempDir();
    const { py } = toolbox(dir, {}, { ...HOST_ENV, NBAGENT_ALLOW_ENV: "*" });
    const r = await py({ cells: [{ code: "import os\nprint(os.environ['API_KEY'])" }] });
    assert.equal(resultText(r), "sekrit-api-key");
    assert.deepEqual(r.details.sessionStart, { withheldEnv: [] });
  });

  test("notebook: the first run of its kernel names the withheld variables; the next run does not", async () => {
    const dir = await tempDir();
    const { nb, py } = toolbox(dir);
    await writeNb(join(dir, "n.ipynb"), [["code", ENV_PROBE]]);
    const first = resultText(await nb({ action: "run", notebook_path: "n.ipynb" }));
    const lines = first.split("\n");
    assert.match(lines[0], /^Ran 1 of 1 code cell selected in n\.ipynb/);
    assert.equal(lines[1], NOTE("the notebook's kernel"));
    assert.match(
      first,
      /"API_KEY": null, "POSTGRES_URL": null, "HTTPS_PROXY": null, "KAGGLE_KEY": "allowed-on-purpose"/,
    );
    assert.match(first, /no leak/);
    assert.doesNotMatch(first, /sekrit/);
    assert.doesNotMatch(resultText(await nb({ action: "run", notebook_path: "n.ipynb" })), /Note:/);
    // python with notebook_path shares that kernel: already said.
    assert.equal(resultText(await py({ notebook_path: "n.ipynb", cells: [{ code: "print(2)" }] })), "2");
  });

  test("a fifth call that times out waiting for a kernel slot says so and names the four busy kernels", async () => {
    const dir = await realpath(await tempDir());
    const { py, nb } = toolbox(dir);
    const release = join(dir, "release");
    const hold = [
      "import os, time",
      "print('holding', flush=True)",
      `while not os.path.exists(${JSON.stringify(release)}): time.sleep(0.05)`,
    ].join("\n");
    await writeNb(join(dir, "busy.ipynb"), [["code", hold]]);
    /** Starts a call and resolves `held` once its cell has printed (it holds its slot from then on). */
    const start = (call: (onUpdate: (u: Json) => void) => Promise<Json>) => {
      let holding!: () => void;
      const held = new Promise<void>((resolve) => {
        holding = resolve;
      });
      const done = call((u) => {
        if (/^holding$/m.test(resultText(u))) holding(); // its output line, not its code
      });
      return { held, done };
    };
    const calls: ((u: (x: Json) => void) => Promise<Json>)[] = [
      (u) => py({ cells: [{ code: hold }], session: "a", timeout: 600 }, u),
      (u) => py({ cells: [{ code: hold }], session: "b", timeout: 600 }, u),
      (u) => nb({ action: "run", notebook_path: "busy.ipynb", timeout: 600 }, u),
      (u) => py({ cells: [{ code: hold }], session: "c", timeout: 600 }, u),
    ];
    const busy: ReturnType<typeof start>[] = [];
    try {
      // One at a time, so the slots' order (least recently used first) is the start order.
      for (const call of calls) {
        busy.push(start(call));
        await Promise.race([busy[busy.length - 1].held, busy[busy.length - 1].done]);
      }
      const r = await py({
        cells: [{ code: "print('never')" }, { code: "print('never')" }],
        session: "e",
        timeout: 1,
      });
      assert.equal(r.isError, true);
      assert.equal(
        resultText(r),
        `(no output)\nCell 1 did not run: the call's timeout of 1 second ran out while it waited for a free kernel slot (at most 4 kernels are kept, python sessions and notebook kernels together, and all were busy with other calls: python session "a" in ${dir}; python session "b" in ${dir}; the kernel of ${join(dir, "busy.ipynb")}; python session "c" in ${dir}). Nothing ran; call again when one of them has finished, or with a larger timeout.\nCell 2 did not run.`,
      );
      assert.deepEqual(r.details.cells[0].abort, {
        kind: "timeout",
        seconds: 1,
        beforeStart: true,
        slot: {
          maxSessions: 4,
          holders: [
            { kind: "python", session: "a", cwd: dir },
            { kind: "python", session: "b", cwd: dir },
            { kind: "notebook", path: join(dir, "busy.ipynb") },
            { kind: "python", session: "c", cwd: dir },
          ],
        },
      });
    } finally {
      writeFileSync(release, "");
      await Promise.all(busy.map((b) => b.done));
    }
  });
});

/**
 * A gateway whose Python kernel is not called python3 (Enterprise Gateway's python_kubernetes):
 * NBAGENT_KERNEL names it for the python tool, and a notebook that names no kernelspec, or a Python
 * one the server lacks, runs with it (docs/deploying.md "Kernelspec names"). The server's kernelspec
 * sets a variable only its kernels have, so the result shows which kernelspec ran.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { batch, readNb, resultText, writeNb } from "../run/helpers.js";
import { type JupyterServerHandle, SERVER_PYTHON, startJupyterServer } from "./helpers.js";

const dir = mkdtempSync(join(tmpdir(), "nbagent-kernel-name-"));
let server: JupyterServerHandle;

before(async () => {
  server = await startJupyterServer({
    kernelspecs: {
      python_cluster: {
        argv: [SERVER_PYTHON, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        display_name: "Python (cluster)",
        language: "python",
        env: { WHICH_SPEC: "python_cluster" },
      },
      // A kernel whose pod takes its time: 8 s before ipykernel starts.
      python_slow_pod: {
        argv: [
          SERVER_PYTHON,
          "-c",
          "import time; time.sleep(8)\nfrom ipykernel.kernelapp import launch_new_instance; launch_new_instance()",
          "-f",
          "{connection_file}",
        ],
        display_name: "Python (slow pod)",
        language: "python",
      },
    },
  });
});

after(async () => {
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

test("NBAGENT_KERNEL: the python tool and a notebook without a usable kernelspec run with it", async () => {
  // Made on another machine: its kernelspec is not on the server.
  await writeNb(join(dir, "plain.ipynb"), [["code", "import os; print(os.environ.get('WHICH_SPEC'))"]], {
    name: "conda-env-old-py",
    display_name: "Python [conda env:old]",
    language: "python",
  });
  const env = {
    NBAGENT_GATEWAY_URL: server.url,
    NBAGENT_GATEWAY_TOKEN: server.token,
    NBAGENT_KERNEL: "python_cluster",
  };
  const { results, stderr } = await batch(
    dir,
    [
      { tool: "python", params: { cells: [{ code: "import os; print(os.environ.get('WHICH_SPEC'))" }] } },
      { tool: "notebook", params: { action: "run", notebook_path: "plain.ipynb" } },
    ],
    env,
  );
  assert.equal(results.length, 2, stderr);
  assert.equal(resultText(results[0]), "python_cluster");
  const ran = resultText(results[1]);
  assert.match(
    ran,
    /The notebook's kernelspec "conda-env-old-py" is not installed here; it runs with python_cluster \(the notebook is Python\)\. Installed: [^\n]*python_cluster/,
  );
  assert.match(ran, /\npython_cluster$/);
  const nb = await readNb(join(dir, "plain.ipynb"));
  assert.equal([nb.cells[0].outputs[0].text].flat().join(""), "python_cluster\n");
});

test("NBAGENT_START_SECONDS bounds a kernel's start on a gateway: a shorter one than the kernel needs is an Error: naming it", async () => {
  const { results, stderr } = await batch(dir, [{ tool: "python", params: { cells: [{ code: "1" }] } }], {
    NBAGENT_GATEWAY_URL: server.url,
    NBAGENT_GATEWAY_TOKEN: server.token,
    NBAGENT_KERNEL: "python_slow_pod",
    NBAGENT_START_SECONDS: "2",
  });
  assert.equal(results.length, 1, stderr);
  const text = resultText(results[0]);
  assert.match(text, /^Error: could not start the Python kernel: .* within 2000 ms$/, text);
});

test("a kernelspec the user named that the server lacks: the Error lists the server's and says only the user can change it", async () => {
  const { results, stderr } = await batch(dir, [{ tool: "python", params: { cells: [{ code: "1" }] } }], {
    NBAGENT_GATEWAY_URL: server.url,
    NBAGENT_GATEWAY_TOKEN: server.token,
    NBAGENT_KERNEL: "python_gpu",
  });
  assert.equal(results.length, 1, stderr);
  assert.match(
    resultText(results[0]),
    /^Error: could not start the Python kernel: the gateway at \S+ has no kernelspec "python_gpu" \(it has: [^)]*python_cluster[^)]*\)\. The python tool starts the kernelspec "python_gpu", which is set where nbagent runs \(NBAGENT_KERNEL, or the host's kernelName option; default python3\): a call cannot choose another\.$/,
  );
});

/**
 * Widget state saved with the notebook, as nbclient's store_widget_state saves it
 * (docs/runs.md, "Widget state"):
 * - ipywidgets' wire protocol 2 (ipywidgets 7 and 8): cells that open `jupyter.widget` comms and send
 *   updates with a binary buffer, as ipywidgets does; nbclient's file of the same notebook is the
 *   oracle (Debian ships ipywidgets 6 only, which nbclient cannot run: it expects protocol 2);
 * - real ipywidgets (Debian's 6, protocol 1): sliders, a box, a value changed in a later cell, a
 *   closed widget; the oracle is ipywidgets' own `Widget.get_manager_state()` in the same kernel;
 * - the notebook tool: a second run of one cell keeps the widgets the first run made (same kernel).
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { copyFile, mkdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, it } from "node:test";
import {
  batch,
  type Json,
  NBCLIENT_RUN,
  nbagent,
  PYTHON,
  perTestDirs,
  python,
  readNb,
  resultText,
  validate,
  writeNb,
} from "./helpers.js";

const MIME = "application/vnd.jupyter.widget-state+json";

const SKIP_IPYWIDGETS = (() => {
  try {
    execFileSync(PYTHON, ["-c", "import ipywidgets"], { stdio: "ignore" });
    return false;
  } catch {
    return process.env.CI ? false : "ipywidgets is not installed (bash scripts/setup.sh test installs it)";
  }
})();

/** Cells speaking ipywidgets' protocol 2 over ipykernel's Comm, as ipywidgets 7/8 do. */
const PROTOCOL_2 = [
  [
    "from ipykernel.comm import Comm",
    "def model(name, **state):",
    "    return {'_model_name': name, '_model_module': '@jupyter-widgets/controls', '_model_module_version': '1.5.0', **state}",
    "slider = Comm(target_name='jupyter.widget', data={'state': model('IntSliderModel', value=3, description='n'), 'buffer_paths': []}, metadata={'version': '2.0.0'})",
  ].join("\n"),
  [
    "slider.send({'method': 'update', 'state': {'value': 7}, 'buffer_paths': []})",
    "image = Comm(target_name='jupyter.widget', data={'state': model('ImageModel', format='png'), 'buffer_paths': []}, metadata={'version': '2.0.0'})",
    "image.send({'method': 'update', 'state': {'width': '10'}, 'buffer_paths': [['value']]}, buffers=[b'\\x89PNG\\x00\\x01'])",
    "print('widgets up')",
  ].join("\n"),
];

/** The saved widgets without their (random) model ids, in model_name order. */
function byName(nb: Json): Json[] {
  const state = nb.metadata.widgets?.[MIME]?.state ?? {};
  return Object.values(state).sort((a: Json, b: Json) => String(a.model_name).localeCompare(b.model_name));
}

describe("widget state", { concurrency: true }, () => {
  const dir = perTestDirs();

  it("protocol 2 (ipywidgets 7/8): nbagent run saves metadata.widgets as nbclient does, buffers included", async () => {
    const d = await dir();
    const path = await writeNb(
      join(d, "p2.ipynb"),
      PROTOCOL_2.map((c) => ["code", c] as ["code", string]),
    );
    await mkdir(join(d, "ref"));
    await copyFile(path, join(d, "ref", "p2.ipynb"));
    await python([NBCLIENT_RUN, "-o", join(d, "ref-out"), join(d, "ref", "p2.ipynb")]);
    const reference = await readNb(join(d, "ref-out", "p2.ipynb"));
    assert.equal(
      Object.keys(reference.metadata.widgets[MIME].state).length,
      2,
      "nbclient saved both widgets",
    );

    const r = await nbagent(["run", path]);
    assert.equal(r.code, 0, r.stderr);
    const nb = await readNb(path);
    const saved = nb.metadata.widgets[MIME];
    assert.equal(saved.version_major, reference.metadata.widgets[MIME].version_major);
    assert.equal(saved.version_minor, reference.metadata.widgets[MIME].version_minor);
    assert.deepEqual(byName(nb), byName(reference));
    assert.equal(byName(nb)[1].state.value, 7);
    assert.deepEqual(byName(nb)[0].buffers, [{ data: "iVBORwAB", encoding: "base64", path: ["value"] }]);
    assert.equal(await validate(path), "ok");
  });

  it("real ipywidgets: the saved state is the kernel's own get_manager_state(); a closed widget is not saved", {
    skip: SKIP_IPYWIDGETS,
  }, async () => {
    const d = await dir();
    const path = await writeNb(join(d, "w.ipynb"), [
      ["code", "import ipywidgets as w\nn = w.IntSlider(value=3, description='n')\nn"],
      [
        "code",
        "n.value = 7\nbox = w.HBox([n, w.Text(value='hi')])\nbye = w.Button(description='bye')\nbye.close()\nbox",
      ],
      [
        "code",
        "import json\nfrom ipywidgets import Widget\nwith open('manager-state.json', 'w') as f:\n    json.dump(Widget.get_manager_state(), f)",
      ],
    ]);
    const r = await nbagent(["run", path]);
    assert.equal(r.code, 0, r.stderr);
    const nb = await readNb(path);
    const manager = JSON.parse(await readFile(join(d, "manager-state.json"), "utf8"));
    const saved = nb.metadata.widgets[MIME];
    assert.equal(saved.version_major, manager.version_major);
    assert.deepEqual(Object.keys(saved.state).sort(), Object.keys(manager.state).sort());
    for (const [id, model] of Object.entries(manager.state) as [string, Json][]) {
      assert.equal(saved.state[id].model_name, model.model_name);
      assert.equal(saved.state[id].model_module, model.model_module);
      assert.deepEqual(saved.state[id].state, model.state, `state of ${model.model_name}`);
    }
    const names = Object.values(saved.state).map((m: Json) => m.model_name);
    assert.ok(names.includes("IntSliderModel") && names.includes("HBoxModel") && names.includes("TextModel"));
    assert.ok(!names.includes("ButtonModel"), "the closed button is not saved");
    assert.equal(await validate(path), "ok");
  });

  it("the notebook tool: a later run of one cell keeps the widgets of the earlier run (same kernel)", async () => {
    const d = await dir();
    await writeNb(
      join(d, "nb.ipynb"),
      PROTOCOL_2.map((c) => ["code", c] as ["code", string]),
    );
    const { results } = await batch(d, [
      { tool: "notebook", params: { action: "run", notebook_path: "nb.ipynb", cell_index: 0 } },
      { tool: "notebook", params: { action: "run", notebook_path: "nb.ipynb", cell_index: 1 } },
    ]);
    assert.match(resultText(results[1]), /widgets up/);
    const nb = await readNb(join(d, "nb.ipynb"));
    assert.deepEqual(
      byName(nb).map((m: Json) => [m.model_name, m.state.value ?? m.state.width]),
      [
        ["ImageModel", "10"],
        ["IntSliderModel", 7],
      ],
    );
  });
});

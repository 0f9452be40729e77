/**
 * Notebooks for the view page's tests. `executedNotebook` is made by a real kernel (nbclient runs
 * the cells), so the page gets the outputs Jupyter really writes: matplotlib's PNG, pandas' HTML
 * table, IPython's LaTeX/Markdown/JSON/SVG displays, a traceback with its ANSI colours.
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import type { ViewCell } from "../../src/view/protocol.js";
import { TEST_PYTHON } from "../python.js";

const exec = promisify(execFile);

export const EXECUTED_SOURCES: [type: "markdown" | "code", source: string][] = [
  [
    "markdown",
    "# A notebook the agent ran\n\nThe area of a circle is $A = \\pi r_1^2$, and\n\n" +
      "$$\\sum_{n=1}^{\\infty} \\frac{1}{n^2} = \\frac{\\pi^2}{6}$$\n\n" +
      "| x | y |\n|---|---|\n| 1 | a |\n\n- a list with `code`\n- and **bold**",
  ],
  [
    "code",
    'def greet(name):\n    """Say hello."""\n    return f"hello {name}"\n\n' +
      'print("\\x1b[31mred\\x1b[0m and \\x1b[1;32mbold green\\x1b[0m", greet("view"))',
  ],
  [
    "code",
    "%matplotlib inline\nimport matplotlib.pyplot as plt\nfig, ax = plt.subplots(figsize=(4, 2.5))\n" +
      "ax.plot([1, 3, 2, 4])\nplt.show()",
  ],
  ["code", 'import pandas as pd\npd.DataFrame({"x": [1, 2, 3], "y": ["a", "b", "c"]})'],
  [
    "code",
    "from IPython.display import JSON, SVG, Latex, Markdown, display\n" +
      'display(Latex(r"$$\\frac{a}{b} = \\sqrt{c}$$"))\n' +
      'display(Markdown("## A markdown output\\nwith *emphasis*"))\n' +
      'display(JSON({"model": "demo", "layers": [1, 2, {"dropout": None}]}))\n' +
      'display(SVG(\'<svg xmlns="http://www.w3.org/2000/svg" width="60" height="30">' +
      '<rect width="60" height="30" fill="#42a5f5"/></svg>\'))',
  ],
  ["code", "1 / 0"],
];

const RUN = `
import json, sys
import nbformat
from nbclient import NotebookClient
cells = json.load(sys.stdin)
nb = nbformat.v4.new_notebook()
nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
for i, (kind, source) in enumerate(cells):
    cell = nbformat.v4.new_code_cell(source) if kind == "code" else nbformat.v4.new_markdown_cell(source)
    cell.id = f"cell-{i}"
    nb.cells.append(cell)
NotebookClient(nb, timeout=120, allow_errors=True, kernel_name="python3").execute()
json.dump(nb.cells, sys.stdout)
`;

/** The cells of EXECUTED_SOURCES after a real ipykernel ran them. */
export async function executedNotebook(): Promise<ViewCell[]> {
  const child = exec(TEST_PYTHON, ["-c", RUN], { maxBuffer: 1 << 26 });
  child.child.stdin?.end(JSON.stringify(EXECUTED_SOURCES));
  const { stdout } = await child;
  return JSON.parse(stdout) as ViewCell[];
}

/** Outputs that try to reach the page; each sets `window.__ran` where it runs (its own frame). */
export const PWN = "try { parent.__pwned = 1 } catch (e) {} try { top.__pwned = 1 } catch (e) {}";

export function hostileCells(): ViewCell[] {
  const steal =
    "fetch('/api/fetch', { credentials: 'include' }).catch(() => {});" +
    "new Image().src = '/api/image?c=' + (() => { try { return document.cookie } catch (e) { return 'none' } })();";
  return [
    {
      id: "html-script",
      cell_type: "code",
      source: "display(HTML(...))",
      outputs: [
        {
          output_type: "display_data",
          data: { "text/html": `<b>html</b><script>window.__ran = true; ${PWN} ${steal}</script>` },
          metadata: {},
        },
      ],
    },
    {
      id: "html-onerror",
      cell_type: "code",
      source: "display(HTML(...))",
      outputs: [
        {
          output_type: "display_data",
          data: { "text/html": `<img src="x" onerror="window.__ran = true; ${PWN}">` },
          metadata: {},
        },
      ],
    },
    {
      id: "javascript",
      cell_type: "code",
      source: "display(Javascript(...))",
      outputs: [
        {
          output_type: "display_data",
          data: { "application/javascript": `window.__ran = true; ${PWN} ${steal}`, "text/plain": "<js>" },
          metadata: {},
        },
      ],
    },
    {
      id: "svg-script",
      cell_type: "code",
      source: "display(SVG(...))",
      outputs: [
        {
          output_type: "display_data",
          data: {
            "image/svg+xml":
              '<svg xmlns="http://www.w3.org/2000/svg" width="40" height="20" onload="window.__pwned = 1">' +
              '<script>window.__pwned = 1</script><rect width="40" height="20" fill="red"/>' +
              '<foreignObject><body xmlns="http://www.w3.org/1999/xhtml"><img src="x" onerror="window.__pwned = 1"/></body></foreignObject></svg>',
          },
          metadata: {},
        },
      ],
    },
    {
      id: "markdown",
      cell_type: "markdown",
      source:
        "[markdown link](javascript:window.__pwned=1) " +
        '<a id="raw-link" href="javascript:window.__pwned=1">raw link</a> ' +
        '<img src="x" onerror="window.__pwned = 1"> <script>window.__pwned = 1</script> ' +
        '<iframe src="/api/iframe"></iframe> <form action="/api/form"><button>go</button></form>',
    },
    {
      id: "markdown-output",
      cell_type: "code",
      source: "display(Markdown(...))",
      outputs: [
        {
          output_type: "display_data",
          data: {
            "text/markdown": '<img src="x" onerror="window.__pwned = 1"> [out](javascript:window.__pwned=1)',
          },
          metadata: {},
        },
      ],
    },
  ];
}

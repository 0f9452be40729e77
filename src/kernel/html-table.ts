/**
 * An HTML table as one GFM table (docs/output.md, "Rich outputs"): every row in a grid (colspan and
 * rowspan repeat their cell, so each row reads on its own), all header rows as one header (pandas'
 * index-name row fills the blank corner; several column levels join with " / "), cell text as written
 * (no markdown escaping, only `|` escaped), and cells a stylesheet marks by id (a pandas Styler's
 * `highlight_max`) in bold with a line that says what the style was.
 */

/** The DOM nodes turndown hands its rules (domino's): only what is read here. */
export interface TableNode {
  nodeName: string;
  childNodes: ArrayLike<TableNode>;
  textContent: string | null;
  getAttribute?(name: string): string | null;
  innerHTML?: string;
  children?: ArrayLike<TableNode>;
}

/** Per element id, the CSS declarations a `<style>` block gives it (`background-color: yellow`). */
export type IdStyles = Map<string, string>;

const STYLE_BLOCK = /<style[^>]*>([\s\S]*?)<\/style>/gi;
const RULE = /([^{}]+)\{([^{}]*)\}/g;

/** The declarations `<style>` blocks give single ids (`#T_1_row0_col1, #T_1_row2_col0 { … }`). */
export function idStyles(html: string): IdStyles {
  const styles: IdStyles = new Map();
  if (!/<style/i.test(html)) return styles;
  for (const [, css] of html.matchAll(STYLE_BLOCK)) {
    for (const [, selectors, body] of css.matchAll(RULE)) {
      const decls = body
        .split(";")
        .map((d) =>
          d
            .trim()
            .replace(/\s*:\s*/, ": ")
            .replace(/\s+/g, " "),
        )
        .filter((d) => /^[\w-]+: \S/.test(d));
      if (decls.length === 0) continue;
      for (const sel of selectors.split(",")) {
        const id = /^#([\w-]+)$/.exec(sel.trim())?.[1];
        if (!id) continue;
        const before = styles.get(id);
        styles.set(id, before ? `${before}; ${decls.join("; ")}` : decls.join("; "));
      }
    }
  }
  return styles;
}

interface GridCell {
  text: string;
  header: boolean;
  style?: string;
}

function elements(node: TableNode, names: string[]): TableNode[] {
  return Array.from(node.childNodes).filter((c) => names.includes(c.nodeName));
}

/** The table's rows in order (thead, tbody, tfoot, bare rows), not those of nested tables. */
function rows(table: TableNode): { row: TableNode; head: boolean }[] {
  const out: { row: TableNode; head: boolean }[] = [];
  for (const child of Array.from(table.childNodes)) {
    if (child.nodeName === "TR") out.push({ row: child, head: false });
    else if (["THEAD", "TBODY", "TFOOT"].includes(child.nodeName))
      for (const row of elements(child, ["TR"])) out.push({ row, head: child.nodeName === "THEAD" });
  }
  return out;
}

function span(cell: TableNode, name: string): number {
  const n = Number.parseInt(cell.getAttribute?.(name) ?? "1", 10);
  return Number.isFinite(n) && n > 1 ? Math.min(n, 1000) : 1;
}

/** The rows as a grid: a cell spanning rows or columns stands in each place it covers. */
function grid(list: TableNode[], text: (cell: TableNode) => string, styles: IdStyles): GridCell[][] {
  const out: GridCell[][] = [];
  const pending: { cell: GridCell; rows: number }[] = []; // by column: a rowspan still covering
  list.forEach((row, r) => {
    const line: GridCell[] = [];
    let col = 0;
    const fill = () => {
      while (pending[col] && pending[col].rows > 0) {
        line.push(pending[col].cell);
        pending[col].rows--;
        col++;
      }
    };
    for (const cell of elements(row, ["TH", "TD"])) {
      fill();
      const id = cell.getAttribute?.("id");
      const g: GridCell = { text: text(cell), header: cell.nodeName === "TH" };
      const style = id ? styles.get(id) : undefined;
      if (style) g.style = style;
      const down = span(cell, "rowspan");
      for (let k = 0; k < span(cell, "colspan"); k++) {
        line.push(g);
        if (down > 1) pending[col] = { cell: g, rows: down - 1 };
        col++;
      }
    }
    fill();
    out[r] = line;
  });
  return out;
}

/** Text of a cell on one line, as written; `|` escaped so the table keeps its columns. */
export function cellLine(text: string): string {
  return text.replace(/\s+/g, " ").trim().replace(/\|/g, "\\|");
}

/** The header rows as one: per column its non-blank values, in order, joined by " / ". */
function oneHeader(head: GridCell[][], width: number): string[] {
  const names: string[] = [];
  for (let c = 0; c < width; c++) {
    const parts: string[] = [];
    for (const row of head) {
      const t = row[c]?.text ?? "";
      if (t && parts[parts.length - 1] !== t) parts.push(t);
    }
    names.push(parts.join(" / "));
  }
  return names;
}

/** Most distinct styles marked one by one; past it the table says the cells carry a scale. */
const MAX_STYLES = 4;

/**
 * The markdown of a table node: `text` gives each cell's markdown (one line), `styles` the
 * declarations its id carries.
 */
export function tableMarkdown(table: TableNode, text: (cell: TableNode) => string, styles: IdStyles): string {
  const all = rows(table);
  if (all.length === 0) return "";
  const cells = grid(
    all.map((r) => r.row),
    (c) => cellLine(text(c)),
    styles,
  );
  // header rows: the thead's; without one, leading rows of th only; else the first row
  let headCount = all.filter((r) => r.head).length;
  if (headCount === 0) {
    while (headCount < cells.length - 1 && cells[headCount].every((c) => c.header)) headCount++;
    if (headCount === 0) headCount = 1;
  }
  const width = Math.max(...cells.map((r) => r.length));
  const body = cells.slice(headCount);
  // a style every data cell carries marks nothing
  const data = body.flat().filter((c) => !c.header);
  const marked = body.flat().filter((c) => c.style);
  const everywhere = data.length > 0 && data.every((c) => c.style === data[0].style);
  const distinct = everywhere ? [] : [...new Set(marked.map((c) => c.style!))];
  const numbered = distinct.length > 1 && distinct.length <= MAX_STYLES;
  const show = (c: GridCell | undefined): string => {
    if (!c) return "";
    if (!c.style || distinct.length === 0 || distinct.length > MAX_STYLES || !c.text) return c.text;
    return `**${c.text}**${numbered ? `[${distinct.indexOf(c.style) + 1}]` : ""}`;
  };
  const line = (values: string[]) => `| ${values.join(" | ")} |`;
  const out = [line(oneHeader(cells.slice(0, headCount), width)), line(new Array(width).fill("---"))];
  for (const row of body) out.push(line(Array.from({ length: width }, (_, c) => show(row[c]))));
  if (distinct.length === 1) out.push("", `[cells in bold are styled: ${distinct[0]}]`);
  else if (numbered)
    out.push("", `[cells in bold are styled: ${distinct.map((s, i) => `[${i + 1}] ${s}`).join("; ")}]`);
  else if (distinct.length > MAX_STYLES)
    out.push("", `[the cells carry ${distinct.length} different styles (a color scale?), not shown]`);
  return out.join("\n");
}

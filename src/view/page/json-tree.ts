/**
 * application/json (and any `+json` MIME type) as a tree of <details> elements: objects and lists
 * fold open and shut with no script of ours, keys and values are text nodes (never HTML). Levels
 * below the second start folded, and a long list shows its first items, saying how many more.
 */
const SHOWN_ITEMS = 200;

function leaf(doc: Document, value: unknown): HTMLElement {
  const span = doc.createElement("span");
  span.className = `nb-json-${value === null ? "null" : typeof value}`;
  span.textContent = typeof value === "string" ? JSON.stringify(value) : String(value);
  return span;
}

function node(doc: Document, key: string | null, value: unknown, depth: number): HTMLElement {
  const isList = Array.isArray(value);
  if (value === null || typeof value !== "object") {
    const row = doc.createElement("div");
    row.className = "nb-json-row";
    if (key !== null) row.append(keyLabel(doc, key));
    row.append(leaf(doc, value));
    return row;
  }
  const entries: [string, unknown][] = isList
    ? (value as unknown[]).map((v, i) => [String(i), v])
    : Object.entries(value as Record<string, unknown>);
  const details = doc.createElement("details");
  details.className = "nb-json-row";
  details.open = depth < 2;
  const summary = doc.createElement("summary");
  if (key !== null) summary.append(keyLabel(doc, key));
  const shape = doc.createElement("span");
  shape.className = "nb-json-shape";
  shape.textContent = isList ? `[${entries.length}]` : `{${entries.length}}`;
  summary.append(shape);
  details.append(summary);
  for (const [k, v] of entries.slice(0, SHOWN_ITEMS)) details.append(node(doc, k, v, depth + 1));
  if (entries.length > SHOWN_ITEMS) {
    const more = doc.createElement("div");
    more.className = "nb-json-more";
    more.textContent = `… ${entries.length - SHOWN_ITEMS} more`;
    details.append(more);
  }
  return details;
}

function keyLabel(doc: Document, key: string): HTMLElement {
  const span = doc.createElement("span");
  span.className = "nb-json-key";
  span.textContent = `${key}: `;
  return span;
}

export function renderJsonTree(doc: Document, value: unknown): HTMLElement {
  const root = doc.createElement("div");
  root.className = "nb-json";
  root.append(node(doc, null, value, 0));
  return root;
}

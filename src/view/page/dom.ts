/** A small element builder for the page's panels (classes and text only: no HTML strings, no inline styles). */
export function el<K extends keyof HTMLElementTagNameMap>(
  doc: Document,
  tag: K,
  className?: string,
  ...children: (Node | string | undefined | false)[]
): HTMLElementTagNameMap[K] {
  const e = doc.createElement(tag);
  if (className) e.className = className;
  for (const c of children) if (c !== undefined && c !== false) e.append(c);
  return e;
}

export function button(
  doc: Document,
  className: string,
  text: string,
  onClick: () => void,
): HTMLButtonElement {
  const b = el(doc, "button", className, text);
  b.type = "button";
  b.addEventListener("click", onClick);
  return b;
}

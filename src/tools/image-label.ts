/**
 * The label that names an image content in a result's text, at the image's place
 * (docs/notebook-tool.md, docs/output.md): `[image 2 · cell 3 · 800×600]` — its 1-based position
 * among the result's image contents, the cell as the text numbers it, and its size as sent.
 */
export function imageLabel({
  index,
  cell,
  width,
  height,
}: {
  index: number;
  cell: number;
  width: number;
  height: number;
}): string {
  return `[image ${index} · cell ${cell} · ${width}×${height}]`;
}

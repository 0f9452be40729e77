/**
 * How the text names an image at its place in a cell's output (docs/output.md): `[image 2 · cell 3 ·
 * 640×480]` for an image sent with the result (its position among the result's image contents, the
 * cell as the text numbers cells, the size as sent), `[image left out · cell 3 · why]` for one that
 * is not sent, and `[image · cell 3]` while the call is still going (images come with the result).
 */
export type ImageLabelFacts =
  /** Sent: `index` is its 1-based position among the result's images; the size is as sent. */
  | { cell: number | string; index: number; width: number; height: number }
  /** Not sent, and why (over the image limit, could not be read, too large). */
  | { cell: number | string; leftOut: string }
  /** The call is still going: whether and how it is sent is not known yet. */
  | { cell: number | string };

export function imageLabel(f: ImageLabelFacts): string {
  if ("index" in f) return `[image ${f.index} · cell ${f.cell} · ${f.width}×${f.height}]`;
  if ("leftOut" in f) return `[image left out · cell ${f.cell} · ${f.leftOut}]`;
  return `[image · cell ${f.cell}]`;
}

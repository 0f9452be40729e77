/** read: a page of cells with short output summaries, or one cell with its saved outputs whole. */
import { DEFAULT_IMAGE_BUDGET, type ImageBudget } from "../../../output/model-budgets.js";
import { imageLabel } from "../../image-label.js";
import { prepareImage } from "../../python/images.js";
import type { ImageContent } from "../../types.js";
import type { ReadImageRef } from "../outputs.js";
import { invalidReadLines, problemLine } from "../problems.js";
import { renderRead } from "../read.js";
import type { ReadImageDetails } from "../types.js";
import { type ActionHandler, ok, ToolError, targetIndex } from "./context.js";

export const read: ActionHandler = async (ctx) => {
  const { params: p, loaded, shownPath } = ctx;
  const nb = loaded.notebook;
  const count = nb.cells.length;
  const index = targetIndex(ctx);
  const single = index !== undefined;
  const offset = single ? index : (p.offset ?? 0);
  if (offset < 0 || (offset > count - 1 && !(offset === 0 && count === 0))) {
    throw new ToolError(`Offset ${offset} out of range (0-${count - 1}) in ${shownPath}`);
  }
  const end = single ? offset + 1 : Math.min(count, offset + (p.limit ?? count));
  const check = ctx.check;
  const notices = check ? invalidReadLines(shownPath, check) : [];
  const view = renderRead(nb, shownPath, offset, end, ctx.readBudget, notices, single);
  const images = await sendImages(
    view.images,
    { ...DEFAULT_IMAGE_BUDGET, ...ctx.images },
    single,
    p.notebook_path,
  );
  const result = ok(images.label(view.text), {
    ...ctx.details,
    cellIndex: index,
    totalCells: count,
    cells: view.cells.map((c) =>
      c.outputs ? { ...c, outputs: { ...c.outputs, lines: c.outputs.lines.map(images.label) } } : c,
    ),
    nextOffset: view.nextOffset,
    warnings: check?.problems.length ? check.problems.map((x) => problemLine(x, check.schema)) : undefined,
    ...(single ? { cellType: nb.cells[index].cell_type, cellSource: view.cells[0]?.source } : {}),
    ...(images.details.length ? { images: images.details } : {}),
  });
  result.content.push(...images.content);
  return result;
};

/**
 * The saved images the read text names, as image contents: the first `maxImages` in document order,
 * downscaled to the budget as the python tool's (docs/notebook-tool.md). `label` turns each
 * placeholder of a text into the image's label, or into why the image was not sent and where it is.
 */
async function sendImages(
  refs: ReadImageRef[],
  budget: Required<ImageBudget>,
  single: boolean,
  /** The notebook as the call named it (for the read call that returns an image left out). */
  notebookPath: string,
): Promise<{ label: (text: string) => string; content: ImageContent[]; details: ReadImageDetails[] }> {
  const content: ImageContent[] = [];
  const details: ReadImageDetails[] = [];
  const labels = new Map<string, string>();
  for (const ref of refs) {
    const entry: ReadImageDetails = {
      cell: ref.cell,
      output: ref.output,
      mimeType: ref.mimeType,
      width: ref.width,
      height: ref.height,
      included: false,
    };
    let label: string;
    if (content.length >= budget.maxImages) {
      const where = single
        ? `cells[${ref.cell}].outputs[${ref.output}] in the file holds it`
        : `reading cell ${ref.cell} alone sends it: ${JSON.stringify({ action: "read", notebook_path: notebookPath, cell_index: ref.cell })}`;
      entry.reason = "image limit";
      label = imageLabel({
        cell: ref.cell,
        leftOut: `a read sends its first ${budget.maxImages} images; ${where}`,
      });
    } else {
      const img = await prepareImage(ref.mimeType, ref.data, budget);
      if (img.data && img.mimeType && img.sentWidth && img.sentHeight) {
        content.push({ type: "image", data: img.data, mimeType: img.mimeType });
        Object.assign(entry, {
          included: true,
          width: img.width,
          height: img.height,
          sentMimeType: img.mimeType,
          sentWidth: img.sentWidth,
          sentHeight: img.sentHeight,
          bytes: img.bytes,
        });
        label = imageLabel({
          index: content.length,
          cell: ref.cell,
          width: img.sentWidth,
          height: img.sentHeight,
        });
      } else {
        entry.reason = img.error ?? "unknown reason";
        label = imageLabel({ cell: ref.cell, leftOut: entry.reason });
      }
    }
    details.push(entry);
    labels.set(ref.token, label);
  }
  const label = (text: string) =>
    labels.size === 0 ? text : text.replace(/\u0000image \d+\u0000/g, (token) => labels.get(token) ?? "");
  return { label, content, details };
}

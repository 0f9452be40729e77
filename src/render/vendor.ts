/**
 * The packages the terminal views draw with (highlight.js through lowlight, pngjs, string-width,
 * wrap-ansi, slice-ansi), in one module. The built CLI keeps them in a bundle of their own,
 * `dist/cli/nbagent-render-<hash>.cjs`, loaded only when a terminal shows a call (the views load
 * only then: src/cli/tool-view.ts); every other command starts without their ~450 functions
 * (scripts/bundle.mjs; docs/architecture.md, "How the built command starts").
 */
export { default as json } from "highlight.js/lib/languages/json";
export { default as markdown } from "highlight.js/lib/languages/markdown";
export { default as python } from "highlight.js/lib/languages/python";
export { createLowlight } from "lowlight";
export { PNG } from "pngjs";
export { default as sliceAnsi } from "slice-ansi";
export { default as stringWidth } from "string-width";
export { default as wrapAnsi } from "wrap-ansi";

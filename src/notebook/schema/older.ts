/**
 * The validators of the nbformat versions before 4.5 and of newer ones (4.5 relaxed), in one module:
 * the built CLI keeps them in a bundle of their own, `dist/cli/nbagent-nbformat-<hash>.cjs`, loaded
 * only when a notebook of such a version is checked (~450 KB of code every other command would read
 * and restore from its code cache; scripts/bundle.mjs, docs/architecture.md).
 */
export * as v4_0 from "./nbformat-v4_0.js";
export * as v4_1 from "./nbformat-v4_1.js";
export * as v4_2 from "./nbformat-v4_2.js";
export * as v4_3 from "./nbformat-v4_3.js";
export * as v4_4 from "./nbformat-v4_4.js";
export * as future from "./nbformat-v4_future.js";

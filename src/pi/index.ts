/**
 * The `nbagent/pi` entry (docs/pi.md): the extension with default options (the default export) and
 * createNbagentExtension(options) for one with options of its own. scripts/bundle.mjs bundles it
 * into dist/pi/index.js; tsc writes its declarations, dist/pi/index.d.ts.
 */
export { createNbagentExtension, default, type NbagentExtensionOptions } from "./extension.js";

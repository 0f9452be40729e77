export * from "./create.js";
export * from "./file.js";
export * from "./json.js";
export * from "./layout.js";
export * from "./lines.js";
export * from "./model.js";
export * from "./serialize.js";
export * from "./splice.js";

export {
  type ArtifactErrorCode,
  type ArtifactPage,
  type ArtifactPosition,
  ArtifactReadError,
  type LineMatch,
  type PatternSpec,
  parsePattern,
  SEARCH_OVERLAP,
  SEARCH_WINDOW,
} from "./artifact-pages.js";
export {
  ARTIFACT_SCHEME,
  type ArtifactReadOptions,
  type ArtifactRef,
  type ArtifactSearchOptions,
  type ArtifactSearchResult,
  type ArtifactSlice,
  ArtifactStore,
  type ArtifactStoreOptions,
  parseArtifactId,
  type StoredIncomplete,
  sessionDirName,
} from "./artifacts.js";
export {
  ARTIFACT_PAGE_BYTES,
  ARTIFACT_PAGE_LINES,
  ARTIFACT_PAGE_MAX_BYTES,
  ARTIFACT_TOOL_LINES,
  CALL_OUTPUT_BYTES,
  DEFAULT_IMAGE_BUDGET,
  type ImageBudget,
  READ_CHARS,
} from "./model-budgets.js";
export { applyOverwrites, sanitise, stripAnsi } from "./sanitise.js";
export { type ShownLine, shownRanges } from "./select.js";
export {
  type ArtifactIncomplete,
  type CellDump,
  type ChunkKind,
  DEFAULT_CLEAR_MARKER,
  DEFAULT_CUT_OVERHEAD,
  type OutputDump,
  OutputSink,
  type OutputSinkOptions,
  type SinkArtifact,
} from "./sink.js";

export {
  type ArtifactErrorCode,
  type ArtifactPage,
  type ArtifactPosition,
  ArtifactReadError,
  type LineMatch,
  type PatternSpec,
  parsePattern,
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
  DEFAULT_PAGE_BYTES,
  parseArtifactId,
  type StoredIncomplete,
  sessionDirName,
} from "./artifacts.js";
export { applyOverwrites, sanitise, stripAnsi } from "./sanitise.js";
export { type ShownLine, shownRanges } from "./select.js";
export {
  type ArtifactIncomplete,
  type CellDump,
  type ChunkKind,
  DEFAULT_CLEAR_MARKER,
  DEFAULT_CUT_OVERHEAD,
  DEFAULT_MAX_BYTES,
  type OutputDump,
  OutputSink,
  type OutputSinkOptions,
  type SinkArtifact,
} from "./sink.js";

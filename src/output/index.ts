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
  DEFAULT_ARTIFACT_MAX_AGE_MS,
  DEFAULT_PAGE_BYTES,
  defaultStateRoot,
  parseArtifactId,
  sessionDirName,
} from "./artifacts.js";
export { applyOverwrites, sanitise, stripAnsi } from "./sanitise.js";
export {
  DEFAULT_MAX_BYTES,
  type OutputDump,
  OutputSink,
  type OutputSinkOptions,
  type SinkArtifact,
} from "./sink.js";

/**
 * A tool's descriptor: what every surface (MCP, pi, the CLI, the renderers) knows about a tool
 * without running it — its name, label, parameter schema, hints and description — and how a
 * toolbox makes it. Surfaces iterate descriptors and find a tool by its descriptor (object
 * identity), never by a name written out elsewhere. Renderers join in one floor up (render/index.ts
 * keys them by descriptor), so this module stays plain data a tool can own.
 */
import type { TSchema } from "@sinclair/typebox";
import type { Runtime } from "../runtime/runtime.js";
import type { KeptKernelLimits } from "./kernel-text.js";
import type { ToolRefs } from "./result-refs.js";
import type { RunRegistry } from "./runs/registry.js";
import type { Tool } from "./types.js";

/**
 * What a tool's calls do to the world, in MCP's words (docs/mcp.md). MCP annotates a whole tool,
 * not an action, so a tool with any destructive action says so. A hint left out takes MCP's
 * cautious default (not read-only, may be destructive, open world).
 */
export interface ToolHints {
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
  openWorldHint?: boolean;
}

/** What descriptions state about the host, known before any runtime exists (runtime/facts.ts). */
export interface ToolFacts {
  /** Sessions can be kept by name on the kernels' server, outliving the process (BackendFacts). */
  namedSessions: boolean;
  /** Kernels are given this machine's environment (false: they keep their server's; BackendFacts). */
  hostEnvironment: boolean;
  /** How long unused kernels are kept, and how many. */
  limits: KeptKernelLimits;
  /** Calls still running after their wait go on in the background (docs/runs.md); false: one-shot. */
  background: boolean;
}

/** What a toolbox makes its tools from. */
export interface ToolDeps {
  /** The session's working directory: relative paths resolve against it. */
  cwd: string;
  runtime: Runtime;
  runs: RunRegistry;
}

export interface ToolDescriptor<TParams = unknown, TDetails = unknown> {
  readonly name: string;
  readonly label: string;
  /** The JSON Schema of the call's parameters (TypeBox). */
  readonly parameters: TSchema;
  readonly hints: ToolHints;
  /** The description the model reads, for a host with these facts. */
  describe(facts: ToolFacts): string;
  /** The ids a result's text names, from its details (result-refs.ts); none when left out. */
  refs?(details: TDetails): ToolRefs;
  /** The tool, working in a toolbox (its description is describe() of the runtime's facts). */
  create(deps: ToolDeps): Tool<TParams, TDetails>;
}

// biome-ignore lint/suspicious/noExplicitAny: a list holds descriptors of different parameter/details types
export type AnyToolDescriptor = ToolDescriptor<any, any>;

/**
 * The facts of a runtime that exists (the same values runtimeFacts() reads from its options), in a
 * host with or without background runs.
 */
export function factsOf(runtime: Runtime, background = true): ToolFacts {
  const { idleTimeoutMs, maxSessions } = runtime.sessions;
  return {
    namedSessions: runtime.facts.namedSessions,
    hostEnvironment: runtime.facts.hostEnvironment,
    limits: { idleTimeoutMs, maxSessions },
    background,
  };
}

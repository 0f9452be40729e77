/**
 * Builds the tool objects every integration (CLI, MCP, pi) adapts, around one shared runtime, from
 * the tools' descriptors (descriptor.ts). The runtime owns the kernels; dispose() shuts them all down.
 * describeTools() gives the same names, schemas and descriptions without building a runtime.
 */
import { createRuntime, type RuntimeOptions, runtimeFacts, type Settings } from "../runtime/index.js";
import { artifactDescriptor } from "./artifact/artifact.js";
import {
  type AnyToolDescriptor,
  factsOf,
  type ToolDescriptor,
  type ToolFacts,
  type ToolHints,
} from "./descriptor.js";
import { kernelsDescriptor } from "./kernels/kernels.js";
import { notebookDescriptor } from "./notebook/descriptor.js";
import { observedTool } from "./observed-tool.js";
import { pythonDescriptor } from "./python/python.js";
import { RunRegistry } from "./runs/registry.js";
import { runsDescriptor } from "./runs/runs.js";
import type { Tool } from "./types.js";

export type { AnyToolDescriptor, ToolDeps, ToolDescriptor, ToolFacts, ToolHints } from "./descriptor.js";
export { factsOf } from "./descriptor.js";
export { cellRunRefs, type ToolRefs } from "./result-refs.js";

// biome-ignore lint/suspicious/noExplicitAny: a toolbox holds tools of different parameter/details types
export type AnyTool = Tool<any, any>;

/** nbagent's tools, in the order every surface lists them. */
export const TOOL_DESCRIPTORS: readonly AnyToolDescriptor[] = [
  notebookDescriptor,
  pythonDescriptor,
  artifactDescriptor,
  runsDescriptor,
  kernelsDescriptor,
];

export interface ToolboxOptions {
  /** The session's working directory: relative paths resolve against it. */
  cwd: string;
  /** The settings the edge resolved (runtime/settings.ts): the runtime's, and the wait budget. */
  settings: Settings;
  runtime?: Omit<RuntimeOptions, "settings">;
  /**
   * Seconds a python call or notebook run is waited for before it returns its output so far with a
   * run id and goes on in the background (default: the settings', NBAGENT_WAIT_SECONDS, else 50; docs/runs.md).
   */
  waitSeconds?: number;
  /**
   * Whether calls can go on in the background (default true: MCP, pi, nbagent batch). false for a
   * host that ends with its call (a one-shot command): every call is waited for to its end, no run
   * id is handed out, and a call without a timeout gets the tool's default one (docs/runs.md).
   */
  background?: boolean;
  /** The tools to make (default TOOL_DESCRIPTORS). */
  descriptors?: readonly AnyToolDescriptor[];
}

/** A tool with the descriptor it was made from. */
export interface ToolEntry {
  descriptor: AnyToolDescriptor;
  tool: AnyTool;
}

export interface Toolbox {
  /** The tools, in the descriptors' order. */
  tools: AnyTool[];
  entries: ToolEntry[];
  /** The tool made from this descriptor (it must be one of the toolbox's). */
  get<P, D>(descriptor: ToolDescriptor<P, D>): Tool<P, D>;
  /** The same, with its descriptor. */
  entry(descriptor: AnyToolDescriptor): ToolEntry;
  /** The entry whose name a caller gave (a protocol's or command line's tool name). */
  find(name: string): ToolEntry | undefined;
  runtime: ReturnType<typeof createRuntime>;
  runs: RunRegistry;
  dispose(): Promise<void>;
}

export function createToolbox(options: ToolboxOptions): Toolbox {
  const runtime = createRuntime({ ...options.runtime, settings: options.settings });
  const runs = new RunRegistry(
    options.waitSeconds ?? options.settings.waitSeconds,
    options.background !== false,
    runtime.events,
  );
  const deps = { cwd: options.cwd, runtime, runs };
  const entries: ToolEntry[] = (options.descriptors ?? TOOL_DESCRIPTORS).map((descriptor) => ({
    descriptor,
    tool: observedTool(descriptor.create(deps) as AnyTool, runtime.events),
  }));
  const entryOf = (descriptor: AnyToolDescriptor): ToolEntry => {
    const entry = entries.find((e) => e.descriptor === descriptor);
    if (!entry) throw new Error(`the toolbox has no ${descriptor.name} tool`);
    return entry;
  };
  return {
    tools: entries.map((e) => e.tool),
    entries,
    get: <P, D>(descriptor: ToolDescriptor<P, D>) => entryOf(descriptor).tool as Tool<P, D>,
    entry: entryOf,
    find: (name) => entries.find((e) => e.descriptor.name === name),
    runtime,
    runs,
    dispose: () => runtime.dispose(),
  };
}

/** A tool as a host lists it before any call: what the model is told, and the descriptor behind it. */
export interface DescribedTool {
  descriptor: AnyToolDescriptor;
  name: string;
  label: string;
  description: string;
  parameters: AnyToolDescriptor["parameters"];
  hints: ToolHints;
}

/**
 * The tools a toolbox with these options would hold, described as it would describe them — without
 * a runtime (no kernel, no artifact store, no timers). Bad settings throw as createToolbox would.
 */
export function describeTools(options: Omit<ToolboxOptions, "cwd">): DescribedTool[] {
  const facts = {
    ...runtimeFacts({ ...options.runtime, settings: options.settings }),
    background: options.background !== false,
  };
  return (options.descriptors ?? TOOL_DESCRIPTORS).map((descriptor) => described(descriptor, facts));
}

/** The tools of a toolbox that exists, described from its runtime (the same as describeTools()). */
export function describeToolbox(toolbox: Toolbox): DescribedTool[] {
  const facts = factsOf(toolbox.runtime, toolbox.runs.background);
  return toolbox.entries.map((e) => described(e.descriptor, facts));
}

function described(descriptor: AnyToolDescriptor, facts: ToolFacts): DescribedTool {
  return {
    descriptor,
    name: descriptor.name,
    label: descriptor.label,
    description: descriptor.describe(facts),
    parameters: descriptor.parameters,
    hints: descriptor.hints,
  };
}

/**
 * nbagent as a pi-coding-agent extension (docs/pi.md): the tools' descriptors registered with pi, drawn
 * by src/render through pi's renderCall/renderResult, updated live while cells run; pi's abort
 * (Esc) is the call's abort signal, which interrupts the kernel; the kernels shut down when pi ends
 * the session. A thin adapter: what the tools do and say is theirs (src/tools).
 *
 *   pi -e <nbagent package dir>     or   export { default } from "nbagent/pi";
 */
import type {
  AgentToolResult,
  ExtensionAPI,
  ExtensionContext,
  ToolDefinition,
} from "@mariozechner/pi-coding-agent";
import { resolveSettings } from "../runtime/settings.js";
import { type AnyTool, type DescribedTool, describeTools } from "../tools/index.js";
import { errorText, type ToolResult, unexpectedFailureText } from "../tools/types.js";
import { renderCallComponent, renderResultComponent } from "./render.js";
import { SessionEndedError, SessionToolbox, type SessionToolboxOptions } from "./session-toolbox.js";

export type NbagentExtensionOptions = SessionToolboxOptions;

/** An extension factory with its own toolbox options (kernels, wait time, …). */
export function createNbagentExtension(options: NbagentExtensionOptions = {}) {
  return function nbagent(pi: ExtensionAPI): void {
    // The settings are resolved (and checked) here, once: a bad value stops the extension when it loads.
    const settings = options.settings ?? resolveSettings({}, process.env);
    const session = new SessionToolbox({ ...options, settings });
    // Calls whose result is a tool's Error: text: pi marks a result failed only when execute throws,
    // so the tool_result hook below marks these, keeping their details for the renderer.
    const calls: Calls = { failed: new Set(), running: new Set() };
    const names = new Set<string>();

    // The same descriptors, read statically: no runtime is made until the session's first call.
    for (const described of describeTools({ ...options, settings })) {
      names.add(described.name);
      pi.registerTool(toolDefinition(described, session, calls));
    }

    pi.on("tool_result", (event) => {
      if (names.has(event.toolName) && calls.failed.delete(event.toolCallId)) return { isError: true };
      return undefined;
    });
    pi.on("session_shutdown", () => session.end());
  };
}

/** The calls this extension has going on. */
interface Calls {
  /** Ids of calls whose result is a tool's Error: (until pi's tool_result hook marks them). */
  failed: Set<string>;
  /** Ids of calls still running (their rows keep redrawing). */
  running: Set<string>;
}

function toolDefinition(described: DescribedTool, session: SessionToolbox, calls: Calls): ToolDefinition {
  const { name, descriptor } = described;
  const hooks = { running: (id: string) => calls.running.has(id) };
  return {
    name,
    label: described.label,
    description: described.description,
    parameters: described.parameters as unknown as ToolDefinition["parameters"],
    async execute(toolCallId, params, signal, onUpdate, ctx: ExtensionContext) {
      let tool: AnyTool | undefined;
      try {
        const toolbox = session.get({ cwd: ctx.cwd, sessionFile: ctx.sessionManager.getSessionFile() });
        tool = toolbox.entries.find((e) => e.descriptor === descriptor)?.tool;
      } catch (err) {
        if (err instanceof SessionEndedError) throw new Error(errorText(`${err.message}.`));
        throw err;
      }
      if (!tool) throw new Error(errorText(`the ${name} tool is not in this session's toolbox.`));
      let result: ToolResult;
      calls.running.add(toolCallId);
      try {
        result = await tool.execute(
          toolCallId,
          params,
          signal,
          onUpdate && ((partial: ToolResult) => onUpdate(piResult(partial))),
        );
      } catch (err) {
        throw new Error(unexpectedFailureText(name, err));
      } finally {
        calls.running.delete(toolCallId);
      }
      if (result.isError) calls.failed.add(toolCallId);
      return piResult(result);
    },
    renderCall: (args, theme, context) => renderCallComponent(descriptor, args, theme, context),
    renderResult: (result, options, theme, context) =>
      renderResultComponent(descriptor, result, options, theme, context, hooks),
  };
}

function piResult(result: ToolResult): AgentToolResult<unknown> {
  return { content: result.content, details: result.details };
}

/** The extension with default options: kernels from the local Python, wait time from the env. */
export default createNbagentExtension();

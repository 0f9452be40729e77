/**
 * pi-coding-agent driven as its own modes drive it, with a scripted model (pi-ai's faux provider)
 * instead of a network one: an AgentSessionRuntime whose resource loader loads nbagent by path, as
 * `pi -e <path>` does, and tool rows drawn by pi's own ToolExecutionComponent from the session's
 * events, as interactive mode draws them.
 */
import assert from "node:assert/strict";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stripVTControlCharacters } from "node:util";
import {
  type FauxProviderRegistration,
  type FauxResponseStep,
  fauxAssistantMessage,
  fauxText,
  fauxToolCall,
  registerFauxProvider,
} from "@mariozechner/pi-ai";
import {
  type AgentSessionEvent,
  type AgentSessionRuntime,
  type AgentToolResult,
  AuthStorage,
  createAgentSessionFromServices,
  createAgentSessionRuntime,
  createAgentSessionServices,
  type ExtensionFactory,
  initTheme,
  ModelRegistry,
  SessionManager,
  SettingsManager,
  ToolExecutionComponent,
} from "@mariozechner/pi-coding-agent";

export { ROOT, tempDir } from "../run/helpers.js";

export interface Pi {
  runtime: AgentSessionRuntime;
  faux: FauxProviderRegistration;
  /** Every session event so far, in order. */
  events: AgentSessionEvent[];
  /** Tool rows drawn by pi's component, by tool call id. */
  rows: Map<string, ToolRow>;
  /** The extension's load errors, as pi reported them. */
  loadErrors: string[];
  close(): Promise<void>;
}

export interface ToolRow {
  component: ToolExecutionComponent;
  /** The row's lines at each update (partial results), ANSI stripped. */
  updates: string[][];
}

/**
 * A pi session in `cwd` that loads the extensions at `extensionPaths` (and `extensionFactories`,
 * extensions given as functions, as pi's SDK takes them) and answers with `responses`.
 */
export async function startPi(
  cwd: string,
  extensionPaths: string[],
  responses: FauxResponseStep[] = [],
  extensionFactories: ExtensionFactory[] = [],
): Promise<Pi> {
  initTheme("dark");
  const agentDir = await mkdtemp(join(tmpdir(), "nbagent-pi-agent-"));
  const faux = registerFauxProvider({ provider: `faux-${Math.random().toString(36).slice(2, 8)}` });
  faux.setResponses(responses);
  const authStorage = AuthStorage.inMemory();
  authStorage.setRuntimeApiKey(faux.getModel().provider, "no key: a scripted model");
  const settingsManager = SettingsManager.inMemory({
    compaction: { enabled: false },
    retry: { enabled: false },
  });
  const runtime = await createAgentSessionRuntime(
    async ({ cwd, sessionManager, sessionStartEvent }) => {
      const services = await createAgentSessionServices({
        cwd,
        agentDir,
        authStorage,
        settingsManager,
        modelRegistry: ModelRegistry.inMemory(authStorage),
        resourceLoaderOptions: {
          additionalExtensionPaths: extensionPaths,
          extensionFactories,
          noSkills: true,
          noPromptTemplates: true,
          noThemes: true,
          noContextFiles: true,
        },
      });
      const created = await createAgentSessionFromServices({
        services,
        sessionManager,
        sessionStartEvent,
        model: faux.getModel(),
        thinkingLevel: "off",
      });
      return { ...created, services, diagnostics: services.diagnostics };
    },
    // Sessions saved under the test's agent dir, as pi saves them under ~/.pi/agent/sessions.
    { cwd, agentDir, sessionManager: SessionManager.create(cwd, join(agentDir, "sessions")) },
  );
  const pi: Pi = {
    runtime,
    faux,
    events: [],
    rows: new Map(),
    loadErrors: [],
    async close() {
      await runtime.dispose();
      faux.unregister();
    },
  };
  await bind(pi);
  return pi;
}

/** What pi's modes do with a (new) session: bind its extensions (session_start) and watch its events. */
export async function bind(pi: Pi): Promise<void> {
  const session = pi.runtime.session;
  pi.loadErrors.push(...session.resourceLoader.getExtensions().errors.map((e) => `${e.path}: ${e.error}`));
  await session.bindExtensions({});
  const ui = { requestRender() {} } as unknown as ConstructorParameters<typeof ToolExecutionComponent>[5];
  session.subscribe((event) => {
    pi.events.push(event);
    if (event.type === "tool_execution_start") {
      const component = new ToolExecutionComponent(
        event.toolName,
        event.toolCallId,
        event.args,
        { showImages: false },
        session.getToolDefinition(event.toolName),
        ui,
        session.sessionManager.getCwd(),
      );
      component.markExecutionStarted();
      pi.rows.set(event.toolCallId, { component, updates: [] });
    } else if (event.type === "tool_execution_update") {
      const row = pi.rows.get(event.toolCallId);
      row?.component.updateResult(
        { ...(event.partialResult as AgentToolResult<unknown>), isError: false },
        true,
      );
      row?.updates.push(plain(row.component.render(80)));
    } else if (event.type === "tool_execution_end") {
      pi.rows.get(event.toolCallId)?.component.updateResult({ ...event.result, isError: event.isError });
    }
  });
}

/** A row's lines at `width`, ANSI stripped, trailing blanks and the blank lines around it cut. */
export function drawn(row: ToolRow | undefined, width = 80): string[] {
  if (!row) throw new Error("no such tool row");
  return plain(row.component.render(width));
}

function plain(lines: string[]): string[] {
  const out = lines.map((l) => stripVTControlCharacters(l).trimEnd());
  while (out[0] === "") out.shift();
  while (out.at(-1) === "") out.pop();
  return out;
}

/** The tool result messages of the session so far. */
export function toolResults(pi: Pi) {
  return pi.runtime.session.messages.flatMap((m) => (m.role === "toolResult" ? [m] : []));
}

export function textOf(message: { content: { type: string; text?: string }[] }): string {
  return message.content.map((c) => (c.type === "text" ? c.text : `[${c.type}]`)).join("\n");
}

/** A model that asks the python tool where it runs (the prelude's `read` included), then stops. */
export const whereScript = () => [
  fauxAssistantMessage(
    fauxToolCall("python", { cells: [{ code: "import os\nprint(callable(read), os.getcwd())" }] }),
    { stopReason: "toolUse" },
  ),
  fauxAssistantMessage(fauxText("done")),
];

/**
 * Runs whereScript's prompt in `p`: nbagent loaded, and its python tool answered from a kernel
 * working in `cwd` that found prelude.py (in the installed package). The tool's result.
 */
export async function assertRunsPython(p: Pi, cwd: string) {
  assert.deepEqual(p.loadErrors, []);
  await p.runtime.session.prompt("Where are you?");
  const [result] = toolResults(p);
  assert.equal(result.isError, false, textOf(result));
  assert.equal(textOf(result), `True ${cwd}`);
  return result;
}

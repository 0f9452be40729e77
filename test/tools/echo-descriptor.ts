/**
 * A tool that exists only in tests, registered through the same path as nbagent's own (a descriptor
 * in ToolboxOptions.descriptors): it proves a new descriptor needs no name written anywhere else.
 * It answers with its text, and names an artifact it wrote to the toolbox's real store when asked.
 */
import { writeFileSync } from "node:fs";
import { Type } from "@sinclair/typebox";
import { factsOf, type ToolDescriptor } from "../../src/tools/index.js";

export const ECHO_NAME = "echo_test";

const echoSchema = Type.Object({ text: Type.String(), save: Type.Optional(Type.Boolean()) });

interface EchoDetails {
  artifactId?: string;
}

export const echoDescriptor: ToolDescriptor<{ text: string; save?: boolean }, EchoDetails> = {
  name: ECHO_NAME,
  label: "Echo (test)",
  parameters: echoSchema,
  hints: { readOnlyHint: true, openWorldHint: false },
  describe: (facts) => `Echoes text back (test only; ${facts.limits.maxSessions} kernels kept).`,
  refs: (details) => ({ artifacts: details.artifactId ? [details.artifactId] : [] }),
  create: ({ runtime }) => ({
    name: ECHO_NAME,
    label: "Echo (test)",
    description: echoDescriptor.describe(factsOf(runtime)),
    parameters: echoSchema,
    async execute(_id, params) {
      if (!params.save) return { content: [{ type: "text", text: `echo: ${params.text}` }], details: {} };
      const artifact = runtime.artifacts.create("echo");
      writeFileSync(artifact.path, `${params.text}\n`, { mode: 0o600, flag: "wx" });
      return {
        content: [{ type: "text", text: `echo: ${params.text}; all of it: ${artifact.uri}` }],
        details: { artifactId: artifact.id },
      };
    },
  }),
};

/**
 * What the package says about itself stays in step: server.json (the MCP registry's entry) names
 * package.json's package, version and command, and every environment variable the server reads;
 * CHANGELOG.md's newest section is package.json's version; the README's MCP client set-ups run the
 * command server.json describes. (That the installed command prints this version, and that the
 * packed package loads everywhere, is test/package/install.stress.test.ts.)
 */
import assert from "node:assert/strict";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";

const ROOT = new URL("../..", import.meta.url).pathname;
const read = (file: string) => readFileSync(join(ROOT, file), "utf8");

interface KeyValueInput {
  name: string;
  description?: string;
  isSecret?: boolean;
  choices?: string[];
  format?: string;
}
interface ServerJson {
  $schema: string;
  name: string;
  description: string;
  version: string;
  packages: {
    registryType: string;
    registryBaseUrl?: string;
    identifier: string;
    version: string;
    transport: { type: string };
    packageArguments?: { type: string; value?: string }[];
    environmentVariables?: KeyValueInput[];
  }[];
}

/** The editors' variable for the open project's folder (in their own syntax, not a template here). */
const WORKSPACE_FOLDER = ["$", "{workspaceFolder}"].join("");

const pkg = JSON.parse(read("package.json")) as {
  name: string;
  version: string;
  mcpName?: string;
  bin: Record<string, string>;
  files: string[];
};
const server = JSON.parse(read("server.json")) as ServerJson;

/**
 * NBAGENT_* names in src/ that are not settings of the stdio server the registry entry runs, each
 * with the reason; every other name src/ mentions must be in server.json.
 */
const NOT_SERVER_SETTINGS: Record<string, string> = {
  NBAGENT_MCP_TOKEN: "nbagent mcp --http only (the registry entry is stdio)",
  NBAGENT_MCP_ALLOW_HOSTS: "nbagent mcp --http only",
  NBAGENT_MCP_MAX_SESSIONS: "nbagent mcp --http only",
  NBAGENT_MCP_MAX_KERNELS: "nbagent mcp --http only",
  NBAGENT_MCP_IDLE_MINUTES: "nbagent mcp --http only",
  NBAGENT_IMAGES: "the terminal views of the CLI and pi, not the MCP server",
  NBAGENT_ARTIFACTS: "set for the kernels, not read",
  NBAGENT_SESSION_FILE: "set for the kernels, not read",
  NBAGENT_ISOLATION: "a line the kernel's wrapper prints, not a variable",
  NBAGENT_GATEWAY_TOKEN_FOR_SERVER: "passed by nbagent to the local gateway it starts",
};

function sourceFiles(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) sourceFiles(path, out);
    else if (name.endsWith(".ts")) out.push(path);
  }
  return out;
}

test("server.json describes package.json's package, version and command, as the registry's schema asks", () => {
  assert.match(
    server.$schema,
    /^https:\/\/static\.modelcontextprotocol\.io\/schemas\/\d{4}-\d{2}-\d{2}\/server\.schema\.json$/,
  );
  // reverse-DNS name with one slash; the registry checks npm ownership by package.json's mcpName
  assert.match(server.name, /^io\.github\.[a-zA-Z0-9-]+\/[a-zA-Z0-9._-]+$/);
  assert.equal(pkg.mcpName, server.name);
  assert.ok(server.description.length >= 1 && server.description.length <= 100, server.description);
  assert.equal(server.version, pkg.version);
  assert.equal(server.packages.length, 1);
  const [npm] = server.packages;
  assert.equal(npm.registryType, "npm");
  assert.equal(npm.registryBaseUrl, "https://registry.npmjs.org");
  assert.equal(npm.identifier, pkg.name);
  assert.equal(npm.version, pkg.version);
  assert.deepEqual(npm.transport, { type: "stdio" });
  // `npx nbagent mcp`: the package's one command, with the mcp subcommand
  assert.deepEqual(Object.keys(pkg.bin), [pkg.name]);
  assert.deepEqual(npm.packageArguments, [{ type: "positional", value: "mcp" }]);
  for (const v of npm.environmentVariables ?? []) {
    assert.ok(v.description && v.description.length > 10, `${v.name}: a description`);
    assert.equal(v.isSecret === true, /TOKEN/.test(v.name), `${v.name}: isSecret exactly for tokens`);
  }
});

test("server.json lists every environment variable the server reads, and only those", () => {
  const named = new Set<string>();
  for (const file of sourceFiles(join(ROOT, "src")))
    for (const m of readFileSync(file, "utf8").matchAll(/\bNBAGENT_[A-Z0-9_]+\b/g)) named.add(m[0]);
  const read = [...named].filter((n) => !(n in NOT_SERVER_SETTINGS)).sort();
  const listed = (server.packages[0].environmentVariables ?? []).map((v) => v.name).sort();
  assert.deepEqual(listed, read);
  for (const n of Object.keys(NOT_SERVER_SETTINGS)) assert.ok(named.has(n), `${n} is no longer in src/`);
});

test("CHANGELOG.md's newest version is package.json's, and the package ships it", () => {
  const versions = [...read("CHANGELOG.md").matchAll(/^## (\d+\.\d+\.\d+\S*)/gm)].map((m) => m[1]);
  assert.ok(versions.length > 0, "no version section");
  assert.equal(versions[0], pkg.version);
  assert.ok(pkg.files.includes("CHANGELOG.md"));
});

test("the README's MCP client set-ups run the command server.json describes", () => {
  const readme = read("README.md");
  const mcp = readme.slice(readme.indexOf("\n## MCP\n"), readme.indexOf("\n## Use in pi\n"));
  const command = pkg.name;
  const args = (server.packages[0].packageArguments ?? []).map((a) => a.value);
  /** The first fenced block after a client's bold heading. */
  const block = (client: string, lang: string) => {
    const at = mcp.indexOf(`**${client}**`);
    assert.ok(at >= 0, `no ${client} set-up`);
    const m = mcp.slice(at).match(new RegExp(`\`\`\`${lang}\\n([\\s\\S]*?)\`\`\``));
    assert.ok(m, `no ${lang} block for ${client}`);
    return m[1];
  };
  const startsWithArgs = (given: string[], client: string) =>
    assert.deepEqual(given.slice(0, args.length), args, `${client}: ${given.join(" ")}`);

  const claude = block("Claude Code", "sh").match(/^claude mcp add (\S+) -- (\S+) (.*?)\s*(#.*)?$/m);
  assert.ok(claude);
  assert.equal(claude[2], command);
  startsWithArgs(claude[3].split(/\s+/), "Claude Code");

  const cursor = JSON.parse(block("Cursor", "json")).mcpServers.nbagent;
  assert.equal(cursor.command, command);
  startsWithArgs(cursor.args, "Cursor");
  const vscode = JSON.parse(block("VS Code", "json")).servers.nbagent;
  assert.equal(vscode.type, server.packages[0].transport.type);
  assert.equal(vscode.command, command);
  startsWithArgs(vscode.args, "VS Code");
  // Cursor starts servers outside the project: both editors hand it over as --cwd
  for (const [client, c] of [
    ["Cursor", cursor],
    ["VS Code", vscode],
  ])
    assert.deepEqual(c.args.slice(args.length), ["--cwd", WORKSPACE_FOLDER], client);

  const codex = block("Codex", "toml");
  assert.match(codex, /^\[mcp_servers\.nbagent\]$/m);
  assert.equal(codex.match(/^command = "(.*)"$/m)?.[1], command);
  startsWithArgs(JSON.parse(codex.match(/^args = (\[.*\])$/m)?.[1] ?? "[]"), "Codex");
  assert.match(mcp, new RegExp(`codex mcp add nbagent -- ${command} ${args.join(" ")}\``));
});

/**
 * The kernel's environment: the host's environment minus its secrets, plus the session's
 * entries (PI_SESSION_FILE / ARTIFACTS and the NBAGENT_ spellings of both). The rules, with the
 * reasons and the names that must pass, are in docs/secrets.md.
 *
 * Secrets never reach a kernel: code run there is written by a model, and its output goes back to
 * the model. A variable is withheld when its NAME looks like a secret's (matched by its parts:
 * `npm_config__authToken` → npm, config, auth, token) or its VALUE carries a credential (a URL with
 * `user:password@`, a secret query parameter, a well-known token shape, a private key), unless the
 * host lets it through: the `allow` option or NBAGENT_ALLOW_ENV (comma-separated names or globs).
 * What was withheld is reported by name (never by value) so the tools can tell the model once.
 */

/** Whole-name globs (case-insensitive, `*` = any run of characters) withheld besides the part rules. */
export const SECRET_NAME_PATTERNS: readonly string[] = [
  "DATABASE_URL",
  "*_DATABASE_URL",
  "REDIS_URL",
  "MONGODB_URI",
  "GPG_AGENT_INFO",
];

/** The host variable that lets named variables through (comma-separated names or globs). */
export const ALLOW_ENV_VARIABLE = "NBAGENT_ALLOW_ENV";

/**
 * nbagent's own credentials (the gateway's token, the MCP server's): given to nbagent, not to the
 * code it runs, so never passed to a kernel — and not reported as withheld, which would invite the
 * user to let them through (docs/secrets.md).
 */
export const OWN_CREDENTIALS: readonly string[] = ["NBAGENT_GATEWAY_TOKEN", "NBAGENT_MCP_TOKEN"];

/** A part that is a secret by itself (`MYSQL_PWD`, `GH_PAT`, `DB_PASS`, `CSRF_TOKEN`). */
const SECRET_WORDS = new Set([
  "token",
  "secret",
  "secrets",
  "password",
  "passwd",
  "passphrase",
  "pwd",
  "pass",
  "pgpass",
  "pat",
  "credential",
  "credentials",
  "creds",
]);

/** Words that make a secret also at the end of a run-together part (PGPASSWORD, NGROK_AUTHTOKEN). */
const SECRET_SUFFIXES = ["token", "secret", "password", "passwd", "passphrase", "credential", "credentials"];

/** KEY is a secret after these (API_KEY, AWS_ACCESS_KEY_ID), also run together (APIKEY, SECRETKEY). */
const KEY_QUALIFIERS = [
  "api",
  "access",
  "secret",
  "private",
  "session",
  "auth",
  "signing",
  "sign",
  "encryption",
  "encrypt",
  "master",
  "client",
  "consumer",
  "account",
  "storage",
  "service",
  "subscription",
  "license",
  "deploy",
  "hmac",
  "webhook",
  "app",
  "admin",
  "kaggle",
  "ssh",
];

/** A final KEY that names no secret (GPG_KEY is a fingerprint in Python's Docker images). */
const HARMLESS_KEY_QUALIFIERS = new Set([
  "gpg",
  "pgp",
  "public",
  "pub",
  "sort",
  "cache",
  "primary",
  "partition",
  "foreign",
  "hot",
  "routing",
  "idempotency",
]);

/** AUTH is a secret when last (BASIC_AUTH, npm's _auth) or followed by these (DOCKER_AUTH_CONFIG). */
const AUTH_FOLLOWERS = new Set([
  "config",
  "header",
  "headers",
  "string",
  "data",
  "json",
  "cookie",
  "value",
  "sock",
  "socket",
]);

/** A secret word followed (later in the name) by one of these names something about a secret (TOKEN_URL). */
const NOT_A_VALUE = new Set([
  "url",
  "uri",
  "endpoint",
  "type",
  "kind",
  "mode",
  "algorithm",
  "alg",
  "limit",
  "count",
  "size",
  "length",
  "len",
  "min",
  "max",
  "ttl",
  "expiry",
  "expires",
  "expiration",
  "lifetime",
  "timeout",
  "prefix",
  "helper",
  "provider",
]);

/**
 * A variable name's parts, lower-case: split on `_`, `-`, `.` and camelCase humps, trailing digits
 * dropped (`npm_config__authToken` → npm, config, auth, token; `PASSWORD2` → password).
 */
export function nameParts(name: string): string[] {
  return name
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .replace(/([A-Z]+)([A-Z][a-z])/g, "$1 $2")
    .split(/[^A-Za-z0-9]+/)
    .map((p) => p.toLowerCase().replace(/\d+$/, ""))
    .filter((p) => p.length > 0);
}

function isKeyPart(p: string): boolean {
  return p === "key" || p === "keys";
}

/** The part at i is a secret on its own (before the NOT_A_VALUE check). */
function secretPartAt(parts: string[], i: number): boolean {
  const p = parts[i];
  const last = i === parts.length - 1;
  const prev = parts[i - 1];
  const next = parts[i + 1];
  if (SECRET_WORDS.has(p)) return true;
  if (SECRET_SUFFIXES.some((w) => p.endsWith(w) && p.length > w.length)) return true;
  if (KEY_QUALIFIERS.some((q) => p === `${q}key` || p === `${q}keys` || p.endsWith(`${q}key`))) return true;
  if (isKeyPart(p)) {
    if (last) return prev === undefined || !HARMLESS_KEY_QUALIFIERS.has(prev);
    return prev !== undefined && KEY_QUALIFIERS.includes(prev);
  }
  if (p === "auth") return last || (next !== undefined && AUTH_FOLLOWERS.has(next));
  if (p === "jwt" || p === "cookie" || p === "cookies" || p === "dsn") return last;
  if (p === "webhook" || p === "connstr" || p === "connectionstring") return true;
  if ((p === "connection" || p === "conn") && (next === "string" || next === "str")) return true;
  return false;
}

/** The name alone says the value is a secret (the part rules of docs/secrets.md). */
export function isSecretName(name: string): boolean {
  if (name.toUpperCase() === "PWD") return false; // the shell's working directory
  const parts = nameParts(name);
  for (let i = 0; i < parts.length; i++) {
    if (!secretPartAt(parts, i)) continue;
    if (parts[i] !== "webhook" && parts.slice(i + 1).some((p) => NOT_A_VALUE.has(p))) continue;
    return true;
  }
  return false;
}

/** Token shapes issued by well-known services, and private keys: secret whatever the name. */
const TOKEN_SHAPES: readonly RegExp[] = [
  /(?<![A-Za-z0-9])gh[pousr]_[A-Za-z0-9]{30,}/,
  /(?<![A-Za-z0-9])github_pat_[A-Za-z0-9_]{30,}/,
  /(?<![A-Za-z0-9])glpat-[A-Za-z0-9_-]{20,}/,
  /(?<![A-Za-z0-9])xox[abposr]-[A-Za-z0-9-]{10,}/,
  /(?<![A-Za-z0-9])sk-[A-Za-z0-9_-]{20,}/,
  /(?<![A-Za-z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}(?![A-Za-z0-9])/,
  /(?<![A-Za-z0-9])hf_[A-Za-z0-9]{30,}/,
  /(?<![A-Za-z0-9])npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])/,
  /(?<![A-Za-z0-9])pypi-[A-Za-z0-9_-]{50,}/,
  /(?<![A-Za-z0-9])AIza[0-9A-Za-z_-]{35}/,
  /(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]+/,
  /-----BEGIN [A-Z ]*PRIVATE KEY-----/,
  /\bBearer\s+[A-Za-z0-9._~+/-]{16,}/,
];

/** scheme://user:password@ — a password (or token) in a URL's userinfo. */
const URL_WITH_PASSWORD = /[A-Za-z][A-Za-z0-9+.-]*:\/\/[^\s/?#@:]*:[^\s/?#@]*[^\s/?#@:][^\s/?#@]*@/;

/**
 * `name=value` settings inside a value: URL query parameters (`?access_token=…`), libpq DSNs
 * (`host=h password=p`), JVM options (`-Dhttps.proxyPassword=p`), `--token=…` flags.
 */
const SETTING = /(?:^|[?&\s;,])-{0,2}([A-Za-z0-9_.-]+)=[^&#\s;,]/g;

/** The value carries a credential: a password in a URL, a secret-named setting, a token shape. */
export function valueCarriesSecret(value: string): boolean {
  if (URL_WITH_PASSWORD.test(value)) return true;
  for (const m of value.matchAll(SETTING)) {
    const name = m[1].toLowerCase();
    if (name === "sig" || name === "signature" || name.endsWith("-signature")) return true;
    if (isSecretName(m[1])) return true;
  }
  return TOKEN_SHAPES.some((re) => re.test(value));
}

function globToRegExp(pattern: string): RegExp {
  const body = pattern
    .split("*")
    .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, "\\$&"))
    .join(".*");
  return new RegExp(`^${body}$`, "i");
}

/** NBAGENT_ALLOW_ENV's names or globs (comma-separated; blanks ignored). */
export function allowFromEnv(env: NodeJS.ProcessEnv): string[] {
  return (env[ALLOW_ENV_VARIABLE] ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

export interface SecretFilterOptions {
  /** Names or globs that pass even when they look like secrets (added to NBAGENT_ALLOW_ENV's). */
  allow?: readonly string[];
  /** Extra name globs to withhold. */
  deny?: readonly string[];
}

/** A predicate: true when a variable of this name (and value, when given) must not reach a kernel. */
export function secretMatcher(options: SecretFilterOptions = {}): (name: string, value?: string) => boolean {
  const deny = [...SECRET_NAME_PATTERNS, ...(options.deny ?? [])].map(globToRegExp);
  const allow = (options.allow ?? []).map(globToRegExp);
  return (name, value) => {
    if (allow.some((re) => re.test(name))) return false;
    if (isSecretName(name) || deny.some((re) => re.test(name))) return true;
    return value !== undefined && valueCarriesSecret(value);
  };
}

/** The host environment split: what a kernel gets, and the names withheld (sorted). */
export interface FilteredEnv {
  env: Record<string, string>;
  withheld: string[];
}

/** Splits the host env; NBAGENT_ALLOW_ENV in it adds to `allow`. Undefined values are dropped. */
export function splitSecrets(env: NodeJS.ProcessEnv, options: SecretFilterOptions = {}): FilteredEnv {
  const isSecret = secretMatcher({ ...options, allow: [...(options.allow ?? []), ...allowFromEnv(env)] });
  const out: Record<string, string> = {};
  const withheld: string[] = [];
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined || OWN_CREDENTIALS.includes(name)) continue;
    if (isSecret(name, value)) withheld.push(name);
    else out[name] = value;
  }
  return { env: out, withheld: withheld.sort() };
}

/** The host environment without secrets (and without undefined values). */
export function filterSecrets(
  env: NodeJS.ProcessEnv,
  options: SecretFilterOptions = {},
): Record<string, string> {
  return splitSecrets(env, options).env;
}

/** The session's own entries, in both the original's and nbagent's spelling. */
export function sessionEnv(sessionFile: string, artifactsDir: string): Record<string, string> {
  return {
    PI_SESSION_FILE: sessionFile,
    ARTIFACTS: artifactsDir,
    NBAGENT_SESSION_FILE: sessionFile,
    NBAGENT_ARTIFACTS: artifactsDir,
  };
}

export interface KernelEnvOptions extends SecretFilterOptions {
  /** The host's environment, captured at the edge (Settings.env). */
  hostEnv: NodeJS.ProcessEnv;
  sessionFile: string;
  artifactsDir: string;
  /** Set explicitly by the host; not filtered (the host chose them). */
  extra?: Record<string, string>;
}

/** A kernel's environment and the host variables withheld from it (names only). */
export interface KernelEnv {
  env: Record<string, string>;
  withheld: string[];
}

/** Environment for a kernel process: filtered host env + explicit extras + session entries. */
export function buildKernelEnv(options: KernelEnvOptions): KernelEnv {
  const host = splitSecrets(options.hostEnv, options);
  const env = {
    ...host.env,
    ...(options.extra ?? {}),
    ...sessionEnv(options.sessionFile, options.artifactsDir),
  };
  return { env, withheld: host.withheld.filter((name) => !(name in env)) };
}

/** Environment for a kernel process (buildKernelEnv's env). */
export function kernelEnv(options: KernelEnvOptions): Record<string, string> {
  return buildKernelEnv(options).env;
}

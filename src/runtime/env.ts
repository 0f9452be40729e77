/**
 * The kernel's environment (S23–S24): the host's environment minus its secrets, plus the session's
 * entries (PI_SESSION_FILE / ARTIFACTS and the NBAGENT_ spellings of both).
 *
 * Secrets never reach a kernel: code run there is written by a model, and its output goes back to
 * the model. A variable is dropped when its name matches a DENY pattern (case-insensitive globs, `*`
 * = any run of characters) unless it matches an allow pattern given by the host:
 *
 * - generic credential shapes: *_API_KEY, *_APIKEY, *_ACCESS_KEY, *_SECRET_KEY, *_PRIVATE_KEY,
 *   *_TOKEN, *_SECRET, *SECRET*, *PASSWORD*, *PASSWD*, *_PASS, *CREDENTIAL*, *_AUTH, *_SESSION_KEY;
 * - cloud and model vendors whose whole prefix is credentials or account config: AWS_*, AZURE_*,
 *   GOOGLE_APPLICATION_CREDENTIALS, GCP_*, GCLOUD_*, ANTHROPIC_*, OPENAI_*, GEMINI_*, GROQ_*,
 *   MISTRAL_*, COHERE_*, DEEPSEEK_*, OPENROUTER_*, XAI_*, HF_TOKEN, HUGGING_FACE_HUB_TOKEN;
 * - forges, registries, chat and payment services: GITHUB_TOKEN, GH_TOKEN, GITLAB_*, NPM_TOKEN,
 *   NODE_AUTH_TOKEN, PYPI_*, TWINE_*, SLACK_*, STRIPE_*, TWILIO_*, SENDGRID_*;
 * - connection strings that embed passwords: DATABASE_URL, *_DATABASE_URL, *_DSN, REDIS_URL, MONGODB_URI;
 * - agent sockets that grant access: SSH_AUTH_SOCK, GPG_AGENT_INFO.
 *
 * `allow` (e.g. ["AWS_REGION", "AWS_PROFILE"]) lets named variables through; `deny` adds patterns.
 */

export const SECRET_DENY_PATTERNS: readonly string[] = [
  "*_API_KEY",
  "*_APIKEY",
  "*_ACCESS_KEY",
  "*_SECRET_KEY",
  "*_PRIVATE_KEY",
  "*_TOKEN",
  "*_SECRET",
  "*SECRET*",
  "*PASSWORD*",
  "*PASSWD*",
  "*_PASS",
  "*CREDENTIAL*",
  "*_AUTH",
  "*_SESSION_KEY",
  "AWS_*",
  "AZURE_*",
  "GOOGLE_APPLICATION_CREDENTIALS",
  "GCP_*",
  "GCLOUD_*",
  "ANTHROPIC_*",
  "OPENAI_*",
  "GEMINI_*",
  "GROQ_*",
  "MISTRAL_*",
  "COHERE_*",
  "DEEPSEEK_*",
  "OPENROUTER_*",
  "XAI_*",
  "HF_TOKEN",
  "HUGGING_FACE_HUB_TOKEN",
  "GITHUB_TOKEN",
  "GH_TOKEN",
  "GITLAB_*",
  "NPM_TOKEN",
  "NODE_AUTH_TOKEN",
  "PYPI_*",
  "TWINE_*",
  "SLACK_*",
  "STRIPE_*",
  "TWILIO_*",
  "SENDGRID_*",
  "DATABASE_URL",
  "*_DATABASE_URL",
  "*_DSN",
  "REDIS_URL",
  "MONGODB_URI",
  "SSH_AUTH_SOCK",
  "GPG_AGENT_INFO",
];

function globToRegExp(pattern: string): RegExp {
  const body = pattern
    .split("*")
    .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, "\\$&"))
    .join(".*");
  return new RegExp(`^${body}$`, "i");
}

export interface SecretFilterOptions {
  /** Names or globs that pass even when a deny pattern matches. */
  allow?: readonly string[];
  /** Extra deny patterns. */
  deny?: readonly string[];
}

/** A predicate: true when a variable of this name must not reach a kernel. */
export function secretMatcher(options: SecretFilterOptions = {}): (name: string) => boolean {
  const deny = [...SECRET_DENY_PATTERNS, ...(options.deny ?? [])].map(globToRegExp);
  const allow = (options.allow ?? []).map(globToRegExp);
  return (name) => deny.some((re) => re.test(name)) && !allow.some((re) => re.test(name));
}

/** The host environment without secrets (and without undefined values). */
export function filterSecrets(
  env: NodeJS.ProcessEnv,
  options: SecretFilterOptions = {},
): Record<string, string> {
  const isSecret = secretMatcher(options);
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (value !== undefined && !isSecret(name)) out[name] = value;
  }
  return out;
}

/** The session's own entries, in both the original's and nbagent's spelling (S23). */
export function sessionEnv(sessionFile: string, artifactsDir: string): Record<string, string> {
  return {
    PI_SESSION_FILE: sessionFile,
    ARTIFACTS: artifactsDir,
    NBAGENT_SESSION_FILE: sessionFile,
    NBAGENT_ARTIFACTS: artifactsDir,
  };
}

export interface KernelEnvOptions extends SecretFilterOptions {
  hostEnv?: NodeJS.ProcessEnv;
  sessionFile: string;
  artifactsDir: string;
  /** Set explicitly by the host; not filtered (the host chose them). */
  extra?: Record<string, string>;
}

/** Environment for a kernel process: filtered host env + explicit extras + session entries. */
export function kernelEnv(options: KernelEnvOptions): Record<string, string> {
  return {
    ...filterSecrets(options.hostEnv ?? process.env, options),
    ...(options.extra ?? {}),
    ...sessionEnv(options.sessionFile, options.artifactsDir),
  };
}

/**
 * The kernel backends a backend-independent suite runs on: `for (const backend of backendCases())
 * describe(backend.name, …)`. "local" is the ZeroMQ backend; "gateway" is a GatewayBackend on a real
 * jupyter_server: the one the test runner started for the whole run (sharedServer), or else one this
 * file starts (once, on first use, with a token and a temporary root dir).
 * NBAGENT_TEST_BACKENDS (default "local,gateway") picks which cases run.
 */
import { readFileSync } from "node:fs";
import {
  type ConnectedKernel,
  createLocalBackend,
  GatewayBackend,
  type KernelBackend,
  type KernelStartOptions,
  type LocalBackendOptions,
} from "../src/kernel/index.js";
import { localBackendOptions } from "../src/runtime/settings.js";
import { type JupyterServerHandle, startJupyterServer } from "./gateway/helpers.js";
import { testSettings } from "./settings.js";

export type BackendName = "local" | "gateway";

/** Both backends hand out ConnectedKernels (the shared lifecycle): tests may use its extras. */
export type TestBackend = Omit<KernelBackend, "startKernel"> & {
  startKernel(o: KernelStartOptions): Promise<ConnectedKernel>;
};

export interface BackendCase {
  readonly name: BackendName;
  /**
   * A new backend of this kind (the gateway case starts its server on the first call and reuses it).
   * Local-only options (interrupt mode, interpreter) are ignored by the gateway case.
   */
  create(options?: LocalBackendOptions): Promise<TestBackend>;
  /** Disposes every backend created here and stops the server, if this file started one. */
  dispose(): Promise<void>;
}

export const ALL_BACKENDS: readonly BackendName[] = ["local", "gateway"];

/**
 * The backend names NBAGENT_TEST_BACKENDS selects (comma-separated; when unset, NBAGENT_TEST_BACKEND,
 * the single-backend switch of test/gateway/helpers.ts, is honoured too). Unknown names are an
 * error, not silently skipped.
 */
export function selectedBackends(env: NodeJS.ProcessEnv = process.env): BackendName[] {
  const raw = (env.NBAGENT_TEST_BACKENDS || env.NBAGENT_TEST_BACKEND)?.trim();
  if (!raw) return [...ALL_BACKENDS];
  const names = raw
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  for (const n of names)
    if (!ALL_BACKENDS.includes(n as BackendName))
      throw new Error(`NBAGENT_TEST_BACKENDS: unknown backend "${n}" (known: ${ALL_BACKENDS.join(", ")})`);
  return names as BackendName[];
}

export function backendCases(): BackendCase[] {
  return selectedBackends().map((name) => (name === "local" ? localCase() : gatewayCase()));
}

function localCase(): BackendCase {
  const created: TestBackend[] = [];
  return {
    name: "local",
    async create(options) {
      const b = createLocalBackend({ ...localBackendOptions(testSettings()), ...options });
      created.push(b);
      return b;
    },
    async dispose() {
      await Promise.all(created.splice(0).map((b) => b.dispose()));
    },
  };
}

/**
 * jupyter_server drops IOPub messages beyond 1 MB/s or 1000 messages/s by default (it sends one
 * "IOPub data rate exceeded" notice on stderr instead). nbagent hands every byte to the model or an
 * artifact, so the servers here run with both limits off, as a gateway for nbagent must.
 */
export const NO_IOPUB_RATE_LIMIT = [
  "--ServerApp.iopub_data_rate_limit=0",
  "--ServerApp.iopub_msg_rate_limit=0",
];

/**
 * The jupyter_server the test runner started for this run (scripts/test.mjs: one for every test
 * process, with the arguments above, under a lifeline), when there is one. Its address comes in a
 * file named by NBAGENT_TEST_JUPYTER_SERVER, not in variables: kernels inherit the test's environment,
 * and a token there would be withheld from them with a note in every first result (docs/secrets.md).
 */
export function sharedServer(
  env: NodeJS.ProcessEnv = process.env,
): { url: string; token: string } | undefined {
  const file = env.NBAGENT_TEST_JUPYTER_SERVER;
  if (!file) return undefined;
  const { url, token } = JSON.parse(readFileSync(file, "utf8")) as { url: string; token: string };
  return { url, token };
}

function gatewayCase(): BackendCase {
  const created: GatewayBackend[] = [];
  let server: Promise<JupyterServerHandle> | undefined;
  const shared = sharedServer();
  // Nothing here keeps the event loop alive while a test awaits a gateway kernel (a shared server is
  // not this process's child): the product's own waits must, or node ends the file with "Promise
  // resolution is still pending" (test/tools/python.test.ts, a cell that kills its kernel, caught a
  // shutdown wait that did not).
  return {
    name: "gateway",
    async create() {
      let s: { url: string; token: string } | undefined = shared;
      if (!s) {
        server ??= startJupyterServer({ args: NO_IOPUB_RATE_LIMIT });
        s = await server;
      }
      const b = new GatewayBackend({ url: s.url, token: s.token });
      created.push(b);
      return b;
    },
    async dispose() {
      await Promise.all(created.splice(0).map((b) => b.dispose()));
      const s = server;
      server = undefined;
      if (s) await (await s.catch(() => undefined))?.stop();
    },
  };
}

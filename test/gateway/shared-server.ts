/**
 * The jupyter_server of one test run: scripts/test.mjs starts this with a pipe on stdin, reads one
 * JSON line {url, token} from stdout and hands it to the test processes (NBAGENT_TEST_JUPYTER_URL,
 * NBAGENT_TEST_JUPYTER_TOKEN; test/backends.ts). The server stops when stdin ends — the runner is
 * done, or gone however it went — or on SIGTERM/SIGINT; it runs under a lifeline of this process
 * (test/gateway/helpers.ts), so it dies with this process too.
 */
import { NO_IOPUB_RATE_LIMIT } from "../backends.js";
import { startJupyterServer } from "./helpers.js";

const server = await startJupyterServer({ args: NO_IOPUB_RATE_LIMIT });
process.stdout.write(
  `${JSON.stringify({ url: server.url, token: server.token, rootDir: server.rootDir })}\n`,
);
let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  await server.stop();
  process.exit(0);
};
process.stdin.on("data", () => {});
process.stdin.on("end", stop);
process.stdin.on("close", stop);
process.stdin.on("error", stop);
process.on("SIGTERM", stop);
process.on("SIGINT", stop);

/**
 * The jupyter_server of one test run: scripts/test.mjs starts this under test/lifeline.mjs, reads one
 * JSON line {url, token} from stdout and hands it to the test processes (NBAGENT_TEST_JUPYTER_SERVER;
 * test/backends.ts). The lifeline sends SIGTERM when the runner is done
 * or gone, however it went: then the server stops. The server runs under a lifeline of this process
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
process.on("SIGTERM", stop);
process.on("SIGINT", stop);

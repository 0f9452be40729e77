/**
 * `nbagent view [--port N] [--no-open]` (docs/view.md): serves, on 127.0.0.1, what every nbagent
 * process of the user does (their view sockets, watched as hosts come and go), and prints the URL
 * with its token as the first line of stdout. Ctrl-C stops it.
 */
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { packageRoot } from "../assets.js";
import { lowerOwnPriority } from "../sys/priority.js";
import { viewSocketDir } from "../view/host.js";
import { ViewHub } from "../view/hub.js";
import { createViewServer } from "../view/server.js";
import type { Command } from "./command.js";

const HELP = `nbagent view — watch and steer every nbagent process of yours, live, in the browser

usage: nbagent view [--port N] [--no-open]

Serves a page on 127.0.0.1 showing every nbagent host of this user on this machine (MCP servers,
batch, call, pi): its kernels and sessions, runs, tool calls with the exact text the model got, the
output of running cells; a person can interrupt a cell or run and restart a kernel from it (the
agent's next result says it came from the view). The first line of stdout is the URL, with a token
(the page then keeps it in a cookie). It runs at a lower priority (nice 10) once it serves: on a
busy machine the kernels and agents it watches come first. Ctrl-C stops it.

options:
  --port N     the port (default 0: any free port)
  --no-open    do not open a browser

exit: 0 when stopped by Ctrl-C/SIGTERM, 2 on bad usage, 1 when it cannot serve.

example:
  nbagent view --no-open      # prints http://127.0.0.1:<port>/?token=<token>
`;

/** The nice value `nbagent view` runs at: a watcher yields to the work it watches (docs/view.md "Cost"). */
export const VIEW_NICE = 10;

export const viewCommand: Command = {
  help: HELP,
  async run(args) {
    let port: number;
    let open: boolean;
    try {
      const { values } = parseArgs({
        args,
        options: { port: { type: "string" }, "no-open": { type: "boolean" } },
      });
      port = values.port === undefined ? 0 : Number(values.port);
      if (!Number.isInteger(port) || port < 0 || port > 65535)
        throw new Error(`--port takes a port number 0-65535 (got ${values.port})`);
      open = values["no-open"] !== true;
    } catch (err) {
      process.stderr.write(
        `nbagent view: ${(err as Error).message}\nusage: nbagent view [--port N] [--no-open]\n`,
      );
      return 2;
    }
    const dir = viewSocketDir();
    if (!dir) {
      process.stderr.write(
        "nbagent view: Error: no socket root (/tmp/nbagent-ipc-<uid>, a 0700 folder of yours) to find the hosts in\n",
      );
      return 1;
    }
    const hub = new ViewHub(dir);
    hub.start();
    const token = randomBytes(24).toString("hex");
    const root = packageRoot();
    const server = createViewServer({
      hub,
      token,
      pageDir: root ? join(root, "dist", "view", "page") : undefined,
    });
    try {
      await new Promise<void>((resolve, reject) => {
        server.once("error", reject);
        server.listen(port, "127.0.0.1", () => resolve());
      });
    } catch (err) {
      hub.close();
      process.stderr.write(
        `nbagent view: Error: cannot listen on 127.0.0.1:${port}: ${(err as Error).message}\n`,
      );
      return 1;
    }
    const address = server.address();
    const url = `http://127.0.0.1:${typeof address === "object" && address ? address.port : port}/?token=${token}`;
    process.stdout.write(`${url}\n`);
    if (open) openBrowser(url);
    // After the browser is started (it must not inherit it): the view takes the CPU the kernels and
    // hosts leave (docs/view.md "Cost").
    lowerOwnPriority(VIEW_NICE);
    await new Promise<void>((resolve) => {
      process.once("SIGINT", resolve);
      process.once("SIGTERM", resolve);
    });
    hub.close();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    return 0;
  },
};

/** Opens the URL in a browser when the machine has a way to (xdg-open, open); quietly nothing otherwise. */
function openBrowser(url: string): void {
  const cmd = process.platform === "darwin" ? "open" : "xdg-open";
  try {
    const child = spawn(cmd, [url], { stdio: "ignore", detached: true });
    child.on("error", () => {});
    child.unref();
  } catch {
    // no browser here: the URL is printed
  }
}

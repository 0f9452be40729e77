/**
 * The view socket of a host that may end within milliseconds (`nbagent call`; docs/view.md, "Across
 * processes"): opened only once the host has lived `afterMs`, with every event it had by then, so a
 * viewer that connects sees the call from its start. A call that ends sooner (a notebook read or edit,
 * ~10 ms) is never listed: a host that ends is gone from the page at once, and a short command then
 * does not pay for the socket (node's net and cluster modules, the listen, the view's own modules,
 * several ms of its start; docs/architecture.md, "How the built command starts"). host.ts is loaded only when the socket opens.
 */
import type { StampedEvent } from "../runtime/events.js";
import type { Toolbox } from "../tools/index.js";
import type { ViewHost } from "./host.js";
import type { HostKind } from "./wire.js";

/** How long a short-lived host runs before its socket opens. */
export const VIEW_SOCKET_AFTER_MS = 200;

export interface LaterViewHost {
  /** Closes the socket if it opened (or is opening); nothing opens after this. */
  close(): Promise<void>;
}

export function serveViewSocketLater(
  toolbox: Toolbox,
  kind: HostKind,
  cwd: string,
  afterMs = VIEW_SOCKET_AFTER_MS,
  env: NodeJS.ProcessEnv = process.env,
): LaterViewHost {
  if (env.NBAGENT_VIEW === "0") return { close: async () => {} };
  const earlier: StampedEvent[] = [];
  const stop = toolbox.runtime.events.listen((e) => {
    earlier.push(e);
  });
  let closed = false;
  let opening: Promise<ViewHost | undefined> | undefined;
  const timer = setTimeout(() => {
    stop();
    opening = import("./host.js").then(({ serveViewSocket }) =>
      closed ? undefined : serveViewSocket(toolbox, kind, cwd, env, earlier.splice(0)),
    );
  }, afterMs);
  // The timer alone keeps no process alive.
  timer.unref();
  return {
    async close() {
      closed = true;
      clearTimeout(timer);
      stop();
      const host = await opening?.catch(() => undefined);
      await host?.close();
    },
  };
}

/**
 * TCP ports free right now: the OS picks each (bind to port 0) and they are released before they
 * are returned, so a port may still be taken before its user binds it; the callers handle that race
 * (the launcher and the local gateway start again on "Address already in use").
 */
import { createServer, type Server } from "node:net";

/** The OS gave a listening server no port (it never does for TCP on a host it could bind). */
export class NoFreePortError extends Error {
  constructor() {
    super("no port");
    this.name = "NoFreePortError";
  }
}

/** `count` distinct ports free on `host`: all are held until the last is picked, so none repeats. */
export async function freePorts(count: number, host = "127.0.0.1"): Promise<number[]> {
  const servers: Server[] = [];
  try {
    const ports: number[] = [];
    for (let i = 0; i < count; i++) {
      const server = createServer();
      servers.push(server);
      await new Promise<void>((resolve, reject) => {
        server.once("error", reject);
        server.listen(0, host, () => resolve());
      });
      const addr = server.address();
      if (!addr || typeof addr === "string") throw new NoFreePortError();
      ports.push(addr.port);
    }
    return ports;
  } finally {
    await Promise.all(servers.map((s) => new Promise((r) => s.close(() => r(undefined)))));
  }
}

/** One port free on `host` (default 127.0.0.1). */
export async function freePort(host = "127.0.0.1"): Promise<number> {
  const [port] = await freePorts(1, host);
  return port;
}

/**
 * A server on another host, for tests (docs/backends.md "Across a real network"): a network namespace
 * of the test's own, joined to this one by a veth pair, with a jupyter_server listening on the far
 * address. Between them: a real link that can be cut (`ip link set … down`) and made to lose packets
 * (iptables' `statistic` match in the namespace), and — since this machine's kernel has no `netem`
 * qdisc — a relay on this side that holds every chunk for half the round trip in each direction, so
 * the path has the latency of a distant server. The relay counts HTTP requests and WebSocket opens,
 * so a test can say how many round trips a call took.
 *
 * Needs root and iproute2 (`ip netns`); `netnsProblem()` says why not when it cannot be made.
 */
import { execFileSync } from "node:child_process";
import { randomInt } from "node:crypto";
import net from "node:net";
import { type JupyterServerHandle, type JupyterServerOptions, startJupyterServer } from "./helpers.js";

/** Why a network namespace cannot be made here (undefined: it can). */
export function netnsProblem(): string | undefined {
  if (process.getuid?.() !== 0) return "making a network namespace needs root";
  try {
    execFileSync("ip", ["netns", "list"], { stdio: "ignore" });
  } catch {
    return "iproute2's ip netns is not available";
  }
  try {
    execFileSync("iptables", ["--version"], { stdio: "ignore" });
  } catch {
    return "iptables is not installed (packet loss is made with its statistic match)";
  }
  return undefined;
}

function ip(...args: string[]): void {
  execFileSync("ip", args, { stdio: ["ignore", "ignore", "pipe"] });
}

/** A network namespace joined to this one by a veth pair: a second host, whose link can be cut or made lossy. */
export interface Namespace {
  name: string;
  /** Its address on the link (this side is `near`). */
  far: string;
  near: string;
  /** A command run inside it (`ip netns exec NAME …`), as argv. */
  wrap: string[];
  /** Cuts the link (both directions: the veth goes down) until `restore()`. */
  cut(): void;
  restore(): void;
  /** Drops this share of packets entering and leaving the namespace (0 removes the rule). */
  loss(share: number): void;
  remove(): void;
}

export function makeNamespace(): Namespace {
  const n = randomInt(1, 250);
  const id = `${process.pid % 10000}${n}`;
  const ns = `nbagent-${id}`;
  const nearDev = `nbh${id}`;
  const farDev = `nbs${id}`;
  const subnet = `10.${200 + (n % 50)}.${n}`;
  const far = `${subnet}.2`;
  ip("netns", "add", ns);
  const remove = () => {
    try {
      ip("netns", "del", ns); // takes the veth pair with it
    } catch {
      // already gone
    }
  };
  try {
    ip("link", "add", nearDev, "type", "veth", "peer", "name", farDev);
    ip("link", "set", farDev, "netns", ns);
    ip("addr", "add", `${subnet}.1/24`, "dev", nearDev);
    ip("link", "set", nearDev, "up");
    ip("netns", "exec", ns, "ip", "addr", "add", `${far}/24`, "dev", farDev);
    ip("netns", "exec", ns, "ip", "link", "set", farDev, "up");
    ip("netns", "exec", ns, "ip", "link", "set", "lo", "up");
  } catch (err) {
    remove();
    throw err;
  }
  const rule = (op: "-A" | "-D", chain: string, share: number) =>
    execFileSync(
      "ip",
      [
        "netns",
        "exec",
        ns,
        "iptables",
        op,
        chain,
        "-m",
        "statistic",
        "--mode",
        "random",
        "--probability",
        String(share),
        "-j",
        "DROP",
      ],
      { stdio: "ignore" },
    );
  let lossShare = 0;
  return {
    name: ns,
    far,
    near: `${subnet}.1`,
    wrap: ["ip", "netns", "exec", ns],
    cut: () => ip("link", "set", nearDev, "down"),
    restore: () => ip("link", "set", nearDev, "up"),
    loss(share: number) {
      if (lossShare > 0) for (const chain of ["INPUT", "OUTPUT"]) rule("-D", chain, lossShare);
      lossShare = share;
      if (share > 0) for (const chain of ["INPUT", "OUTPUT"]) rule("-A", chain, share);
    },
    remove,
  };
}

/**
 * A relay on 127.0.0.1 to `host:port` that holds every chunk for half of `rttMs` in each direction
 * (in order, Nagle off), counting HTTP request lines and WebSocket data frames as they pass.
 */
export interface Relay {
  port: number;
  requests: string[];
  frames: { up: number; down: number };
  close(): Promise<void>;
}

export async function relay(host: string, port: number, rttMs = 0): Promise<Relay> {
  const half = rttMs / 2;
  const requests: string[] = [];
  const frames = { up: 0, down: 0 };
  const sockets = new Set<net.Socket>();
  /** Forwards `from` to `to`, each chunk `half` ms later, in order. */
  const pipe = (from: net.Socket, to: net.Socket, seen?: (chunk: Buffer) => void) => {
    from.on("data", (chunk: Buffer) => {
      seen?.(chunk);
      if (half <= 0) to.write(chunk);
      else setTimeout(() => to.destroyed || to.write(chunk), half);
    });
    from.on("end", () => setTimeout(() => to.end(), half));
    from.on("error", () => to.destroy());
    from.on("close", () => setTimeout(() => to.destroy(), half));
  };
  const server = net.createServer((client) => {
    const upstream = net.connect(port, host);
    // No Nagle in the relay: it must add its latency and nothing else (a held small write would
    // wait for a delayed ACK, up to 40 ms more).
    client.setNoDelay(true);
    upstream.setNoDelay(true);
    sockets.add(client).add(upstream);
    client.on("close", () => sockets.delete(client));
    upstream.on("close", () => sockets.delete(upstream));
    let upgraded = false;
    const upFrames = frameCounter(() => frames.up++);
    const downFrames = frameCounter(() => frames.down++);
    pipe(client, upstream, (chunk) => {
      if (upgraded) return upFrames(chunk);
      // Request lines of HTTP/1.1 (a keep-alive connection carries several); an upgrade ends them.
      for (const m of chunk
        .toString("latin1")
        .matchAll(/^(GET|POST|DELETE|PATCH|PUT) (\S+) HTTP\/1\.1\r\n/gm)) {
        const upgrade = /\r\nupgrade: websocket\r\n/i.test(chunk.toString("latin1"));
        requests.push(`${m[1]} ${m[2].replace(/\?.*$/, "")}${upgrade ? " (WebSocket)" : ""}`);
        if (upgrade) upgraded = true;
      }
    });
    let switched = false;
    pipe(upstream, client, (chunk) => {
      if (switched) return downFrames(chunk);
      // The 101 answer ends the HTTP part of this direction; what follows it is frames.
      const at = chunk.indexOf("\r\n\r\n");
      if (upgraded && chunk.toString("latin1").startsWith("HTTP/1.1 101") && at >= 0) {
        switched = true;
        if (at + 4 < chunk.length) downFrames(chunk.subarray(at + 4));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    requests,
    frames,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export interface RemoteServer {
  server: JupyterServerHandle;
  namespace: Namespace;
  /** What nbagent is given: the relay on this side (`http://127.0.0.1:<port>`). */
  url: string;
  cut(): void;
  restore(): void;
  loss(share: number): void;
  /** Requests the relay saw: `GET /api/…` lines and WebSocket upgrades, in order. */
  requests: string[];
  /** WebSocket data frames (text or binary; pings and pongs not counted) sent up to the server and down from it. */
  frames: { up: number; down: number };
  stop(): Promise<void>;
}

/**
 * Makes the namespace and link, starts a jupyter_server in it, and a relay with `rttMs` of round-trip
 * latency in front of it.
 */
export async function remoteServer(
  options: { rttMs?: number } & Omit<JupyterServerOptions, "host" | "wrap"> = {},
): Promise<RemoteServer> {
  const namespace = makeNamespace();
  let server: JupyterServerHandle;
  try {
    server = await startJupyterServer({ ...options, host: namespace.far, wrap: namespace.wrap });
  } catch (err) {
    namespace.remove();
    throw err;
  }
  const target = new URL(server.url);
  const r = await relay(target.hostname, Number(target.port), options.rttMs ?? 0);
  return {
    server,
    namespace,
    url: `http://127.0.0.1:${r.port}`,
    requests: r.requests,
    frames: r.frames,
    cut: () => namespace.cut(),
    restore: () => namespace.restore(),
    loss: (share) => namespace.loss(share),
    async stop() {
      await r.close();
      try {
        namespace.restore();
      } catch {
        // gone
      }
      await server.stop();
      namespace.remove();
    },
  };
}

/** Counts the data frames (opcodes 1 and 2, and their continuations' starts) of one direction of a WebSocket. */
function frameCounter(onFrame: () => void): (chunk: Buffer) => void {
  let buffer = Buffer.alloc(0);
  return (chunk) => {
    buffer = Buffer.concat([buffer, chunk]);
    for (;;) {
      if (buffer.length < 2) return;
      const opcode = buffer[0] & 0x0f;
      const masked = (buffer[1] & 0x80) !== 0;
      let length = buffer[1] & 0x7f;
      let at = 2;
      if (length === 126) {
        if (buffer.length < 4) return;
        length = buffer.readUInt16BE(2);
        at = 4;
      } else if (length === 127) {
        if (buffer.length < 10) return;
        length = Number(buffer.readBigUInt64BE(2));
        at = 10;
      }
      const end = at + (masked ? 4 : 0) + length;
      if (buffer.length < end) return;
      if (opcode === 1 || opcode === 2) onFrame();
      buffer = buffer.subarray(end);
    }
  };
}

/**
 * Connection files for local kernels: a random HMAC key and five free TCP ports on 127.0.0.1.
 * Ports are chosen by letting the OS pick (bind to port 0) and releasing them; the remaining race
 * (someone takes a port before the kernel binds it) is handled by the launcher, which recognises
 * the kernel's "Address already in use" exit and starts again with fresh ports.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface ConnectionInfo {
  transport: "tcp";
  ip: string;
  shell_port: number;
  iopub_port: number;
  stdin_port: number;
  control_port: number;
  hb_port: number;
  key: string;
  signature_scheme: "hmac-sha256";
  kernel_name: string;
}

async function freePorts(count: number, host: string): Promise<number[]> {
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
      if (!addr || typeof addr === "string") throw new Error("Error: could not get a free port");
      ports.push(addr.port);
    }
    return ports;
  } finally {
    await Promise.all(servers.map((s) => new Promise((r) => s.close(() => r(undefined)))));
  }
}

export async function createConnectionInfo(kernelName: string, ip = "127.0.0.1"): Promise<ConnectionInfo> {
  const [shell, iopub, stdin, control, hb] = await freePorts(5, ip);
  return {
    transport: "tcp",
    ip,
    shell_port: shell,
    iopub_port: iopub,
    stdin_port: stdin,
    control_port: control,
    hb_port: hb,
    key: randomBytes(32).toString("hex"),
    signature_scheme: "hmac-sha256",
    kernel_name: kernelName,
  };
}

/** Writes the file (mode 0600: it holds the signing key) and returns its path. */
export async function writeConnectionFile(info: ConnectionInfo, dir = tmpdir()): Promise<string> {
  const path = join(dir, `nbagent-kernel-${randomUUID()}.json`);
  await writeFile(path, JSON.stringify(info), { mode: 0o600 });
  return path;
}

export async function removeConnectionFile(path: string): Promise<void> {
  await rm(path, { force: true });
}

export function endpoint(info: ConnectionInfo, port: number): string {
  return `${info.transport}://${info.ip}:${port}`;
}

/**
 * A kernel's connection info as the Jupyter messaging protocol defines it (the connection file's
 * fields): where its five ZeroMQ channels listen and the key its messages are signed with. Any
 * backend that speaks ZeroMQ to a kernel shares it (the local one writes it to a file: local/
 * connection-file.ts); `endpoint` is the address a socket connects to.
 */

export interface ConnectionInfo {
  transport: "tcp" | "ipc";
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

/** The ZeroMQ address of one of the kernel's channels (`tcp://ip:port`, or `ipc://<path>-<n>`). */
export function endpoint(info: ConnectionInfo, port: number): string {
  return info.transport === "ipc" ? `ipc://${info.ip}-${port}` : `${info.transport}://${info.ip}:${port}`;
}

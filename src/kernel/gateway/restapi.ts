/**
 * The Jupyter Server REST API paths nbagent uses (docs/backends.md), in one place: relative to the
 * server's base URL, without a leading slash, ids encoded. RestClient.url() and restUrl() make them
 * absolute.
 */

/** GET /api: the server's version. */
export const API = "api";
/** GET /api/status: answers (with the token) once the server is up. */
export const STATUS = "api/status";
/** POST /api/shutdown: the server ends its kernels and itself. */
export const SHUTDOWN = "api/shutdown";
/** GET (list) / POST (start) kernels. */
export const KERNELS = "api/kernels";
/** GET the kernelspecs the server can start. */
export const KERNELSPECS = "api/kernelspecs";

/** GET (model) / DELETE (shut down) one kernel. */
export function kernelPath(id: string): string {
  return `${KERNELS}/${encodeURIComponent(id)}`;
}

/** POST /api/kernels/{id}/interrupt or /restart. */
export function kernelActionPath(id: string, action: "interrupt" | "restart"): string {
  return `${kernelPath(id)}/${action}`;
}

/** The kernel's WebSocket (its channels). */
export function channelsPath(id: string): string {
  return `${kernelPath(id)}/channels`;
}

/** An API path under a base URL given as text (trailing slashes of the base ignored). */
export function restUrl(base: string, path: string): string {
  return `${base.replace(/\/+$/, "")}/${path}`;
}

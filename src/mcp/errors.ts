/**
 * JSON-RPC errors for the SDK to send. Not McpError: its message carries an "MCP error <code>:"
 * prefix, which the client adds again; the model should read the sentence once.
 */
export function protocolError(code: number, message: string): Error & { code: number } {
  return Object.assign(new Error(message), { code });
}

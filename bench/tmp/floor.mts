import { createLocalBackend } from "../../src/kernel/index.js";
const backend = await createLocalBackend({});
const kernel = await backend.startKernel({ env: process.env as Record<string, string> });
const c = kernel.client;
const request = (i: number) => c.factory.executeRequest(`x = ${i}`, { stopOnError: false });
for (let r = 0; r < 2; r++) {
let t0 = performance.now();
for (let i = 0; i < 1000; i++) await new Promise<void>((resolve) => c.future("shell", request(i), { onReply: () => resolve() }));
console.log("reply", ((performance.now() - t0) / 1000).toFixed(2));
t0 = performance.now();
await Promise.all(Array.from({ length: 1000 }, (_, i) => c.future("shell", request(i)).done));
console.log("queued", ((performance.now() - t0) / 1000).toFixed(2));
}
await kernel.shutdown();
process.exit(0);

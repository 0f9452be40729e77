// Preloaded (node --require) into `nbagent mcp` and into bench/mcp-timeline.ts: stamps, on the
// machine-wide monotonic clock, each stdin chunk, each reply written to stdout (fd 1) and each
// ZeroMQ send and receive; the server writes its stamps to NBAGENT_TIMELINE_OUT when it exits.
const fs = require("node:fs");
const { createRequire } = require("node:module");

const stamps = [];
globalThis.__nbagentTimeline = stamps;
const now = () => process.hrtime.bigint();

const emit = process.stdin.emit;
process.stdin.emit = function (name, ...rest) {
  if (name === "data") stamps.push(["in", now()]);
  return emit.call(this, name, ...rest);
};
const writeSync = fs.writeSync;
fs.writeSync = function (fd, ...rest) {
  if (fd === 1) stamps.push(["out", now()]);
  return writeSync.call(this, fd, ...rest);
};
const zmq = createRequire(`${process.cwd()}/package.json`)("zeromq");
// send and receive live on the native Socket prototype (not writable there: define, do not assign)
for (const [name, kind] of [
  ["send", "zs"],
  ["receive", "zr"],
]) {
  const original = zmq.Socket.prototype[name];
  Object.defineProperty(zmq.Socket.prototype, name, {
    configurable: true,
    writable: true,
    value: function (...args) {
      if (kind === "zs") stamps.push([kind, now()]);
      const p = original.apply(this, args);
      if (kind !== "zr") return p;
      return p.then((v) => {
        stamps.push([kind, now()]);
        return v;
      });
    },
  });
}
process.on("exit", () => {
  const out = process.env.NBAGENT_TIMELINE_OUT;
  if (out) fs.writeFileSync(out, stamps.map(([k, t]) => `${k} ${t}`).join("\n"));
});

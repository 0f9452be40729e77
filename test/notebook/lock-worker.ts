/**
 * Child process for the lock stress test: takes the lock of `file` again and again; inside, it
 * appends "E", three "M" (one per event-loop turn) and "X" lines `<tag> <pid> <n>` to an
 * append-only log, and with probability `dieP` SIGKILLs itself in the middle (a holder that dies
 * holding the lock). The parent also SIGKILLs workers at random moments (mid-acquisition,
 * mid-takeover). argv: file log dieP
 */
import { appendFileSync } from "node:fs";
import { setImmediate as turn } from "node:timers/promises";
import { withFileLock } from "../../src/notebook/lock.js";

const [file, log, dieP] = process.argv.slice(2);
const line = (tag: string, n: number) => appendFileSync(log, `${tag} ${process.pid} ${n}\n`);

for (let n = 0; ; n++) {
  await withFileLock(
    file,
    async () => {
      line("E", n);
      for (let k = 0; k < 3; k++) {
        await turn();
        line("M", n);
        if (k === 1 && Math.random() < Number(dieP)) process.kill(process.pid, "SIGKILL");
      }
      line("X", n);
    },
    600_000,
  );
}

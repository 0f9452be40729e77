/**
 * A FIFO lock: one holder at a time, waiters served in arrival order (docs/python-tool.md). A waiter that gives up
 * (abort signal or deadline) leaves the line without disturbing the others.
 */
import { type Deadline, raceDeadline } from "./deadline.js";

export type Release = () => void;

export class FifoLock {
  private held = false;
  private readonly waiters: (() => void)[] = [];

  /** Held, or someone is waiting. */
  get busy(): boolean {
    return this.held || this.waiters.length > 0;
  }

  get waiting(): number {
    return this.waiters.length;
  }

  async acquire(deadline?: Deadline, signal?: AbortSignal): Promise<Release> {
    if (!this.held && this.waiters.length === 0) {
      deadline?.check(signal);
      this.held = true;
      return this.releaser();
    }
    let grant!: () => void;
    const granted = new Promise<void>((resolve) => {
      grant = resolve;
    });
    this.waiters.push(grant);
    await raceDeadline(granted, deadline, signal, () => {
      const i = this.waiters.indexOf(grant);
      if (i >= 0) this.waiters.splice(i, 1);
      else this.handOn(); // granted in the same tick we gave up: pass the turn along
    });
    return this.releaser();
  }

  private releaser(): Release {
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.handOn();
    };
  }

  private handOn(): void {
    const next = this.waiters.shift();
    if (next) next();
    else this.held = false;
  }
}

/**
 * A FIFO lock: one holder at a time, waiters served in arrival order (docs/python-tool.md). A waiter that gives up
 * (abort signal or deadline) leaves the line without disturbing the others. The lock knows who holds
 * it — the tag its holder gave and since when — so a waiter that gives up can be told (QueueHolder).
 */
import { CallTimeoutError, type Deadline, raceDeadline } from "./deadline.js";

export type Release = () => void;

/**
 * Who holds the lock: the tag its holder gave when it took it (the runtime only hands it back;
 * tools/ say what it is) and when it got its turn (ms since the epoch).
 */
export interface QueueHolder {
  tag?: object;
  since: number;
}

/** The deadline passed while the call waited for the lock; `holder` held it then. */
export class QueueWaitTimeoutError extends CallTimeoutError {
  constructor(
    seconds: number,
    readonly holder: QueueHolder | undefined,
    /** Calls that were waiting ahead of this one. */
    readonly ahead: number,
  ) {
    super(seconds);
    this.name = "QueueWaitTimeoutError";
  }
}

export class FifoLock {
  private held = false;
  private current?: QueueHolder;
  private readonly waiters: { grant: () => void; tag?: object }[] = [];

  /** Held, or someone is waiting. */
  get busy(): boolean {
    return this.held || this.waiters.length > 0;
  }

  get waiting(): number {
    return this.waiters.length;
  }

  /** The tags of the calls waiting for their turn, first in line first (undefined: none given). */
  get waitingTags(): (object | undefined)[] {
    return this.waiters.map((w) => w.tag);
  }

  /** Who holds the lock now (undefined when free). */
  get holder(): QueueHolder | undefined {
    return this.held ? this.current : undefined;
  }

  /**
   * Waits for the turn. A deadline that passes while waiting is a QueueWaitTimeoutError naming the
   * holder; `tag` is what this call is, for those who wait behind it.
   */
  async acquire(deadline?: Deadline, signal?: AbortSignal, tag?: object): Promise<Release> {
    if (!this.held && this.waiters.length === 0) {
      deadline?.check(signal);
      this.take(tag);
      return this.releaser();
    }
    let grant!: () => void;
    const granted = new Promise<void>((resolve) => {
      grant = resolve;
    });
    const waiter = {
      grant: () => {
        this.take(tag);
        grant();
      },
      tag,
    };
    this.waiters.push(waiter);
    let ahead = 0;
    try {
      await raceDeadline(granted, deadline, signal, () => {
        const i = this.waiters.indexOf(waiter);
        ahead = Math.max(0, i);
        if (i >= 0) this.waiters.splice(i, 1);
        else this.handOn(); // granted in the same tick we gave up: pass the turn along
      });
    } catch (err) {
      if (!(err instanceof CallTimeoutError)) throw err;
      throw new QueueWaitTimeoutError(err.seconds, this.holder, ahead);
    }
    return this.releaser();
  }

  private take(tag: object | undefined): void {
    this.held = true;
    this.current = { ...(tag ? { tag } : {}), since: Date.now() };
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
    if (next) next.grant();
    else {
      this.held = false;
      this.current = undefined;
    }
  }
}

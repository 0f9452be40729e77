/**
 * When an HTTP MCP session is idle (docs/mcp.md): no POST or DELETE of it in progress, none ended
 * within `idleMs`, and no run of it still going in the background. A GET stream (the client
 * listening for notifications) is not activity. `onIdle` fires once, then the watch stops.
 */
export class IdleWatch {
  private active = 0;
  private timer?: NodeJS.Timeout;
  private stopped = false;

  constructor(
    /** 0: never idle. */
    private readonly idleMs: number,
    /** Work of the session still going without a request (background runs). */
    private readonly busy: () => boolean,
    private readonly onIdle: () => void,
  ) {
    this.arm();
  }

  /** A request of the session started. */
  begin(): void {
    this.active++;
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** A request of the session ended (its response finished or its connection closed). */
  end(): void {
    this.active = Math.max(0, this.active - 1);
    this.arm();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  private arm(): void {
    if (this.stopped || this.idleMs <= 0 || this.active > 0) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      if (this.stopped || this.active > 0) return;
      if (this.busy()) return this.arm();
      this.stopped = true;
      this.onIdle();
    }, this.idleMs);
    this.timer.unref(); // the HTTP server keeps the process alive, not this
  }
}

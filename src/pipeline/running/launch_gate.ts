/**
 * Keeps the harness's own work out of the gaps between children: a launch is on its way from
 * the moment the scheduler picks a phase until its child runs (or the phase ends without one),
 * and work that can wait (writing the resolved experiment, verifying a plan) awaits
 * {@linkcode LaunchGate.settled} so it runs while children run, never before a spawn.
 *
 * @module
 */

/** Counts launches on their way to a running child. */
export class LaunchGate {
  #pending = new Set<string>();
  #waiters: (() => void)[] = [];

  /** Phase `name` is being launched. */
  begin(name: string): void {
    this.#pending.add(name);
  }

  /** Phase `name`'s work runs, or it ended without any (cached, skipped, failed to start). */
  end(name: string): void {
    if (this.#pending.delete(name)) this.#flush();
  }

  /**
   * Resolves once no launch is on its way. It first lets the current task finish, so a launch the
   * scheduler is about to begin (a slot was just freed) is counted before the check.
   */
  settled(): Promise<void> {
    return new Promise((resolve) =>
      setTimeout(() => {
        this.#waiters.push(resolve);
        this.#flush();
      }, 0)
    );
  }

  #flush(): void {
    if (this.#pending.size > 0) return;
    for (const resolve of this.#waiters.splice(0)) resolve();
  }
}

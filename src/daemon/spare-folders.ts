import { randomUUID } from 'node:crypto';
import { mkdirSync, renameSync, rmSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';

/**
 * Empty folders made ahead of need, off a run's way to its agent: `take(dest)` renames one into
 * place. Between `runs/execute` and the agent's start the daemon makes two folders (the run's own,
 * the phase's artifacts); a `mkdir` there cost its event loop 0.1–0.45 ms each on the benches'
 * machines, a `rename` 0.03–0.17 ms. A new spare is made after each take, in the background (libuv's
 * threads), so the first take finds none and starts the making. That hand-off costs the event loop
 * about as much as the `mkdir` would under load (waking a thread: 30–40 µs alone here, against 15
 * for a `rename`), so it starts once the taker's turn of the event loop has ended: what is gained is
 * a run's start, not CPU. `keep` covers a burst of runs started together. The spares live in `dir`,
 * which must be on the file system of their destinations; what an earlier process left there is
 * removed at the first take.
 */
export class SpareFolders {
  private readonly spares: string[] = [];
  private making: Promise<void> | null = null;
  /** The making a take asked for, until the taker's turn has ended. */
  private scheduled: Promise<void> | null = null;
  private closed = false;
  private started = false;

  constructor(
    private readonly dir: string,
    private readonly mode: number,
    private readonly keep = 16,
  ) {}

  /**
   * Moves a spare folder to `dest`, which must not exist or be an empty folder (then it is
   * replaced). False when no spare is ready or the move failed (`dest` holds files, its parent is
   * missing): the caller makes the folder itself.
   */
  take(dest: string): boolean {
    if (!this.started) this.start();
    const spare = this.spares.pop();
    let moved = false;
    if (spare !== undefined) {
      try {
        renameSync(spare, dest);
        moved = true;
      } catch {
        this.spares.push(spare);
      }
    }
    this.scheduled ??= new Promise((resolve) =>
      setImmediate(() => {
        this.scheduled = null;
        this.refill();
        resolve();
      }),
    );
    return moved;
  }

  /** Resolves once `keep` spares are ready, or making one failed (tests, and a daemon's start). */
  async filled(): Promise<void> {
    while (this.scheduled || this.making) await (this.scheduled ?? this.making);
  }

  /** Stops making spares; resolves when the one being made is done. */
  async close(): Promise<void> {
    this.closed = true;
    await this.filled();
  }

  private start(): void {
    this.started = true;
    try {
      rmSync(this.dir, { recursive: true, force: true });
      mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    } catch {
      this.closed = true; // no spares here: every take answers false
    }
  }

  private refill(): void {
    if (this.making || this.closed || this.spares.length >= this.keep) return;
    this.making = (async () => {
      try {
        while (!this.closed && this.spares.length < this.keep) {
          const spare = path.join(this.dir, randomUUID());
          await mkdir(spare, { mode: this.mode });
          this.spares.push(spare);
        }
      } catch {
        // The home folder went away or is full: runs make their folders themselves meanwhile.
      } finally {
        this.making = null;
      }
    })();
  }
}

/**
 * Group commit for any batchable work: `groupCalls(run)` answers a function of one item. A call made
 * while no group is running starts one at the end of the event loop's current turn, with the calls
 * made in that turn (requests that arrived together); calls made while a group runs wait, and the
 * next group takes them together (at most `maxGroup`, in arrival order). So a lone call waits for
 * nothing but the end of its turn, and under load the work of many calls is done in one go. (The end
 * of the turn matters where the work never waits for I/O, as with SQLite: without it, each call
 * would run and finish before the next request is even read.)
 *
 * With `windowMs`, a group starts that long after its first call instead of at the end of the turn,
 * for work whose calls arrive one per turn but many per millisecond (connections in a reconnect
 * storm): each call may wait up to `windowMs` more, and a burst is done in a few groups.
 *
 * With `idleMs`, a call made when no group has run for that long starts its group at once (once the
 * code that made it has run), for work that should not wait behind the rest of the turn when it comes
 * alone: a busy process still groups, since its calls come within `idleMs` of the last group.
 *
 * `run` answers one result per item, in order. When it fails for a group of several items, each
 * item runs again alone, so that an item that cannot be done fails its own call only; `run` must
 * therefore leave nothing behind when it fails (one transaction).
 */
export function groupCalls<I, O>(
  run: (items: I[]) => Promise<O[]>,
  maxGroup: number,
  opts: { windowMs?: number; idleMs?: number } = {},
): (item: I) => Promise<O> {
  interface Waiting {
    item: I;
    resolve(out: O): void;
    reject(err: unknown): void;
  }
  const queue: Waiting[] = [];
  let running = false;
  /** When the last group ended (performance.now()). */
  let endedAt = Number.NEGATIVE_INFINITY;

  const alone = async (w: Waiting) => {
    try {
      w.resolve((await run([w.item]))[0]!);
    } catch (err) {
      w.reject(err);
    }
  };
  const drain = async () => {
    while (queue.length > 0) {
      const group = queue.splice(0, maxGroup);
      if (group.length === 1) {
        await alone(group[0]!);
        continue;
      }
      let out: O[];
      try {
        out = await run(group.map((w) => w.item));
      } catch {
        for (const w of group) await alone(w);
        continue;
      }
      for (const [i, w] of group.entries()) w.resolve(out[i]!);
    }
    running = false;
    endedAt = performance.now();
  };

  return (item) =>
    new Promise<O>((resolve, reject) => {
      queue.push({ item, resolve, reject });
      if (!running) {
        running = true;
        if (opts.windowMs) setTimeout(() => void drain(), opts.windowMs);
        else if (opts.idleMs !== undefined && performance.now() - endedAt >= opts.idleMs)
          queueMicrotask(() => void drain());
        else setImmediate(() => void drain());
      }
    });
}

/**
 * `groupCalls` with one group commit per key (a database handle: the calls of two hubs in one
 * process, as in tests, never share a group). `run` gets the key with the group's items.
 */
export function groupCallsPer<K extends object, I, O>(
  run: (key: K, items: I[]) => Promise<O[]>,
  maxGroup: number,
  opts: { idleMs?: number } = {},
): (key: K, item: I) => Promise<O> {
  const groups = new WeakMap<K, (item: I) => Promise<O>>();
  return (key, item) => {
    let call = groups.get(key);
    if (!call) {
      call = groupCalls((items: I[]) => run(key, items), maxGroup, opts);
      groups.set(key, call);
    }
    return call(item);
  };
}

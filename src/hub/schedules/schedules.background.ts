import type { KyselyPlugin } from 'kysely';
import { clearOnWrite } from '../../db/watch-writes.js';
import type { Hub } from '../context.js';
import { fireDue } from './fire.service.js';
import { soonestFireAt } from './schedules.repo.js';

/**
 * The scheduler of one hub process: a pass fires what is due (fire.service.ts), then it sleeps
 * until the soonest next time of any schedule, at most `scheduleMaxSleepMs` (a schedule made or
 * changed through another process is seen within that), never polling faster than the next time
 * asks. A schedule made, changed or removed through this process wakes it at once (`watch`, a
 * plugin on the hub's database handle that sees the write), so a new schedule's first time is
 * kept. Safe with several hub processes: every slot has its row.
 */
export interface Scheduler {
  /** Wakes the scheduler after a write of a schedule's time or state. */
  watch: KyselyPlugin;
  /** Starts the passes; answers a stop function that waits for a pass in progress. */
  start(hub: Hub): () => Promise<void>;
}

export function createScheduler(): Scheduler {
  let wake: () => void = () => {};
  return {
    // A person's change writes the whole row; the passes' own writes (the next time, the last run)
    // name none of these columns, so a pass does not wake the scheduler again.
    watch: clearOnWrite({ schedules: ['cron', 'timezone', 'enabled'] }, () => wake()),
    start(hub) {
      let stopped = false;
      let timer: NodeJS.Timeout | null = null;
      let running: Promise<void> | null = null;
      /** Woken while a pass ran: the next pass starts at once. */
      let again = false;
      const pass = async () => {
        await fireDue(hub);
        const soonest = await soonestFireAt(hub.db);
        const wait = soonest === null ? hub.config.scheduleMaxSleepMs : soonest - hub.now();
        return Math.max(0, Math.min(wait, hub.config.scheduleMaxSleepMs));
      };
      const run = () => {
        if (stopped) return;
        timer = null;
        again = false;
        running = pass()
          .catch((err) => {
            hub.log.error({ err }, 'scheduler pass failed');
            return hub.config.scheduleMaxSleepMs;
          })
          .then((wait) => {
            running = null;
            if (stopped) return;
            timer = setTimeout(run, again ? 0 : wait);
            timer.unref();
          });
      };
      wake = () => {
        if (stopped) return;
        if (running) again = true;
        else if (timer) {
          clearTimeout(timer);
          run();
        }
      };
      run();
      return async () => {
        stopped = true;
        if (timer) clearTimeout(timer);
        await running;
      };
    },
  };
}

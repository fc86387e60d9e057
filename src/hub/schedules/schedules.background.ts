import type { Hub } from '../context.js';
import { fireDue } from './fire.service.js';
import { soonestFireAt } from './schedules.repo.js';

/**
 * The scheduler of one hub process: a pass fires what is due (fire.service.ts), then it sleeps
 * until the soonest next time of any schedule, at most `scheduleMaxSleepMs` (a schedule made or
 * changed through another process is seen within that), never polling faster than the next time
 * asks. Safe with several hub processes: every slot has its row. Returns a stop function that
 * waits for a pass in progress.
 */
export function startScheduler(hub: Hub): () => Promise<void> {
  let stopped = false;
  let timer: NodeJS.Timeout | null = null;
  let running: Promise<void> | null = null;
  const pass = async () => {
    await fireDue(hub);
    const soonest = await soonestFireAt(hub.db);
    const wait = soonest === null ? hub.config.scheduleMaxSleepMs : soonest - hub.now();
    return Math.max(0, Math.min(wait, hub.config.scheduleMaxSleepMs));
  };
  const run = () => {
    if (stopped) return;
    timer = null;
    running = pass()
      .catch((err) => {
        hub.log.error({ err }, 'scheduler pass failed');
        return hub.config.scheduleMaxSleepMs;
      })
      .then((wait) => {
        running = null;
        if (stopped) return;
        timer = setTimeout(run, wait);
        timer.unref();
      });
  };
  run();
  return async () => {
    stopped = true;
    if (timer) clearTimeout(timer);
    await running;
  };
}

import { createRequire } from 'node:module';
import type { Worker } from 'node:worker_threads';
import type { Database as SqliteDatabase } from 'better-sqlite3';
import { sqliteAddon } from './sqlite.js';

/**
 * WAL checkpoints off the event loop. SQLite's automatic checkpoint runs inside the commit that
 * crosses its threshold: that commit copies the WAL into the database file and syncs it, and the
 * process's event loop waits meanwhile (measured here on a hub-like write load: a commit's p99
 * 6.4 ms with it, 0.2 ms without, and its mean halved). Instead, a worker thread with a connection
 * of its own runs a PASSIVE checkpoint (which never blocks the writer) every `everyMs`, and the main
 * connection's automatic checkpoint is off while the worker runs: it stays on until the worker is
 * ready, and comes back on if the worker stops for any reason. The worker starts a second after the
 * database opens, once the process's own start is over.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.file, { fileMustExist: true, ...(workerData.addon ? { nativeBinding: workerData.addon } : {}) });
db.pragma('busy_timeout = 1000');
const timer = setInterval(() => {
  try { db.pragma('wal_checkpoint(PASSIVE)'); } catch {}
}, workerData.everyMs);
parentPort.on('message', () => {
  clearInterval(timer);
  db.close();
  parentPort.close();
});
parentPort.postMessage('ready');
`;

/** SQLite's own threshold (pages), restored when the worker is not running. */
const AUTOCHECKPOINT_PAGES = 1000;

export interface Checkpointer {
  /** Stops the worker and waits for its connection to close. */
  stop(): Promise<void>;
}

/** How long after the database opens the worker starts: a process's own start does not share the cores with it. */
const START_AFTER_MS = 1000;

export function startCheckpointer(
  sqlite: SqliteDatabase,
  file: string,
  everyMs = 200,
  startAfterMs = START_AFTER_MS,
): Checkpointer {
  let worker: Worker | null = null;
  let stopped = false;
  let starting: Promise<void> = Promise.resolve();
  let exited: Promise<void> = Promise.resolve();
  const automatic = (on: boolean) => {
    if (sqlite.open) sqlite.pragma(`wal_autocheckpoint = ${on ? AUTOCHECKPOINT_PAGES : 0}`);
  };
  const start = async () => {
    // Loaded here: worker_threads is not needed before (a few ms of every start).
    const { Worker } = await import('node:worker_threads');
    if (stopped) return;
    const w = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: {
        driver: createRequire(import.meta.url).resolve('better-sqlite3'),
        addon: sqliteAddon(),
        file,
        everyMs,
      },
      // Its own few statements only.
      resourceLimits: { maxOldGenerationSizeMb: 16, maxYoungGenerationSizeMb: 4 },
    });
    w.unref();
    w.once('message', () => {
      if (!stopped) automatic(false);
    });
    // A worker that fails to start or dies leaves the checkpoints to SQLite again.
    w.on('error', () => {});
    exited = new Promise<void>((resolve) =>
      w.once('exit', () => {
        automatic(true);
        resolve();
      }),
    );
    worker = w;
  };
  // Until then SQLite checkpoints as it does by default.
  const timer = setTimeout(() => {
    starting = start();
  }, startAfterMs);
  timer.unref();
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await starting;
      if (!worker) return;
      // Held while it stops: a process waiting for nothing else would otherwise end first.
      worker.ref();
      worker.postMessage('stop');
      await exited;
    },
  };
}

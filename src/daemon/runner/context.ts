import type { Kysely } from 'kysely';
import type { Logger } from '../../shared/logger.js';
import type { ArtifactUploader } from '../artifacts/uploader.js';
import type { DaemonDB } from '../db/schema.js';
import type { HugInbox } from '../hug/inbox.js';
import type { SpareFolders } from '../spare-folders.js';
import type { ChildRuns } from './children.js';
import type { RunHubCaller } from './hub-caller.js';
import type { Spawn } from './spawner.js';

/** What the parts of the runner share: the daemon's database, hub calls, clock and settings. */
export interface RunnerContext {
  db: Kysely<DaemonDB>;
  caller: RunHubCaller;
  log: Logger;
  now: () => number;
  /** The daemon's home: per-run directories and output files live under `<home>/runs/`. */
  home: string;
  /** Run folders made ahead (a run with no workspace works in a folder of its own). */
  runFolders: SpareFolders;
  /** Starts agent processes (through the spawner's helper process). */
  spawn: Spawn;
  killGraceMs: number;
  /** `hug/deliver` notifies it; a run waiting for a verdict listens. */
  inbox: HugInbox;
  children: ChildRuns;
  /** Sends the artifacts of ended phases to the hub. */
  artifacts: ArtifactUploader;
  /** Whether the daemon is stopping. */
  closing(): boolean;
  /** The daemon's local URL, given to agents as SVC_DAEMON_URL. */
  daemonUrl(): string;
}

import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { startTestDaemon } from '../../test/integration/daemon-harness.js';
import { startHub } from '../hub/server.js';
import { createLogger } from './logger.js';
import { mintToken } from './tokens.js';

/**
 * What the hub and the daemon keep on disk is readable by their user only, whatever the umask.
 * Both run on SQLite here, whatever SVC_TEST_DB says: the modes are those of SQLite files.
 */

const modeOf = (p: string) => statSync(p).mode & 0o777;
const silent = createLogger('hub', 'silent');
const databaseFiles = (file: string) => [file, `${file}-wal`, `${file}-shm`];

/** Runs `fn` with the process umask set to `mask` (this test file runs in its own process). */
async function withUmask<T>(mask: number, fn: () => Promise<T>): Promise<T> {
  const previous = process.umask(mask);
  try {
    return await fn();
  } finally {
    process.umask(previous);
  }
}

describe('file modes of the hub and daemon homes', () => {
  const root = mkdtempSync(path.join(tmpdir(), 'svc-modes-'));
  after(() => rmSync(root, { recursive: true, force: true }));

  it('creates the home folders 0700 and the databases (WAL and SHM included) 0600, whatever the umask', async () => {
    const hubHome = path.join(root, 'open', 'hub-home');
    const daemonHome = path.join(root, 'open', 'daemon-home', 'nested');
    await withUmask(0, async () => {
      const hub = await startHub({
        databaseUrl: path.join(hubHome, 'hub.db'),
        adminToken: mintToken('user'),
        log: silent,
      });
      const daemon = await startTestDaemon(daemonHome);
      try {
        for (const dir of [path.join(root, 'open'), hubHome, path.dirname(daemonHome), daemonHome]) {
          assert.equal(modeOf(dir), 0o700, dir);
        }
        for (const f of [
          path.join(hubHome, 'secrets.key'),
          ...databaseFiles(path.join(hubHome, 'hub.db')),
          ...databaseFiles(path.join(daemonHome, 'daemon.db')),
        ]) {
          assert.equal(modeOf(f), 0o600, f);
        }
      } finally {
        await daemon.close();
        await hub.close();
      }
    });
  });

  it('tightens database files left with wider modes and leaves the mode of an existing folder alone', async () => {
    const shared = path.join(root, 'shared');
    mkdirSync(shared);
    chmodSync(shared, 0o755);
    const file = path.join(shared, 'hub.db');
    const adminToken = mintToken('user');
    await (await startHub({ databaseUrl: file, adminToken, log: silent })).close();
    chmodSync(file, 0o644);
    const again = await startHub({ databaseUrl: file, adminToken, log: silent });
    try {
      for (const f of databaseFiles(file)) assert.equal(modeOf(f), 0o600, f);
      assert.equal(modeOf(shared), 0o755);
    } finally {
      await again.close();
    }
  });
});

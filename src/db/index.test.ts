import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { openDatabase } from './index.js';

const openFiles = () =>
  readdirSync('/proc/self/fd').flatMap((fd) => {
    try {
      return [readlinkSync(`/proc/self/fd/${fd}`)];
    } catch {
      return [];
    }
  });

describe('openDatabase', () => {
  it('close releases the SQLite file also when no query ever ran', {
    skip: process.platform !== 'linux',
  }, async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'svc-db-'));
    try {
      const file = path.join(dir, 'x.db');
      const unused = await openDatabase({ url: file });
      assert.ok(openFiles().includes(file));
      await unused.close();
      assert.ok(!openFiles().includes(file));
      const used = await openDatabase({ url: file });
      await used.db.selectNoFrom((eb) => eb.val(1).as('one')).execute();
      await used.close();
      assert.ok(!openFiles().some((f) => f.startsWith(file)));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

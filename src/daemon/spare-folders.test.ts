import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { SpareFolders } from './spare-folders.js';

describe('spare folders', () => {
  let home: string;
  let spareDir: string;
  let folders: SpareFolders;
  beforeEach(() => {
    home = mkdtempSync(path.join(tmpdir(), 'svc-spare-'));
    spareDir = path.join(home, 'spare', 'runs');
    mkdirSync(path.join(home, 'runs'));
    folders = new SpareFolders(spareDir, 0o700, 3);
  });
  afterEach(async () => {
    await folders.close();
    rmSync(home, { recursive: true, force: true });
  });

  it('makes nothing until the first take, which finds none and starts the making', async () => {
    assert.throws(() => statSync(spareDir), { code: 'ENOENT' });
    assert.equal(folders.take(path.join(home, 'runs', 'a')), false);
    await folders.filled();
    assert.equal(readdirSync(spareDir).length, 3);
  });

  it('moves an empty folder of its mode into place, and makes another', async () => {
    folders.take(path.join(home, 'runs', 'first'));
    await folders.filled();
    const dest = path.join(home, 'runs', 'b');
    assert.equal(folders.take(dest), true);
    const st = statSync(dest);
    assert.ok(st.isDirectory());
    assert.equal(st.mode & 0o777, 0o700);
    assert.deepEqual(readdirSync(dest), []);
    await folders.filled();
    assert.equal(readdirSync(spareDir).length, 3);
  });

  it('leaves a folder that holds files as it is, and keeps its spare', async () => {
    folders.take(path.join(home, 'runs', 'first'));
    await folders.filled();
    const dest = path.join(home, 'runs', 'busy');
    mkdirSync(dest);
    writeFileSync(path.join(dest, 'work.txt'), 'mine');
    assert.equal(folders.take(dest), false);
    assert.deepEqual(readdirSync(dest), ['work.txt']);
    assert.equal(readdirSync(spareDir).length, 3);
  });

  it('answers false when the destination has no parent', async () => {
    folders.take(path.join(home, 'runs', 'first'));
    await folders.filled();
    assert.equal(folders.take(path.join(home, 'missing', 'c')), false);
    assert.equal(readdirSync(spareDir).length, 3);
  });

  it('removes what an earlier process left among the spares at the first take', async () => {
    mkdirSync(path.join(spareDir, 'left-behind'), { recursive: true });
    writeFileSync(path.join(spareDir, 'left-behind', 'x'), 'x');
    folders.take(path.join(home, 'runs', 'first'));
    await folders.filled();
    assert.ok(!readdirSync(spareDir).includes('left-behind'));
    assert.equal(readdirSync(spareDir).length, 3);
  });

  it('makes no more once closed', async () => {
    folders.take(path.join(home, 'runs', 'first'));
    await folders.filled();
    await folders.close();
    assert.equal(folders.take(path.join(home, 'runs', 'd')), true);
    await folders.filled();
    assert.equal(readdirSync(spareDir).length, 2);
  });
});

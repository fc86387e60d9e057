import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { COMMANDS } from './commands.js';

describe('the command list', () => {
  it('names every file of commands/, each module a command', async () => {
    const files = readdirSync(fileURLToPath(new URL('./commands/', import.meta.url)))
      .map((f) => /^([a-z][a-z0-9-]*)\.(ts|js)$/.exec(f)?.[1]) // .js in the suite's transpiled tree
      .filter((name) => name !== undefined)
      .sort();
    assert.deepEqual(Object.keys(COMMANDS).sort(), files);
    for (const [name, load] of Object.entries(COMMANDS)) {
      const def = (await load()).default;
      assert.equal(typeof def.register, 'function', name);
      assert.ok(def.summary.length > 0, name);
    }
  });
});

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { describe, it } from 'node:test';

describe('the leak check of the test runner', () => {
  it('fails a test file that leaves a server and a timer open, and names both', async () => {
    // A run of its own, not a subtest of this one (the runner marks its children with NODE_TEST_CONTEXT).
    const { NODE_TEST_CONTEXT: _, ...inherited } = process.env;
    const childEnv = { ...inherited, SVC_TEST_LEAK_SETTLE_MS: '200' };
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        '--import',
        './test/helpers/leaks.ts',
        '--test',
        '--test-reporter=spec',
        'test/fixtures/leaky.ts',
      ],
      { env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString();
    });
    child.stderr.on('data', (c: Buffer) => {
      out += c.toString();
    });
    const [code] = await once(child, 'exit');
    assert.equal(code, 1, out);
    assert.match(out, /leaky\.ts left open when its tests were done/);
    assert.match(out, /server listening on .*"port":\d+/);
    assert.match(out, /timer forgottenPoll/);
  });
});

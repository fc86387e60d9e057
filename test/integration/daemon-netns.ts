import { execFile } from 'node:child_process';
import { randomBytes, randomInt } from 'node:crypto';
import { promisify } from 'node:util';
import type { Reply } from '../helpers/hub.js';

const run = promisify(execFile);

/**
 * A Linux network namespace joined to this host by a veth pair, so that a test can call the daemon
 * from another network address for real. Addresses are a private /30 (10.231.x.y) used only between
 * the two veth ends on this machine.
 */
export interface Netns {
  name: string;
  /** Address of the host-side veth end: bind the daemon here. */
  hostAddr: string;
  /** Address of the caller inside the namespace. */
  nsAddr: string;
  /** POST from inside the namespace with curl. */
  post(url: string, body: unknown, headers?: Record<string, string>): Promise<Reply>;
  cleanup(): Promise<void>;
}

/** Creates the namespace, or answers why it cannot (not root, no `ip`, no permission). */
export async function createNetns(): Promise<Netns | { skip: string }> {
  if (process.platform !== 'linux') return { skip: 'network namespaces need Linux' };
  const tag = randomBytes(3).toString('hex');
  const name = `svcd-${tag}`;
  const hostIf = `svh${tag}`;
  const nsIf = `svn${tag}`;
  const base = randomInt(0, 64) * 4;
  const net = `10.231.${randomInt(0, 256)}`;
  const hostAddr = `${net}.${base + 1}`;
  const nsAddr = `${net}.${base + 2}`;
  const cleanup = async () => {
    await run('ip', ['netns', 'del', name]).catch(() => {});
    await run('ip', ['link', 'del', hostIf]).catch(() => {});
  };
  try {
    await run('ip', ['netns', 'add', name]);
  } catch (err) {
    return {
      skip: `cannot create a network namespace (ip netns add): ${(err as Error).message.split('\n')[0]}`,
    };
  }
  try {
    const steps: string[][] = [
      ['link', 'add', hostIf, 'type', 'veth', 'peer', 'name', nsIf],
      ['link', 'set', nsIf, 'netns', name],
      ['addr', 'add', `${hostAddr}/30`, 'dev', hostIf],
      ['link', 'set', hostIf, 'up'],
      ['netns', 'exec', name, 'ip', 'addr', 'add', `${nsAddr}/30`, 'dev', nsIf],
      ['netns', 'exec', name, 'ip', 'link', 'set', nsIf, 'up'],
      ['netns', 'exec', name, 'ip', 'link', 'set', 'lo', 'up'],
    ];
    for (const s of steps) await run('ip', s);
    await run('ip', ['netns', 'exec', name, 'curl', '--version']);
  } catch (err) {
    await cleanup();
    return { skip: `cannot set up the veth pair: ${(err as Error).message.split('\n')[0]}` };
  }
  return {
    name,
    hostAddr,
    nsAddr,
    cleanup,
    async post(url, body, headers = {}) {
      const args = ['netns', 'exec', name, 'curl', '-sS', '--max-time', '20', '-X', 'POST'];
      for (const [k, v] of Object.entries({ 'content-type': 'application/json', ...headers })) {
        args.push('-H', `${k}: ${v}`);
      }
      args.push(
        '--data-binary',
        typeof body === 'string' ? body : JSON.stringify(body),
        '-w',
        '\n%{http_code}',
        url,
      );
      const { stdout } = await run('ip', args);
      const cut = stdout.lastIndexOf('\n');
      const text = stdout.slice(0, cut);
      let parsed: unknown = text;
      try {
        parsed = JSON.parse(text);
      } catch {}
      return { status: Number(stdout.slice(cut + 1)), body: parsed };
    },
  };
}

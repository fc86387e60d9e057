import { EventEmitter, once } from 'node:events';
import { WebSocket } from 'ws';
import { tunnelUrl } from './tunnel-client.js';

export interface Command {
  tx_id: string;
  path: string;
  // biome-ignore lint/suspicious/noExplicitAny: command bodies are inspected freely
  body: any;
}

/** The realm's daemon, played over a real tunnel: every command is recorded and acked. */
export async function fakeDaemon(hubUrl: string, token: string) {
  const ws = new WebSocket(tunnelUrl(hubUrl), { headers: { authorization: `Bearer ${token}` } });
  const commands: Command[] = [];
  const events = new EventEmitter();
  ws.on('message', (data) => {
    const f = JSON.parse(data.toString()) as { type: string } & Command;
    if (f.type !== 'command') return;
    commands.push(f);
    ws.send(JSON.stringify({ type: 'ack', tx_id: f.tx_id, status: 'ok', reply: {} }));
    events.emit('command', f);
  });
  await once(ws, 'message');
  return {
    commands,
    /** The first command (already received or next) that `match` accepts. */
    async waitFor(match: (c: Command) => boolean, timeoutMs = 10_000): Promise<Command> {
      const seen = commands.find(match);
      if (seen) return seen;
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          events.off('command', on);
          reject(new Error('no such command arrived'));
        }, timeoutMs);
        const on = (c: Command) => {
          if (!match(c)) return;
          clearTimeout(timer);
          events.off('command', on);
          resolve(c);
        };
        events.on('command', on);
      });
    },
    deliveries: (reviewId: string) =>
      commands.filter((c) => c.path === 'hug/deliver' && c.body.review_id === reviewId),
    close: async () => {
      const closed = once(ws, 'close');
      ws.close();
      await closed;
    },
  };
}

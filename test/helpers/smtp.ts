import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';

/** A message as an SMTP server received it. */
export interface Received {
  to: string[];
  raw: string;
}

/** An SMTP server on 127.0.0.1 that keeps what it receives (no TLS, no authentication). */
export interface SmtpSink {
  url: string;
  /** Resolves with the next message received from now on. */
  next(): Promise<Received>;
  close(): Promise<void>;
}

export async function startSmtpSink(): Promise<SmtpSink> {
  const waiting: ((m: Received) => void)[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    onData(stream, session, done) {
      let raw = '';
      stream.on('data', (c: Buffer) => {
        raw += c.toString('utf8');
      });
      stream.on('end', () => {
        // Read before done(), which clears the session's envelope.
        const m = { to: session.envelope.rcptTo.map((r) => r.address), raw };
        done();
        for (const f of waiting.splice(0)) f(m);
      });
    },
  });
  server.listen(0, '127.0.0.1');
  await once(server.server, 'listening');
  return {
    url: `smtp://127.0.0.1:${(server.server.address() as AddressInfo).port}`,
    next: () => new Promise((resolve) => waiting.push(resolve)),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

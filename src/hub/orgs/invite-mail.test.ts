import assert from 'node:assert/strict';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { SMTPServer } from 'smtp-server';
import { startTestHub, type TestHub } from '../../../test/helpers/hub.js';

interface Received {
  to: string[];
  raw: string;
}

describe('invitation e-mail over SMTP', () => {
  let smtp: SMTPServer;
  let h: TestHub;
  const inbox: Received[] = [];
  const arrived: ((m: Received) => void)[] = [];
  before(async () => {
    smtp = new SMTPServer({
      authOptional: true,
      disabledCommands: ['STARTTLS'],
      onData(stream, session, done) {
        let raw = '';
        stream.on('data', (c: Buffer) => {
          raw += c.toString('utf8');
        });
        stream.on('end', () => {
          const m = { to: session.envelope.rcptTo.map((r) => r.address), raw };
          inbox.push(m);
          for (const f of arrived.splice(0)) f(m);
          done();
        });
      },
    });
    smtp.listen(0, '127.0.0.1');
    await once(smtp.server, 'listening');
    const port = (smtp.server.address() as AddressInfo).port;
    h = await startTestHub({ smtp: { url: `smtp://127.0.0.1:${port}`, from: 'svc <hub@test>' } });
  });
  after(async () => {
    await h.close();
    await new Promise<void>((r) => smtp.close(() => r()));
  });

  it('orgs/new sends the owner an invitation with the code and reports email_sent', async () => {
    const mail = new Promise<Received>((r) => arrived.push(r));
    const r = await h.ok('orgs/new', { slug: 'mailed', owner: { email: 'boss@mailed.test' } });
    assert.equal(r.data.owner_invite.email_sent, true);
    const m = await mail;
    assert.deepEqual(m.to, ['boss@mailed.test']);
    assert.ok(m.raw.includes(r.data.owner_invite.code), 'the e-mail carries the invitation code');
    assert.match(m.raw, /Subject: You are invited to mailed on svc/);
  });

  it('a failing SMTP server never fails the request', async () => {
    const down = await startTestHub({ smtp: { url: 'smtp://127.0.0.1:1', from: 'svc <hub@test>' } });
    try {
      const r = await down.ok('orgs/new', { slug: 'nomail', owner: { email: 'x@nomail.test' } });
      assert.equal(r.data.owner_invite.email_sent, true);
      const acc = await down.ok(
        'invites/accept',
        { code: r.data.owner_invite.code, password: 'long enough pw' },
        null,
      );
      assert.equal(acc.data.user.status, 'active');
    } finally {
      await down.close();
    }
  });
});

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestHub, type TestHub } from '../../../test/helpers/hub.js';
import { type SmtpSink, startSmtpSink } from '../../../test/helpers/smtp.js';

describe('invitation e-mail over SMTP', () => {
  let smtp: SmtpSink;
  let h: TestHub;
  before(async () => {
    smtp = await startSmtpSink();
    h = await startTestHub({ smtp: { url: smtp.url, from: 'svc <hub@test>' } });
  });
  after(async () => {
    await h.close();
    await smtp.close();
  });

  it('orgs/new sends the owner an invitation with the code and reports email_sent', async () => {
    const mail = smtp.next();
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

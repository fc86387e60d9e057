import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { discordPayload, type EventEnvelope, slackPayload, summarize } from './payloads.js';
import { backoffMs, classify } from './policy.js';
import { signBody, verifySignature } from './signing.js';
import { checkDestination, refusedAddressReason } from './ssrf.js';

describe('notifications: pure parts', () => {
  it('refuses IPv4-mapped addresses in any spelling and NAT64 ones that are local-use or carry a private IPv4', () => {
    // The whole ::ffff:0:0/96 (IPv4-mapped, any spelling), ::ffff:0:0:0/96 (IPv4-translated) and
    // the local-use NAT64 prefix 64:ff9b:1::/48; the well-known NAT64 prefix when the IPv4 is private.
    const table: [string, string | null][] = [
      ['::ffff:127.0.0.1', 'loopback address'],
      ['::ffff:7f00:1', 'loopback address'],
      ['::FFFF:7F00:0001', 'loopback address'],
      ['0:0:0:0:0:ffff:7f00:1', 'loopback address'],
      ['[::ffff:7f00:1]', 'loopback address'],
      ['::ffff:a9fe:a9fe', 'link-local address'],
      ['::ffff:c0a8:1', 'private address'],
      ['::ffff:8.8.8.8', 'IPv4-mapped address'],
      ['::ffff:808:808', 'IPv4-mapped address'],
      ['::ffff:0:0', 'unspecified ("this network") address'],
      ['::ffff:0:8.8.8.8', 'IPv4-translated address'],
      ['::ffff:0:7f00:1', 'loopback address'],
      ['64:ff9b:1::1', 'local-use NAT64 address'],
      ['64:ff9b:1::808:808', 'local-use NAT64 address'],
      ['64:ff9b:1:ffff:ffff:ffff:ffff:ffff', 'local-use NAT64 address'],
      ['64:ff9b::7f00:1', 'loopback address'],
      ['64:ff9b::10.0.0.1', 'private address'],
      ['64:ff9b::a9fe:a9fe', 'link-local address'],
      ['64:ff9b::808:808', null],
      ['64:ff9b::8.8.8.8', null],
    ];
    for (const [address, reason] of table) assert.equal(refusedAddressReason(address), reason, address);
  });

  it('refuses a URL or a DNS answer in the IPv4-mapped or local-use NAT64 ranges', async () => {
    await assert.rejects(
      checkDestination(new URL('http://[::ffff:8.8.8.8]/hook'), false),
      /is an IPv4-mapped address/,
    );
    const lookup = async () => [{ address: '64:ff9b:1::a00:1', family: 6 as const }];
    await assert.rejects(
      checkDestination(new URL('https://nat64.example/x'), false, lookup),
      /resolves to 64:ff9b:1::a00:1, a local-use NAT64 address/,
    );
  });

  it('refuses every non-public address, IPv4 and IPv6 (IPv4-mapped included)', () => {
    const refused = [
      '127.0.0.1',
      '127.255.0.9',
      '10.1.2.3',
      '172.16.0.1',
      '172.31.255.255',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '100.127.255.255',
      '0.0.0.0',
      '224.0.0.1',
      '255.255.255.255',
      '::',
      '::1',
      'fe80::1',
      'fe80::1%eth0',
      'fc00::1',
      'fd12:3456::1',
      'ff02::1',
      '::ffff:127.0.0.1',
      '::ffff:7f00:1',
      '::ffff:10.0.0.1',
      '::ffff:169.254.169.254',
      '::127.0.0.1',
      '64:ff9b::a9fe:a9fe',
      '2002:c0a8:0101::1',
      '[::1]',
    ];
    for (const a of refused) assert.notEqual(refusedAddressReason(a), null, a);
    const allowed = [
      '93.184.216.34',
      '8.8.8.8',
      '172.32.0.1',
      '100.128.0.1',
      '2606:4700::1111',
      '64:ff9b::808:808',
    ];
    for (const a of allowed) assert.equal(refusedAddressReason(a), null, a);
    assert.equal(refusedAddressReason('127.0.0.1'), 'loopback address');
    assert.equal(refusedAddressReason('::ffff:192.168.0.1'), 'private address');
    assert.equal(refusedAddressReason('fd00::1'), 'unique-local address');
    assert.equal(refusedAddressReason('100.64.1.1'), 'carrier-grade NAT address');
    assert.equal(refusedAddressReason('not-an-ip'), 'not an IP address');
  });

  it('checks every resolved address and connects to the checked one', async () => {
    const lookup = async () => [
      { address: '93.184.216.34', family: 4 as const },
      { address: '10.0.0.5', family: 4 as const },
    ];
    await assert.rejects(
      checkDestination(new URL('https://rebind.example/x'), false, lookup),
      /resolves to 10\.0\.0\.5, a private address/,
    );
    assert.deepEqual(await checkDestination(new URL('https://rebind.example/x'), true, lookup), {
      address: '93.184.216.34',
      family: 4,
    });
    await assert.rejects(checkDestination(new URL('http://[::1]:80/'), false), /is a loopback address/);
    await assert.rejects(checkDestination(new URL('http://169.254.169.254/latest'), false), /link-local/);
  });

  it('classifies outcomes and backs off exponentially with jitter and a cap', () => {
    assert.equal(classify(200), 'success');
    assert.equal(classify(204), 'success');
    for (const s of [null, 408, 429, 500, 502, 503]) assert.equal(classify(s), 'retry', String(s));
    for (const s of [301, 400, 401, 403, 404, 410, 422]) assert.equal(classify(s), 'permanent', String(s));
    assert.equal(backoffMs(1, 1000, 60_000, 0), 500);
    assert.equal(backoffMs(1, 1000, 60_000, 0.999999), 1000);
    assert.equal(backoffMs(3, 1000, 60_000, 1), 4000);
    assert.equal(backoffMs(20, 1000, 60_000, 1), 60_000);
    assert.ok(backoffMs(20, 1000, 60_000, 0) >= 30_000);
  });

  it('signs "<timestamp>.<body>" with HMAC-SHA256 and refuses stale timestamps', () => {
    const sig = signBody('s3cret', 1700000000000, '{"a":1}');
    // echo -n '1700000000000.{"a":1}' | openssl dgst -sha256 -hmac s3cret
    assert.equal(sig, 'sha256=8a6f992378d0d47b6fcdf1cc8d72e46ba5c789b2c9d3a538be31fe07d598ba6d');
    const headers = { timestamp: '1700000000000', signature: sig };
    assert.ok(verifySignature('s3cret', headers, '{"a":1}', { now: 1700000000000 }));
    assert.ok(!verifySignature('s3cret', headers, '{"a":2}', { now: 1700000000000 }));
    assert.ok(!verifySignature('s3cret', headers, '{"a":1}', { now: 1700000000000 + 10 * 60_000 }));
  });

  it('formats Slack and Discord messages', () => {
    const e: EventEnvelope = {
      id: 'e1',
      type: 'invite.sent',
      occurred_at: 0,
      org_id: 'o',
      realm_id: null,
      subject_id: 'i1',
      data: { email: 'ann@x.test', role: 'member', nested: { a: 1 } },
    };
    assert.equal(summarize(e), 'Invitation sent to ann@x.test (member)');
    const s = slackPayload(e);
    assert.equal(s.text, 'Invitation sent to ann@x.test (member)');
    assert.equal(s.blocks[0]!.type, 'section');
    const d = discordPayload(e);
    assert.equal(d.content, 'Invitation sent to ann@x.test (member)');
    assert.equal(d.embeds[0]!.title, 'invite.sent');
    assert.deepEqual(
      d.embeds[0]!.fields.map((f) => f.name),
      ['event', 'email', 'role'],
    );
  });
});

import assert from 'node:assert/strict';
import { once } from 'node:events';
import { after, before, describe, it } from 'node:test';
import type { TestHub } from '../../../test/helpers/hub.js';
import { allowOrgTeams, hubWithTeam, registerAgent } from '../../../test/helpers/runs.js';
import { connectDaemon, type TunnelClient } from '../../../test/helpers/tunnel-client.js';
import type { World } from '../../../test/helpers/world.js';
import type { CommandFrame } from '../../shared/protocol.js';
import { sendCommand } from '../daemons/commands.js';

describe('offers go to a few daemons, the least loaded first', () => {
  let h: TestHub;
  let w: World;
  let realmId: string;
  const daemons: { id: string; token: string; c: TunnelClient }[] = [];
  before(async () => {
    ({ h, w } = await hubWithTeam('solo', { config: { offerFanout: 2 } }));
    realmId = (await h.ok('realms/new', { org_id: w.orgId, name: 'fanout' })).data.id;
    for (let i = 0; i < 4; i++) {
      const dt = await h.ok('realms/create_daemon_token', { realm_id: realmId, name: `d${i}` });
      const online = once(h.running.hub.tunnel.events, 'connected');
      const c = await connectDaemon(h.url, dt.data.token);
      await online;
      daemons.push({ id: dt.data.daemon_id, token: dt.data.token, c });
    }
    await allowOrgTeams(h, w.orgId);
    // Each connection's dispatch token signed once, so that later commands leave in the order sent.
    for (const d of daemons) await receivedBy(d);
  });
  after(async () => {
    for (const d of daemons) {
      const offline = once(h.running.hub.tunnel.events, 'disconnected');
      await d.c.close();
      await offline;
    }
    await h.close();
  });

  /**
   * The commands a daemon received before a marker command sent to it now: its connection carries
   * the marker after every command sent to it before (once its dispatch token is signed, see
   * `before`). Offers leave without an outbox row, so they are read here, as the daemon gets them.
   */
  async function receivedBy(d: (typeof daemons)[number]): Promise<CommandFrame[]> {
    const marker = await sendCommand(h.running.hub, d.id, 'test/marker', {});
    const got: CommandFrame[] = [];
    for (;;) {
      const f = await d.c.nextAny();
      if (f.type !== 'command') continue;
      if (f.tx_id === marker) break;
      got.push(f);
    }
    d.c.ack(marker);
    return got;
  }

  /** The daemons a run was offered to, and its queue item. */
  async function offersOf(runId: string): Promise<{ item: string; to: string[] }> {
    const run = await h.running.hub.db
      .selectFrom('runs')
      .select('queue_item_id')
      .where('run_id', '=', runId)
      .executeTakeFirstOrThrow();
    const to: string[] = [];
    for (const d of daemons) {
      const offers = (await receivedBy(d)).filter(
        (f) =>
          f.path === 'offer_job' && (f.body as { queue_item_id: string }).queue_item_id === run.queue_item_id,
      );
      if (offers.length > 0) to.push(d.id);
    }
    return { item: run.queue_item_id!, to: to.sort() };
  }

  it('offers a run to offerFanout daemons, and the next one to daemons holding fewer runs', async () => {
    const first = (await h.ok('runs/new', { realm_id: realmId, team: 'solo' })).data.run_id;
    const a = await offersOf(first);
    assert.equal(a.to.length, 2);
    const winner = daemons.find((d) => d.id === a.to[0])!;
    const won = await h.call('queue/claim', { queue_item_id: a.item, daemon_id: winner.id }, winner.token);
    assert.equal(won.body.data.claimed, true);
    // The winner now holds a run; the three others hold none: the next offer skips the winner.
    const second = (await h.ok('runs/new', { realm_id: realmId, team: 'solo' })).data.run_id;
    const b = await offersOf(second);
    assert.equal(b.to.length, 2);
    assert.ok(!b.to.includes(winner.id), `offered to ${b.to.join(', ')}; ${winner.id} holds a run`);
  });

  it('offers a single-agent run where a team that uses the agent is installed, and only there', async () => {
    const run = (await h.ok('runs/new', { realm_id: realmId, agent: 'noop' })).data.run_id;
    const offered = await offersOf(run);
    assert.equal(offered.to.length, 2);
    assert.ok(offered.to.every((id) => daemons.some((d) => d.id === id)));
    // An agent that no installed team uses: its run waits, offered to nobody.
    await registerAgent(h, w.orgId, 'stray', 'stray.js');
    const stray = (await h.ok('runs/new', { realm_id: realmId, agent: 'stray' })).data;
    assert.equal(stray.state, 'queued');
    const row = await h.running.hub.db
      .selectFrom('runs')
      .select(['state', 'queue_item_id'])
      .where('run_id', '=', stray.run_id)
      .executeTakeFirstOrThrow();
    assert.deepEqual(row, { state: 'queued', queue_item_id: null });
  });
});

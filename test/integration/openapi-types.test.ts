import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import openapiTS, { astToString } from 'openapi-typescript';
import { z } from 'zod';
import { REQUESTS_FILE, requestTypesSource } from '../../scripts/api-types.js';
import { daemonOpenApi } from '../../src/daemon/openapi.js';
import { daemonRoutes } from '../../src/daemon/routes.js';
import { hubOps } from '../../src/hub/ops.js';
import { ApiError, type Client, createClient } from '../../src/shared/api/client.js';
import { DAEMON_REPLIES } from '../../src/shared/api/daemon.js';
import { HubErrorReply } from '../../src/shared/api/envelope.js';
import { type OpName, REPLIES } from '../../src/shared/api/operations.js';
import { startTestHub, type TestHub } from '../helpers/hub.js';
import { createOrgWithOwner } from '../helpers/world.js';

const API = fileURLToPath(new URL('../../src/shared/api/', import.meta.url));
const TSC = createRequire(import.meta.url).resolve('typescript/bin/tsc');

/** The success reply of `op` checked against its schema: exactly these fields, nothing more. */
function checkReply(op: OpName, reply: unknown): void {
  const schema = (REPLIES[op] as z.ZodObject).extend({ ok: z.literal(true) });
  const r = schema.safeParse(reply);
  assert.ok(r.success, `${op}: ${r.error?.message}\n${JSON.stringify(reply)}`);
}

describe('the API module, the OpenAPI replies and the typed client', () => {
  let h: TestHub;
  let client: Client;
  before(async () => {
    h = await startTestHub();
    client = createClient({ url: h.url, token: h.adminToken });
  });
  after(() => h.close());

  it('has a reply schema for every operation, and no schema for an operation that does not exist', () => {
    const names = hubOps.map((o) => o.name).sort();
    assert.deepEqual(Object.keys(REPLIES).sort(), names);
    const paths = daemonRoutes.map((r) => r.path).sort();
    assert.deepEqual(Object.keys(DAEMON_REPLIES).sort(), paths);
  });

  it('keeps the generated request types current (npm run gen:api)', async () => {
    assert.equal(readFileSync(REQUESTS_FILE, 'utf8'), await requestTypesSource());
  });

  it("gives openapi-typescript reply types equal to the API module's, for every operation of both APIs", async () => {
    const doc = (await (await fetch(`${h.url}/openapi.json`)).json()) as Record<string, unknown>;
    const dir = mkdtempSync(path.join(tmpdir(), 'svc-openapi-'));
    try {
      writeFileSync(path.join(dir, 'hub.ts'), astToString(await openapiTS(doc as never)));
      const daemonDoc = daemonOpenApi(daemonRoutes);
      writeFileSync(path.join(dir, 'daemon.ts'), astToString(await openapiTS(daemonDoc as never)));
      const api = (f: string) => JSON.stringify(path.join(API, f));
      writeFileSync(
        path.join(dir, 'check.ts'),
        [
          "import type { operations } from './hub.js';",
          "import type { operations as daemonOps } from './daemon.js';",
          `import type { DaemonReply, DaemonRoutePath } from ${api('daemon.js')};`,
          `import type { OpName, Reply } from ${api('operations.js')};`,
          `import type { HubErrorReply } from ${api('envelope.js')};`,
          // biome-ignore lint/suspicious/noTemplateCurlyInString: TypeScript source for tsc
          'type Id<K extends string> = K extends `${infer A}/${infer B}` ? `${A}_${Id<B>}` : K;',
          'type Op<K extends OpName> = operations[Id<K> & keyof operations];',
          "type Gen<K extends OpName> = Op<K>['responses'][200]['content']['application/json'];",
          "type GenError<K extends OpName> = Op<K>['responses']['default']['content']['application/json'];",
          'type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;',
          'type Differ = { [K in OpName]: Same<Gen<K>, Reply<K>> extends true ? never : K }[OpName];',
          'type ErrorsDiffer = { [K in OpName]: Same<GenError<K>, HubErrorReply> extends true ? never : K }[OpName];',
          'export const replies: [Differ] extends [never] ? true : Differ = true;',
          'export const errors: [ErrorsDiffer] extends [never] ? true : ErrorsDiffer = true;',
          'type DOp<P extends DaemonRoutePath> = daemonOps[Id<P> & keyof daemonOps];',
          "type DGen<P extends DaemonRoutePath> = DOp<P>['responses'][200]['content']['application/json'];",
          'type DDiffer = { [P in DaemonRoutePath]: Same<DGen<P>, { ok: true; data: DaemonReply<P> }> extends true ? never : P }[DaemonRoutePath];',
          'export const daemonReplies: [DDiffer] extends [never] ? true : DDiffer = true;',
          '',
        ].join('\n'),
      );
      const tsc = spawnSync(
        process.execPath,
        [
          TSC,
          '--noEmit',
          '--strict',
          '--skipLibCheck',
          '--target',
          'es2022',
          '--module',
          'nodenext',
          '--moduleResolution',
          'nodenext',
          '--types',
          'node',
          path.join(dir, 'check.ts'),
        ],
        { encoding: 'utf8' },
      );
      assert.equal(tsc.status, 0, `tsc: ${tsc.stdout}${tsc.stderr}`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('answers replies that match their schemas exactly, through the typed client', async () => {
    const seen: [OpName, unknown][] = [];
    const call = async <K extends OpName>(op: K, body: Parameters<Client['call']>[1] & object) => {
      const reply = await client.call(op, body as never);
      seen.push([op, reply]);
      return reply;
    };
    const org = await createOrgWithOwner(h, 'typed');
    const orgId = org.orgId;
    await call('auth/whoami', {});
    await call('orgs/get', { id: orgId });
    await call('orgs/list', {});
    await call('orgs/list_members', { org_id: orgId });
    const invite = await call('orgs/invite_member', { org_id: orgId, email: 'm@typed.test', role: 'member' });
    const realm = await call('realms/new', { org_id: orgId, name: 'typed-realm' });
    await call('realms/get', { id: realm.data.id });
    await call('realms/list', { org_id: orgId });
    await call('realms/list_members', { realm_id: realm.data.id });
    const daemon = await call('realms/create_daemon_token', { realm_id: realm.data.id, name: 'd1' });
    await call('daemons/list', { realm_id: realm.data.id });
    await call('daemons/get', { id: daemon.data.daemon_id });
    await call('settings/set', { key: 'typed.key', value: 'v' });
    await call('settings/get_by_key', { key: 'typed.key' });
    await call('settings/list', {});
    await call('settings/remove', { key: 'typed.key' });
    const token = await call('tokens/create', { name: 'typed' });
    await call('tokens/list', {});
    await call('tokens/revoke', { id: token.data.id });
    const group = await call('groups/new', { org_id: orgId, name: 'typed-group' });
    await call('groups/list', { org_id: orgId });
    await call('groups/remove', { id: group.data.id });
    await call('mesh/adapters/list', {});
    await call('agents/register', {
      org_id: orgId,
      manifest: 'name: typed-agent\nversion: 1.0.0\ncommand: ["true"]\n',
    });
    await call('agents/list', { org_id: orgId });
    const team = await call('teams/register', {
      org_id: orgId,
      definition: 'name: typed-team\nversion: 1.0.0\nphases:\n  - name: p\n    agent: typed-agent\n',
    });
    await call('teams/list', { org_id: orgId });
    await call('teams/get', { id: team.data.id });
    await call('teams/list_installs', { realm_id: realm.data.id });
    await call('workspaces/list', { realm_id: realm.data.id });
    const run = await call('runs/new', { realm_id: realm.data.id, team: 'typed-team', inputs: { a: 1 } });
    await call('runs/get_by_id', { run_id: run.data.run_id, with_history: true });
    await call('runs/list', { realm_id: realm.data.id });
    await call('runs/logs', { run_id: run.data.run_id });
    await call('runs/cancel', { run_id: run.data.run_id });
    await call('reviews/list', { realm_id: realm.data.id });
    const channel = await call('notification_channels/new', {
      realm_id: realm.data.id,
      name: 'typed-channel',
      destinations: [{ type: 'webhook', webhook_url: 'https://example.com/hook' }],
    });
    await call('notification_channels/list', { realm_id: realm.data.id });
    await call('realms/new_notification_rule', {
      realm_id: realm.data.id,
      event: 'run.ended',
      channel_ids: [channel.data.id],
    });
    await call('realms/list_notification_rules', { realm_id: realm.data.id });
    await call('notifications/list_deliveries', { channel_id: channel.data.id });
    assert.ok(invite.data.code);
    for (const [op, reply] of seen) checkReply(op, reply);
  });

  it('throws one ApiError with the code, message, details and status of both error shapes', async () => {
    const refused = await client.call('runs/get_by_id', { run_id: 'nope' }).catch((e: unknown) => e);
    assert.ok(refused instanceof ApiError);
    assert.equal(refused.code, 'not_found');
    assert.equal(refused.status, 404);
    assert.ok(HubErrorReply.safeParse(refused.reply).success);
    const invalid = await client.call('runs/list', { realm_id: '' }).catch((e: unknown) => e);
    assert.ok(invalid instanceof ApiError);
    assert.equal(invalid.code, 'invalid_params');
    assert.equal(invalid.status, 400);
    assert.deepEqual((invalid.details as { issues: { field: string }[] }).issues[0]?.field, 'realm_id');
    assert.ok(HubErrorReply.safeParse(invalid.reply).success);
    const anonymous = createClient({ url: h.url });
    const unauthorized = await anonymous.call('auth/whoami', {}).catch((e: unknown) => e);
    assert.ok(unauthorized instanceof ApiError);
    assert.equal(unauthorized.code, 'unauthorized');
    const closed = createClient({ url: 'http://127.0.0.1:9' });
    const network = await closed.call('auth/whoami', {}).catch((e: unknown) => e);
    assert.ok(network instanceof ApiError);
    assert.equal(network.code, 'network');
    assert.equal(network.status, 0);
  });
});

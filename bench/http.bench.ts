/**
 * An authenticated read, `runs/get_by_id` with an org member's personal token (`svc_tok_`) on an
 * existing run, against a bare Fastify 5 route answering the same reply bytes: requests per second
 * and p99 from one keep-alive load generator in a child process, same concurrency, same duration.
 * The hub and the bare server each run alone in a child process of their own, compiled as a
 * deployed hub runs (bench/lib/hub-process.ts). Rounds alternate hub and baseline so that noise on
 * a shared machine hits both. On SQLite and on PostgreSQL (`SVC_BENCH_DB` picks one).
 */
import { mintToken } from '../src/shared/tokens.js';
import type { BenchResult } from './index.js';
import { startChild } from './lib/child.js';
import { benchDatabase, benchDatabases, percentile, post } from './lib/util.js';

const CONCURRENCY = 16;
const ROUNDS = 3;
const ROUND_MS = 2_500;
const WARMUP_MS = 500;

interface Load {
  requests: number;
  seconds: number;
  latencies: number[];
  errors: number;
  lastError: string;
}

export default async function httpBench(): Promise<BenchResult[]> {
  const out: BenchResult[] = [];
  const loader = await startChild('load-process.ts');
  try {
    for (const kind of await benchDatabases()) out.push(...(await oneDatabase(kind, loader)));
  } finally {
    await loader.close();
  }
  return out;
}

async function oneDatabase(
  kind: 'sqlite' | 'postgres',
  loader: Awaited<ReturnType<typeof startChild>>,
): Promise<BenchResult[]> {
  const db = benchDatabase(kind);
  const adminToken = mintToken('user');
  const hub = await startChild('hub-process.ts', {
    env: {
      SVC_BENCH_HUB: JSON.stringify({
        databaseUrl: db.url,
        ...(db.schema ? { schema: db.schema } : {}),
        adminToken,
      }),
    },
  });
  const hubUrl = hub.hello.url as string;
  try {
    const api = (op: string, body: unknown, token = adminToken) => post(`${hubUrl}/v1/${op}`, body, token);
    const org = await api('orgs/new', { slug: 'bench', owner: { email: 'owner@bench.test' } });
    const orgId = org.data.org.id as string;
    const session = await api(
      'invites/accept',
      { code: org.data.owner_invite.code, password: 'bench pw 1' },
      '',
    );
    const pat = await api('tokens/create', { name: 'bench' }, session.data.token);
    const token = pat.data.token as string;
    if (!token.startsWith('svc_tok_')) throw new Error(`expected a svc_tok_ token, got ${token.slice(0, 8)}`);
    const realmId = (await api('realms/list', { org_id: orgId })).data[0].id as string;
    await api('agents/register', {
      org_id: orgId,
      manifest: { name: 'noop', version: '1.0.0', command: [process.execPath, '-e', '0'] },
    });
    await api('teams/register', {
      org_id: orgId,
      definition: { name: 'noop-team', version: '1.0.0', phases: [{ name: 'only', agent: 'noop' }] },
    });
    const runId = (await api('runs/new', { realm_id: realmId, team: 'noop-team' })).data.run_id as string;
    const read = await compare(
      loader,
      `${hubUrl}/v1/runs/get_by_id`,
      JSON.stringify({ run_id: runId }),
      token,
    );
    // runs/new accepted: no daemon is online, so each run is written and stays queued.
    const create = await compare(
      loader,
      `${hubUrl}/v1/runs/new`,
      JSON.stringify({ realm_id: realmId, team: 'noop-team' }),
      token,
    );
    return [
      {
        name: `runs/get_by_id with svc_tok_, ${kind}`,
        unit: 'req/s',
        value: read.hub.rps,
        baseline: { name: 'bare Fastify route', value: read.bare.rps },
        higherIsBetter: true,
        note: read.note,
      },
      {
        name: `runs/get_by_id with svc_tok_, ${kind}, p99`,
        unit: 'ms',
        value: read.hub.p99,
        baseline: { name: 'bare Fastify route p99', value: read.bare.p99 },
        higherIsBetter: false,
        note: `p50 ${read.hub.p50.toFixed(2)} ms vs ${read.bare.p50.toFixed(2)} ms`,
      },
      {
        name: `runs/new accepted, ${kind}`,
        unit: 'runs/s',
        value: create.hub.rps,
        baseline: { name: 'bare Fastify route, same reply', value: create.bare.rps },
        higherIsBetter: true,
        note: `${create.note}; p99 ${create.hub.p99.toFixed(1)} ms vs ${create.bare.p99.toFixed(1)} ms`,
      },
    ];
  } finally {
    await hub.close();
    await db.cleanup();
  }
}

/**
 * The hub's route at `url` against a bare Fastify route answering the hub's own reply bytes, with
 * the same client: rounds alternate so that noise on a shared machine hits both.
 */
async function compare(
  loader: Awaited<ReturnType<typeof startChild>>,
  url: string,
  body: string,
  token: string,
) {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body,
  });
  const reply = await res.text();
  if (res.status >= 300) throw new Error(`${url}: ${res.status} ${reply}`);
  const path = new URL(url).pathname;
  const bare = await startChild('hub-process.ts', {
    args: ['fastify'],
    env: { SVC_BENCH_REPLY: JSON.stringify({ path, status: res.status, body: reply }) },
  });
  const bareUrl = `${bare.hello.url}${path}`;
  const load = async (target: string): Promise<Load> => {
    const r = (await loader.request('run', {
      url: target,
      body,
      headers: { authorization: `Bearer ${token}` },
      concurrency: CONCURRENCY,
      durationMs: ROUND_MS,
      warmupMs: WARMUP_MS,
    })) as Load;
    if (r.errors > 0) throw new Error(`${target}: ${r.errors} failed requests, last: ${r.lastError}`);
    return r;
  };
  const hub: Load[] = [];
  const base: Load[] = [];
  try {
    for (let i = 0; i < ROUNDS; i++) {
      base.push(await load(bareUrl));
      hub.push(await load(url));
    }
  } finally {
    await bare.close();
  }
  const sum = (rs: Load[]) => {
    const lat = rs.flatMap((r) => r.latencies).sort((a, b) => a - b);
    const seconds = rs.reduce((s, r) => s + r.seconds, 0);
    return { rps: lat.length / seconds, p50: percentile(lat, 50), p99: percentile(lat, 99), n: lat.length };
  };
  const h = sum(hub);
  const b = sum(base);
  const note = `${CONCURRENCY} keep-alive connections from a child process, ${ROUNDS}×${ROUND_MS / 1000} s alternating; hub n=${h.n}, baseline n=${b.n}`;
  return { hub: h, bare: b, note };
}

/**
 * Child process: a keep-alive HTTP load generator. `run` POSTs one JSON body to one URL from
 * `concurrency` loops (one keep-alive socket each) for `durationMs` after `warmupMs`, and answers
 * the completed requests per second and latency percentiles. Every reply must be 2xx.
 */
import http from 'node:http';
import { memory, serveParent } from './child.js';

interface RunRequest {
  url: string;
  body: string;
  headers: Record<string, string>;
  concurrency: number;
  durationMs: number;
  warmupMs: number;
}

function once(agent: http.Agent, url: URL, body: Buffer, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      {
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/json', 'content-length': body.length, ...headers },
      },
      (res) => {
        res.on('data', () => {});
        res.on('end', () => resolve(res.statusCode ?? 0));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

async function run(r: RunRequest) {
  const url = new URL(r.url);
  const body = Buffer.from(r.body);
  const agent = new http.Agent({ keepAlive: true, maxSockets: r.concurrency });
  const latencies: number[] = [];
  let errors = 0;
  let lastError = '';
  const start = performance.now();
  const measureFrom = start + r.warmupMs;
  const until = measureFrom + r.durationMs;
  await Promise.all(
    Array.from({ length: r.concurrency }, async () => {
      while (performance.now() < until) {
        const t0 = performance.now();
        try {
          const status = await once(agent, url, body, r.headers);
          if (status < 200 || status > 299) {
            errors++;
            lastError = `HTTP ${status}`;
          }
        } catch (err) {
          errors++;
          lastError = String(err);
        }
        const t1 = performance.now();
        if (t1 >= measureFrom && t1 <= until) latencies.push(t1 - t0);
      }
    }),
  );
  agent.destroy();
  return { requests: latencies.length, seconds: r.durationMs / 1000, latencies, errors, lastError };
}

serveParent({}, { run: (msg) => run(msg as RunRequest), memory: () => memory() });

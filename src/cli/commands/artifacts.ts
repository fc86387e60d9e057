import { createWriteStream } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Artifact } from '../../shared/api/artifacts.js';
import { formatBytes } from '../../shared/bytes.js';
import { defineCommand, session } from '../command.js';
import { CliError } from '../context.js';
import { col, time } from '../output.js';

export default defineCommand({
  summary: 'Artifacts of runs: list a run’s, download one',
  register(cmd, ctx) {
    cmd
      .command('list')
      .description('The artifacts the phases of a run saved')
      .argument('<run>', 'run id')
      .action(async (run: string, _opts, c) => {
        const s = session(ctx, c);
        const reply = await s.client.call<{ data: Artifact[] }>('artifacts/list', { run_id: run });
        s.printPage(
          { ...reply, next_cursor: null },
          [
            col('ID', 'id'),
            col('PHASE', 'phase'),
            col('NAME', 'name'),
            col('SIZE', (a) => formatBytes(a.size)),
            col('TYPE', 'content_type'),
            col('CREATED', (a) => time(a.created_at)),
          ],
          'No artifacts.',
        );
      });

    cmd
      .command('get')
      .description(
        'Download an artifact to a file (-o) or to stdout; the bytes are streamed, never held whole',
      )
      .argument('<artifact-id>')
      .option('-o, --output <file>', 'write to this file (replaced once the download is complete)')
      .action(async (id: string, opts: { output?: string }, c) => {
        const s = session(ctx, c);
        const url = `${s.client.url}/v1/artifacts/${encodeURIComponent(id)}`;
        let res: Response;
        try {
          res = await ctx.fetch(url, {
            headers: s.client.token ? { authorization: `Bearer ${s.client.token}` } : {},
          });
        } catch (err) {
          throw new CliError(`cannot reach the hub at ${s.client.url} (${(err as Error).message})`);
        }
        if (!res.ok || !res.body) {
          const body = (await res.json().catch(() => null)) as {
            error?: string | { code: string; message: string };
            code?: string;
          } | null;
          const e = body?.error;
          const msg =
            typeof e === 'object' && e
              ? `${e.code}: ${e.message}`
              : `${body?.code ?? res.status}: ${e ?? res.statusText}`;
          throw new CliError(msg);
        }
        const source = Readable.fromWeb(res.body as import('node:stream/web').ReadableStream);
        if (opts.output) {
          const file = path.resolve(ctx.cwd, opts.output);
          const tmp = `${file}.part`;
          try {
            await pipeline(source, createWriteStream(tmp));
            await rename(tmp, file);
          } catch (err) {
            await rm(tmp, { force: true });
            throw new CliError(`download failed: ${(err as Error).message}`);
          }
          ctx.stderr.write(`Saved ${res.headers.get('content-length') ?? '?'} bytes to ${opts.output}.\n`);
          return;
        }
        const out =
          ctx.stdout instanceof Writable
            ? ctx.stdout
            : new Writable({
                write(chunk, _enc, done) {
                  ctx.stdout.write(chunk);
                  done();
                },
              });
        await pipeline(source, out, { end: false });
      });
  },
});

import type { Command } from 'commander';
import { defineCommand } from '../command.js';
import { configPath, readConfig, writeConfig } from '../config.js';
import { usageError } from '../context.js';
import { formatTable } from '../output.js';

/** `svc profile list | use NAME`: the saved profiles (svc login, svc dev) and which one is current. */
export default defineCommand({
  summary: 'Saved profiles: list, use',
  register(cmd, ctx) {
    cmd
      .command('list')
      .description(`The saved profiles; * marks the current one (${configPath(ctx)})`)
      .action((_opts: unknown, c: Command) => {
        const json = c.optsWithGlobals<{ json?: boolean }>().json === true;
        const config = readConfig(ctx);
        const rows = Object.entries(config.profiles).map(([name, p]) => ({
          current: name === config.current,
          name,
          hub_url: p.hub_url,
          who: p.who ?? null,
        }));
        if (json) {
          ctx.stdout.write(`${JSON.stringify({ ok: true, data: rows }, null, 2)}\n`);
          return;
        }
        if (rows.length === 0) {
          ctx.stdout.write('No profiles (svc login saves one).\n');
          return;
        }
        ctx.stdout.write(
          formatTable(rows, [
            { header: '', value: (r) => (r.current ? '*' : ' ') },
            { header: 'NAME', value: (r) => r.name },
            { header: 'HUB', value: (r) => r.hub_url },
            { header: 'WHO', value: (r) => r.who },
          ]),
        );
      });

    cmd
      .command('use')
      .description('Make a saved profile the current one')
      .argument('<name>', 'profile name')
      .action((name: string) => {
        const config = readConfig(ctx);
        if (!config.profiles[name]) {
          const names = Object.keys(config.profiles);
          throw usageError(
            `no profile named "${name}"${names.length ? `; profiles: ${names.join(', ')}` : ''}`,
          );
        }
        config.current = name;
        writeConfig(ctx, config);
        ctx.stdout.write(`Now using profile "${name}" (${config.profiles[name]!.hub_url}).\n`);
      });
  },
});

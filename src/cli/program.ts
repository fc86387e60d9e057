import { readdirSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Command, CommanderError } from 'commander';
import { ApiError } from '../shared/api/client.js';
import type { CliCommand } from './command.js';
import { type CliContext, CliError } from './context.js';

const COMMANDS_DIR = new URL('./commands/', import.meta.url);

/** Command names from the files in `commands/` (`.ts` through tsx, `.js` when built). */
export function commandFiles(): Map<string, string> {
  const files = new Map<string, string>();
  for (const f of readdirSync(fileURLToPath(COMMANDS_DIR))) {
    const m = /^([a-z][a-z0-9-]*)\.(ts|js)$/.exec(f);
    if (m && !f.endsWith('.d.ts')) files.set(m[1]!, f);
  }
  return files;
}

async function loadCommand(file: string): Promise<CliCommand> {
  const mod = (await import(pathToFileURL(fileURLToPath(new URL(file, COMMANDS_DIR))).href)) as {
    default: CliCommand;
  };
  return mod.default;
}

/** The first operand of argv (the command name), skipping global options. */
function firstOperand(argv: string[]): string | undefined {
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--') return argv[i + 1];
    if (a === '--profile') i++;
    else if (!a.startsWith('-')) return a;
  }
  return undefined;
}

/**
 * Runs `svc <argv>` and answers the exit code: 0, 1 (API or runtime error), 2 (usage error).
 * Never exits the process and never prints a stack trace (unless SVC_DEBUG is set).
 */
export async function run(argv: string[], ctx: CliContext): Promise<number> {
  const program = new Command('svc')
    .description('svc: workflow hub, local daemon and API client')
    .option('--json', 'print raw JSON replies')
    .option('--profile <name>', 'use this saved profile (see svc login)')
    .showSuggestionAfterError()
    .exitOverride()
    .configureOutput({
      writeOut: (s) => ctx.stdout.write(s),
      writeErr: (s) => ctx.stderr.write(s),
    });

  const files = commandFiles();
  const wanted = firstOperand(argv);
  // Only the command being run is loaded; help and unknown commands need them all.
  const names = wanted && files.has(wanted) ? [wanted] : [...files.keys()].sort();
  const loaded = await Promise.all(names.map(async (n) => [n, await loadCommand(files.get(n)!)] as const));
  for (const group of ['servers', 'client'] as const) {
    for (const [name, def] of loaded) {
      if ((def.group ?? 'client') !== group) continue;
      const cmd = program
        .command(name)
        .description(def.summary)
        .helpGroup(group === 'servers' ? 'Servers:' : 'Client commands:');
      def.register(cmd, ctx);
    }
  }

  // The implicit `help` command joins the client commands.
  program.commandsGroup('Client commands:').helpCommand('help [command]', 'show help for a command');

  try {
    await program.parseAsync(argv, { from: 'user' });
    return 0;
  } catch (err) {
    if (err instanceof CommanderError) {
      // Commander has printed its message (or the help) already.
      return err.code === 'commander.helpDisplayed' || err.code === 'commander.version' ? 0 : 2;
    }
    // With --json an error is the API's error object on stderr: the hub's reply as it came, or the
    // same shape for an error found here.
    const json = program.opts<{ json?: boolean }>().json === true;
    const jsonError = (code: string, message: string) =>
      `${JSON.stringify({ ok: false, error: { code, message } }, null, 2)}\n`;
    if (err instanceof ApiError) {
      if (json) {
        const reply = err.reply && typeof err.reply === 'object' && 'error' in err.reply ? err.reply : null;
        ctx.stderr.write(reply ? `${JSON.stringify(reply, null, 2)}\n` : jsonError(err.code, err.message));
      } else ctx.stderr.write(`error: ${err.code}: ${err.message}\n`);
      return 1;
    }
    if (err instanceof CliError) {
      ctx.stderr.write(json ? jsonError(err.code, err.message) : `error: ${err.message}\n`);
      return err.exitCode;
    }
    const e = err as Error;
    if (json) {
      ctx.stderr.write(jsonError('cli_error', e?.message ?? String(err)));
      return 1;
    }
    ctx.stderr.write(`error: ${e?.message ?? String(err)}\n`);
    if (ctx.env.SVC_DEBUG) ctx.stderr.write(`${e?.stack ?? ''}\n`);
    return 1;
  }
}

import { Command, CommanderError } from 'commander';
import { ApiError } from '../shared/api/client.js';
import { COMMANDS } from './commands.js';
import { type CliContext, CliError } from './context.js';

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

  const wanted = firstOperand(argv);
  // Only the command being run is loaded; help and unknown commands need them all.
  const names = wanted && Object.hasOwn(COMMANDS, wanted) ? [wanted] : Object.keys(COMMANDS).sort();
  const loaded = await Promise.all(names.map(async (n) => [n, (await COMMANDS[n]!()).default] as const));
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

/**
 * What a command gets from the outside world. The entry point (index.ts) builds it from `process`;
 * tests and other callers may pass their own, so no command reads `process` directly.
 */
export interface CliContext {
  cwd: string;
  env: Record<string, string | undefined>;
  stdout: { write(s: string): unknown };
  stderr: { write(s: string): unknown };
  stdin: AsyncIterable<Buffer | string>;
  fetch: typeof fetch;
  /** Resolves with the signal name on SIGINT/SIGTERM; listening starts on the first call. */
  waitForShutdown(): Promise<string>;
}

/** An error meant for the user: printed as one `error: …` line; exit code 1 (API, runtime) or 2 (usage). */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: 1 | 2 = 1,
    /** The `code` of the error object printed with `--json`. */
    readonly code: string = exitCode === 2 ? 'usage' : 'cli_error',
  ) {
    super(message);
    this.name = 'CliError';
  }
}

export const usageError = (message: string) => new CliError(message, 2);

/** Reads all of stdin (for `--password-stdin`), without the final line break. */
export async function readStdin(ctx: CliContext, what: string): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of ctx.stdin) chunks.push(typeof c === 'string' ? Buffer.from(c) : c);
  const text = Buffer.concat(chunks)
    .toString('utf8')
    .replace(/\r?\n$/, '');
  if (!text) throw usageError(`${what} expected on stdin`);
  return text;
}

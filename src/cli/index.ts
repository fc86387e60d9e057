// The `svc` entry point: the only place that touches `process` and exits it.
import type { CliContext } from './context.js';
import { run } from './program.js';

let shutdown: Promise<string> | null = null;

const ctx: CliContext = {
  cwd: process.cwd(),
  env: process.env,
  stdout: process.stdout,
  stderr: process.stderr,
  // Made when first read: opening stdin costs a few milliseconds that `svc hub` does not need.
  get stdin() {
    return process.stdin;
  },
  fetch: globalThis.fetch,
  waitForShutdown() {
    shutdown ??= new Promise((resolve) => {
      let received = 0;
      const onSignal = (signal: NodeJS.Signals) => {
        received++;
        if (received === 1) resolve(signal);
        // A second signal while shutting down stops at once.
        else process.exit(signal === 'SIGINT' ? 130 : 143);
      };
      process.on('SIGINT', onSignal);
      process.on('SIGTERM', onSignal);
    });
    return shutdown;
  },
};

// No top-level await: the built CLI is one CommonJS bundle (scripts/build-cli.mjs).
void run(process.argv.slice(2), ctx).then((code) => process.exit(code));

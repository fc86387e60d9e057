#!/usr/bin/env node
// The `svc` executable: runs the compiled CLI (npm run build), or the TypeScript sources through tsx
// in a checkout that has not been built (or when SVC_CLI_SOURCE=1, as the tests do, so that a stale
// dist/ is never what they test).
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const built = fileURLToPath(new URL('../dist/cli/index.js', import.meta.url));
if (existsSync(built) && process.env.SVC_CLI_SOURCE !== '1') {
  await import(built);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import('../src/cli/index.ts');
}

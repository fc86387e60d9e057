#!/usr/bin/env node
// The `svc` executable: runs the compiled CLI (npm run build), or the TypeScript sources through tsx
// in a checkout that has not been built.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const built = fileURLToPath(new URL('../dist/cli/index.js', import.meta.url));
if (existsSync(built)) {
  await import(built);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import('../src/cli/index.ts');
}

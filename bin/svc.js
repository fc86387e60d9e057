#!/usr/bin/env node
// The `svc` executable: runs the compiled CLI (npm run build), or the TypeScript sources through tsx
// in a checkout that has not been built (or when SVC_CLI_SOURCE=1, so that a stale dist/ is never
// what runs). SVC_CLI_DIST=<dir> runs the CLI of another tree laid out like dist/: the suite's fresh
// transpile of the sources (scripts/transpile.mjs, see README.md "Development").
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const tree = process.env.SVC_CLI_DIST;
const built = tree
  ? path.resolve(tree, 'cli', 'index.js')
  : fileURLToPath(new URL('../dist/cli/index.js', import.meta.url));
if (tree || (existsSync(built) && process.env.SVC_CLI_SOURCE !== '1')) {
  await import(pathToFileURL(built).href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import('../src/cli/index.ts');
}

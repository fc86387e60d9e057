#!/usr/bin/env node
// Builds the daemon's native agent spawner (native/spawner.c → native/build/svc-spawner) with the
// machine's C compiler (`cc`, or $CC). `npm ci` runs it (postinstall), and so does `npm run build`.
// Without a compiler it says so and succeeds: the daemon then starts agents from its Node helper
// (src/daemon/runner/spawner.ts), which works everywhere and is slower where forks are slow. Skipped
// on Windows, and when the binary is newer than its source.
import { execFileSync } from 'node:child_process';
import { mkdirSync, renameSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SOURCE = path.join(ROOT, 'native', 'spawner.c');
const OUT = path.join(ROOT, 'native', 'build', 'svc-spawner');

const mtime = (file) => {
  try {
    return statSync(file).mtimeMs;
  } catch {
    return null;
  }
};

if (process.platform === 'win32') {
  console.log('native spawner: not built on Windows (the daemon uses its Node helper)');
} else if ((mtime(OUT) ?? 0) > (mtime(SOURCE) ?? 0)) {
  // up to date
} else {
  const cc = process.env.CC || 'cc';
  const tmp = `${OUT}.${process.pid}.tmp`;
  mkdirSync(path.dirname(OUT), { recursive: true });
  try {
    execFileSync(cc, ['-O2', '-Wall', '-o', tmp, SOURCE], { stdio: ['ignore', 'inherit', 'inherit'] });
    renameSync(tmp, OUT);
    console.log(`native spawner: ${path.relative(ROOT, OUT)}`);
  } catch (err) {
    rmSync(tmp, { force: true });
    console.warn(
      `native spawner: not built (${cc}: ${err.code ?? `exit ${err.status}`}); the daemon will start agents from its Node helper`,
    );
  }
}

#!/usr/bin/env node
// Lints the daemon's native agent spawner (native/spawner.c): C11 with every common warning as an
// error, checked by the machine's C compiler (`cc`, or $CC) without building anything. Part of
// `npm run lint`. A machine without a compiler skips it and says so (the daemon then uses its Node
// helper); CI's machine has one.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const source = fileURLToPath(new URL('../native/spawner.c', import.meta.url));
const cc = process.env.CC || 'cc';
const flags = ['-fsyntax-only', '-std=c11', '-Wall', '-Wextra', '-Wpedantic', '-Werror'];
try {
  execFileSync(cc, [...flags, source], { stdio: ['ignore', 'inherit', 'inherit'] });
} catch (err) {
  if (err.code === 'ENOENT') {
    console.log(`lint-native: no C compiler (${cc}); native/spawner.c not checked`);
  } else {
    console.error(`lint-native: native/spawner.c has warnings or errors (${cc} ${flags.join(' ')})`);
    process.exit(1);
  }
}

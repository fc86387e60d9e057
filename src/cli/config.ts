import {
  accessSync,
  chmodSync,
  constants,
  mkdirSync,
  readFileSync,
  renameSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createHubClient, type HubClient } from './client.js';
import { type CliContext, CliError, usageError } from './context.js';

/**
 * CLI profiles: `$SVC_CONFIG_DIR/config.json` (default `$XDG_CONFIG_HOME/svc` or `~/.config/svc`),
 * mode 0600 because it holds tokens. `svc login` writes one; `SVC_HUB_URL` and `SVC_TOKEN` override it.
 */
export interface Profile {
  hub_url: string;
  token: string;
  /** `session` tokens (from a password sign-in) are revoked by `svc logout`; personal ones are not. */
  token_kind: 'session' | 'personal';
  /** Who the token belongs to, as `auth/whoami` said at login (for display only). */
  who?: string;
}

export interface ConfigFile {
  current: string | null;
  profiles: Record<string, Profile>;
}

export const DEFAULT_HUB_URL = 'http://127.0.0.1:4800';

export function configPath(ctx: Pick<CliContext, 'env'>): string {
  const env = ctx.env;
  const dir =
    env.SVC_CONFIG_DIR ??
    path.join(env.XDG_CONFIG_HOME ?? path.join(env.HOME ?? os.homedir(), '.config'), 'svc');
  return path.join(dir, 'config.json');
}

export function readConfig(ctx: Pick<CliContext, 'env'>): ConfigFile {
  const file = configPath(ctx);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return { current: null, profiles: {} };
  }
  try {
    const parsed = JSON.parse(text) as Partial<ConfigFile>;
    return { current: parsed.current ?? null, profiles: parsed.profiles ?? {} };
  } catch {
    throw new CliError(`${file} is not valid JSON; fix or remove it`);
  }
}

/** Writes the file atomically with mode 0600 (its directory 0700). */
export function writeConfig(ctx: Pick<CliContext, 'env'>, config: ConfigFile): string {
  const file = configPath(ctx);
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, file);
  return file;
}

/**
 * Saves a profile and makes it the current one; with `keepCurrent`, only when no other saved
 * profile is current. Answers the file and the current profile after.
 */
export function saveProfile(
  ctx: Pick<CliContext, 'env'>,
  name: string,
  profile: Profile,
  opts: { keepCurrent?: boolean } = {},
): { file: string; current: string } {
  const config = readConfig(ctx);
  config.profiles[name] = profile;
  const keep = opts.keepCurrent && config.current !== null && config.profiles[config.current] !== undefined;
  if (!keep) config.current = name;
  return { file: writeConfig(ctx, config), current: config.current! };
}

/** Whether an executable `name` is on `$PATH`. */
export function onPath(env: Record<string, string | undefined>, name: string): boolean {
  for (const dir of (env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    try {
      accessSync(path.join(dir, name), constants.X_OK);
      if (statSync(path.join(dir, name)).isFile()) return true;
    } catch {}
  }
  return false;
}

/** The profile a command uses: `--profile`, else `SVC_PROFILE`, else the current one. */
export function profileName(ctx: Pick<CliContext, 'env'>, flag: string | undefined): string | null {
  return flag ?? ctx.env.SVC_PROFILE ?? readConfig(ctx).current;
}

export function connection(ctx: CliContext, profileFlag?: string): { url: string; token: string | null } {
  const name = profileName(ctx, profileFlag);
  const profile = name ? readConfig(ctx).profiles[name] : undefined;
  if (profileFlag && !profile) throw usageError(`no profile named "${profileFlag}" (see svc login)`);
  const url = ctx.env.SVC_HUB_URL?.split(',')[0]?.trim() || profile?.hub_url;
  if (!url) {
    throw usageError('no hub to talk to: run `svc login --hub URL …` or set SVC_HUB_URL and SVC_TOKEN');
  }
  return { url, token: ctx.env.SVC_TOKEN || profile?.token || null };
}

/** A client for the hub this command talks to. */
export function hubClient(ctx: CliContext, profileFlag?: string): HubClient {
  return createHubClient({ ...connection(ctx, profileFlag), fetch: ctx.fetch });
}

import type { Command } from 'commander';
import type { HubClient } from './client.js';
import { usageError } from './context.js';
import { looksLikeId, resolveRealm, resolveWorkspace } from './resolve.js';

/** `k=v` → inputs.k; the value is JSON when it parses (`n=3`, `files=["a","b"]`), else the string. */
export function parseInput(pair: string, acc: Record<string, unknown> = {}): Record<string, unknown> {
  const eq = pair.indexOf('=');
  if (eq < 1) throw usageError(`--input ${pair}: expected KEY=VALUE`);
  const raw = pair.slice(eq + 1);
  let value: unknown = raw;
  try {
    value = JSON.parse(raw);
  } catch {}
  return { ...acc, [pair.slice(0, eq)]: value };
}

/** What a schedule or trigger starts, as options shared by `svc schedules` and `svc triggers`. */

export interface TargetOpts {
  team?: string;
  agent?: string;
  workspace?: string;
  input: Record<string, unknown>;
  realm?: string;
  org?: string;
}

export function targetOptions(cmd: Command, required: boolean): Command {
  return cmd
    .option('--team <team>', `team name, name@version or team id${required ? ' (or --agent)' : ''}`)
    .option('--agent <agent>', 'one agent (name or name@version) instead of a team')
    .option('--workspace <workspace>', 'workspace id, or its name or path in --realm')
    .option('--input <key=value>', 'an input (repeatable; JSON values are parsed)', parseInput, {})
    .option('--realm <realm>', 'realm id or name (default "default")')
    .option('--org <org>', 'organization id or slug (to find a realm by name)');
}

/** The request fields of the target options given (for an update: only those given). */
export async function targetBody(
  client: HubClient,
  o: TargetOpts,
  required: boolean,
): Promise<Record<string, unknown>> {
  if (o.team && o.agent) throw usageError('give --team or --agent, not both');
  if (required && !o.team && !o.agent) throw usageError('give --team or --agent');
  const body: Record<string, unknown> = {};
  if (o.agent) body.agent = o.agent;
  if (o.team) body[looksLikeId(o.team) ? 'team_id' : 'team'] = o.team;
  if (o.workspace) {
    body.workspace_id = looksLikeId(o.workspace)
      ? o.workspace
      : await resolveWorkspace(client, await realmOf(client, o), o.workspace);
  }
  if (Object.keys(o.input).length) body.inputs = o.input;
  return body;
}

export const realmOf = (client: HubClient, o: TargetOpts) =>
  resolveRealm(client, o.realm ?? 'default', o.org);

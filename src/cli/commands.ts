/**
 * Every `svc` command by name, each module loaded only when its command runs (help loads them all).
 * A static list, so that a bundler sees every command (scripts/build-cli.mjs); the suite checks that it
 * names each file of `commands/` (src/cli/commands.test.ts).
 */
import type { CliCommand } from './command.js';

type Loader = () => Promise<{ default: CliCommand }>;

export const COMMANDS: Record<string, Loader> = {
  agents: () => import('./commands/agents.js'),
  artifacts: () => import('./commands/artifacts.js'),
  call: () => import('./commands/call.js'),
  channels: () => import('./commands/channels.js'),
  daemon: () => import('./commands/daemon.js'),
  daemons: () => import('./commands/daemons.js'),
  dev: () => import('./commands/dev.js'),
  groups: () => import('./commands/groups.js'),
  hub: () => import('./commands/hub.js'),
  invites: () => import('./commands/invites.js'),
  login: () => import('./commands/login.js'),
  logout: () => import('./commands/logout.js'),
  mesh: () => import('./commands/mesh.js'),
  orgs: () => import('./commands/orgs.js'),
  profile: () => import('./commands/profile.js'),
  realms: () => import('./commands/realms.js'),
  reviews: () => import('./commands/reviews.js'),
  rules: () => import('./commands/rules.js'),
  runs: () => import('./commands/runs.js'),
  schedules: () => import('./commands/schedules.js'),
  secrets: () => import('./commands/secrets.js'),
  settings: () => import('./commands/settings.js'),
  teams: () => import('./commands/teams.js'),
  tokens: () => import('./commands/tokens.js'),
  triggers: () => import('./commands/triggers.js'),
  whoami: () => import('./commands/whoami.js'),
  workspaces: () => import('./commands/workspaces.js'),
};

import { addCatalogCommands } from '../catalog-commands.js';
import type { CatalogRow } from '../catalog-refs.js';
import { defineCommand } from '../command.js';
import { col, time } from '../output.js';

type AgentRow = CatalogRow & { manifest: { command?: string[]; timeout_ms?: number } };

export default defineCommand({
  summary: 'The agent catalog: register, list, get, remove',
  register(cmd, ctx) {
    addCatalogCommands<AgentRow>(cmd, ctx, {
      ops: 'agents',
      noun: 'agent',
      field: 'manifest',
      fileName: 'manifest',
      listDescription: "An organization's agents, newest version first",
      getDescription: 'Show an agent version and its manifest',
      removeDescription: 'Remove an agent version (refused while a team version uses it)',
      columns: [
        col('ID', 'id'),
        col('NAME', 'name'),
        col('VERSION', 'version'),
        col('TYPE', 'agent_type'),
        col('DESCRIPTION', 'description'),
        col('UPDATED', (a) => time(a.updated_at)),
      ],
      record: (a) => [
        ['id', a.id],
        ['name', a.name],
        ['version', a.version],
        ['type', a.agent_type],
        ['description', a.description],
        ['command', a.manifest.command?.join(' ')],
        ['timeout', a.manifest.timeout_ms === undefined ? '-' : `${a.manifest.timeout_ms} ms`],
        ['updated', time(a.updated_at)],
      ],
    });
  },
});

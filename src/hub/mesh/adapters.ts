/**
 * The mesh networks a hub can put its daemons on (CONTRACT.md §8), and which of them a caller sees.
 * Pure: the catalog is data, visibility is a function of the caller and one setting.
 */
export type AdapterSettingType = 'string' | 'secret' | 'url' | 'boolean';

export interface AdapterSetting {
  key: string;
  label: string;
  type: AdapterSettingType;
  required: boolean;
}

export interface MeshAdapter {
  id: string;
  name: string;
  description: string;
  settings: AdapterSetting[];
  enabled: boolean;
}

/** The deployment setting listing the adapters users may see. */
export const ENABLED_ADAPTERS_SETTING = 'mesh.enabled_adapters';

export const BUILTIN_ADAPTERS: readonly Omit<MeshAdapter, 'enabled'>[] = [
  {
    id: 'tailscale',
    name: 'Tailscale',
    description: 'Joins daemons to a Tailscale tailnet with a pre-authorized auth key.',
    settings: [
      { key: 'auth_key', label: 'Auth key', type: 'secret', required: true },
      { key: 'tailnet', label: 'Tailnet name', type: 'string', required: true },
      { key: 'tags', label: 'ACL tags (comma-separated)', type: 'string', required: false },
      { key: 'ephemeral', label: 'Ephemeral nodes', type: 'boolean', required: false },
    ],
  },
  {
    id: 'headscale',
    name: 'Headscale',
    description: 'Joins daemons to a self-hosted Headscale control server.',
    settings: [
      { key: 'server_url', label: 'Server URL', type: 'url', required: true },
      { key: 'api_key', label: 'API key', type: 'secret', required: true },
      { key: 'user', label: 'Headscale user', type: 'string', required: false },
    ],
  },
  {
    id: 'netbird',
    name: 'NetBird',
    description: 'Joins daemons to a NetBird network with a setup key.',
    settings: [
      { key: 'management_url', label: 'Management URL', type: 'url', required: true },
      { key: 'setup_key', label: 'Setup key', type: 'secret', required: true },
    ],
  },
  {
    id: 'zerotier',
    name: 'ZeroTier',
    description: 'Joins daemons to a ZeroTier network and authorizes them through the ZeroTier API.',
    settings: [
      { key: 'network_id', label: 'Network ID', type: 'string', required: true },
      { key: 'api_token', label: 'API token', type: 'secret', required: true },
      { key: 'api_url', label: 'API URL (self-hosted controller)', type: 'url', required: false },
    ],
  },
];

/**
 * The adapter ids named by `mesh.enabled_adapters`: a JSON array of strings or a comma-separated
 * list; blanks, case and unknown ids are tolerated (unknown ids simply match nothing).
 */
export function parseEnabledAdapters(value: string | null): Set<string> {
  if (value === null) return new Set();
  const text = value.trim();
  let items: unknown[] = text.split(',');
  if (text.startsWith('[')) {
    try {
      const parsed: unknown = JSON.parse(text);
      items = Array.isArray(parsed) ? parsed : [];
    } catch {
      items = [];
    }
  }
  return new Set(
    items
      .filter((v): v is string => typeof v === 'string')
      .map((v) => v.trim().toLowerCase())
      .filter(Boolean),
  );
}

/** A site administrator sees every adapter; other users only the enabled ones. */
export function visibleAdapters(isSiteAdmin: boolean, enabledSetting: string | null): MeshAdapter[] {
  const enabled = parseEnabledAdapters(enabledSetting);
  return BUILTIN_ADAPTERS.map((a) => ({
    ...a,
    settings: a.settings.map((s) => ({ ...s })),
    enabled: enabled.has(a.id),
  })).filter((a) => isSiteAdmin || a.enabled);
}

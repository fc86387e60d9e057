import type { Hub } from '../context.js';

/**
 * Called after any change that may change who belongs to a realm (realm members, org members,
 * group members). Pushes the new ACL to the connected daemons of the affected realms.
 * `orgId` means every realm of that organization.
 */
export async function aclChanged(_hub: Hub, _scope: { realmId?: string; orgId?: string }): Promise<void> {
  // Filled in by the tunnel (src/hub/daemons/tunnel.ts).
}

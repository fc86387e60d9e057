import type { RealmRole } from '../shared/permissions.js';

/** Who is calling, as established by the access guard (HTTP) or the tunnel (hub). */
export type Caller =
  /** A hub command through the tunnel. */
  | { kind: 'hub' }
  /** A process on this machine (loopback). */
  | { kind: 'local' }
  /** Another host with a dispatch token the hub signed for its own commands. */
  | { kind: 'dispatch' }
  /** A person on another host: a `svc_tok_` of a realm member, or a dispatch token issued to them. */
  | { kind: 'user'; userId: string; role: RealmRole | null; via: 'user_token' | 'dispatch_token' }
  /** Another host with a local token minted on this machine (while unconnected). */
  | { kind: 'local_token' };

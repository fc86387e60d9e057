/**
 * A secret of a realm (`realm_id` set) or an organization (`realm_id` null); `scope_id` is the
 * realm's or the organization's id. `value` is sealed (src/hub/secrets/cipher.ts), never plain.
 */
export interface SecretsTable {
  id: string;
  org_id: string;
  realm_id: string | null;
  scope_id: string;
  name: string;
  value: string;
  created_at: number;
  updated_at: number;
  /** The user who set it last. */
  updated_by: string | null;
}

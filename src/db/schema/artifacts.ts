/**
 * A file a run's phase saved (CONTRACT.md §13). The bytes are in the artifact store under `sha256`
 * (src/hub/artifacts/store.ts); `realm_id` is the run's, kept so that a pruned run's rows can go
 * without reading the run.
 */
export interface ArtifactsTable {
  id: string;
  run_id: string;
  realm_id: string;
  phase: string;
  name: string;
  size: number;
  sha256: string;
  content_type: string;
  created_at: number;
}

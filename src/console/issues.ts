/**
 * A refusal of the hub as a form shows it: each issue of `details.issues` at the field it names, and
 * one sentence naming them all (pure; unit-tested in issues.test.ts).
 */
import { ApiError } from '../shared/api/client.js';

/** Field issues of a refusal, keyed by the form's field names (`destinations.0.webhook_url` → `webhook_url`). */
export function fieldErrors(
  err: unknown,
  fields: { name: string; api?: string | undefined }[],
): { byField: Record<string, string>; summary: string | null } {
  const issues =
    err instanceof ApiError
      ? ((err.details as { issues?: { field: string; message: string }[] } | null)?.issues ?? [])
      : [];
  const byField: Record<string, string> = {};
  for (const i of issues) {
    const parts = i.field.split('.');
    const name = fields.find(
      (f) =>
        [i.field, parts[parts.length - 1], parts[0]].includes(f.name) ||
        (f.api !== undefined && (i.field === f.api || i.field.startsWith(`${f.api}.`))),
    )?.name;
    if (name) byField[name] = byField[name] ? `${byField[name]}; ${i.message}` : i.message;
  }
  const summary = issues.length
    ? `Not saved: ${issues.map((i) => `${i.field}: ${i.message}`).join('; ')}`
    : null;
  return { byField, summary };
}

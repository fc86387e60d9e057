/**
 * The "Start a run" form as a pure function: what the person filled in → the `runs/new` request, or
 * the first thing to fix, named. Unit-tested in start-run-form.test.ts.
 */

export interface StartRunForm {
  kind: 'team' | 'agent';
  /** Team or agent name. */
  name: string;
  /** A version, or '' for the newest. */
  version: string;
  /** A workspace id, or '' for any daemon of the realm. */
  workspaceId: string;
  runName: string;
  /** `fields`: key/value rows, values taken as text; `json`: one JSON object. */
  inputsMode: 'fields' | 'json';
  rows: { key: string; value: string }[];
  json: string;
  /** One line per phase: `phase: handle, handle`. */
  reviewers: string;
  /** '' for the default. */
  priority: string;
}

export type RunRequest = {
  realm_id: string;
  team?: string;
  agent?: string;
  workspace_id?: string;
  run_name?: string;
  inputs: Record<string, unknown>;
  reviewers?: Record<string, string[]>;
  priority?: number;
};

export type Built = { ok: true; body: RunRequest } | { ok: false; field: string; message: string };

const fail = (field: string, message: string): Built => ({ ok: false, field, message });

export function buildRunRequest(realmId: string, f: StartRunForm): Built {
  const name = f.name.trim();
  if (!name) return fail('name', `choose a ${f.kind}`);
  const ref = f.version.trim() ? `${name}@${f.version.trim()}` : name;
  const inputs = parseInputs(f);
  if ('error' in inputs) return fail('inputs', inputs.error);
  const reviewers = parseReviewers(f.reviewers);
  if ('error' in reviewers) return fail('reviewers', reviewers.error);
  const body: RunRequest = { realm_id: realmId, [f.kind]: ref, inputs: inputs.value };
  if (f.workspaceId) body.workspace_id = f.workspaceId;
  if (f.runName.trim()) body.run_name = f.runName.trim();
  if (Object.keys(reviewers.value).length > 0) body.reviewers = reviewers.value;
  if (f.priority.trim()) {
    const p = Number(f.priority);
    if (!Number.isInteger(p) || p < 0 || p > 9)
      return fail('priority', 'priority is a whole number from 0 to 9');
    body.priority = p;
  }
  return { ok: true, body };
}

function parseInputs(f: StartRunForm): { value: Record<string, unknown> } | { error: string } {
  if (f.inputsMode === 'json') {
    if (!f.json.trim()) return { value: {} };
    let parsed: unknown;
    try {
      parsed = JSON.parse(f.json);
    } catch (err) {
      return { error: `inputs are not valid JSON: ${(err as Error).message}` };
    }
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
      return { error: 'inputs must be a JSON object, like {"branch": "main"}' };
    return { value: parsed as Record<string, unknown> };
  }
  const value: Record<string, unknown> = {};
  for (const [i, row] of f.rows.entries()) {
    const key = row.key.trim();
    if (!key && !row.value) continue;
    if (!key) return { error: `input ${i + 1} has a value but no name` };
    if (key in value) return { error: `input "${key}" is given twice` };
    value[key] = row.value;
  }
  return { value };
}

function parseReviewers(text: string): { value: Record<string, string[]> } | { error: string } {
  const value: Record<string, string[]> = {};
  for (const [i, raw] of text.split('\n').entries()) {
    const line = raw.trim();
    if (!line) continue;
    const colon = line.indexOf(':');
    const phase = colon < 0 ? '' : line.slice(0, colon).trim();
    const handles =
      colon < 0
        ? []
        : line
            .slice(colon + 1)
            .split(/[\s,]+/)
            .filter(Boolean);
    if (!phase || handles.length === 0)
      return { error: `reviewers line ${i + 1}: write it as "phase: handle, handle"` };
    value[phase] = [...new Set([...(value[phase] ?? []), ...handles.map((h) => h.replace(/^@/, ''))])];
  }
  return { value };
}

/** The form filled in from an ended run, to run it again with the same inputs. */
export function formFromRun(
  run: { execution_type: string; inputs: Record<string, unknown>; workspace_id: string | null },
  ref: { name: string; version: string },
  reviewers: Record<string, string[]> | null,
): StartRunForm {
  const simple = Object.values(run.inputs).every((v) => typeof v === 'string');
  return {
    ...emptyForm(),
    kind: run.execution_type === 'agent' ? 'agent' : 'team',
    name: ref.name,
    version: ref.version,
    workspaceId: run.workspace_id ?? '',
    inputsMode: simple ? 'fields' : 'json',
    rows: simple ? Object.entries(run.inputs).map(([key, value]) => ({ key, value: String(value) })) : [],
    json: simple ? '' : JSON.stringify(run.inputs, null, 2),
    reviewers: Object.entries(reviewers ?? {})
      .map(([phase, handles]) => `${phase}: ${handles.join(', ')}`)
      .join('\n'),
  };
}

export function emptyForm(): StartRunForm {
  return {
    kind: 'team',
    name: '',
    version: '',
    workspaceId: '',
    runName: '',
    inputsMode: 'fields',
    rows: [{ key: '', value: '' }],
    json: '',
    reviewers: '',
    priority: '',
  };
}

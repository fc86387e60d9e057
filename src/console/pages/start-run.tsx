import { useEffect, useMemo, useState } from 'preact/hooks';
import { api, listAll } from '../api.js';
import { formatRoute } from '../router.js';
import { buildRunRequest, type StartRunForm } from '../start-run-form.js';
import type { Agent, TeamVersion, Workspace } from '../types.js';
import { Modal } from '../ui.js';

interface Catalog {
  teams: TeamVersion[];
  agents: Agent[];
  workspaces: Workspace[];
}

/**
 * "Start a run" (and "Run again", filled in from an ended run): team or agent, version, workspace or
 * any daemon, inputs as fields or JSON, reviewers, priority. On success the page opens the new run.
 */
export function StartRunDialog({
  orgId,
  realmId,
  initial,
  title,
  onClose,
}: {
  orgId: string;
  realmId: string;
  initial: StartRunForm;
  title: string;
  onClose: () => void;
}) {
  const [form, setForm] = useState<StartRunForm>(initial);
  const [catalog, setCatalog] = useState<Catalog | null>(null);
  const [problem, setProblem] = useState<{ field: string; message: string } | null>(null);
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    let live = true;
    Promise.all([
      listAll<'teams/list', TeamVersion>('teams/list', { org_id: orgId }, 4),
      listAll<'agents/list', Agent>('agents/list', { org_id: orgId }, 4),
      listAll<'workspaces/list', Workspace>('workspaces/list', { realm_id: realmId }, 2),
    ]).then(
      ([teams, agents, workspaces]) => live && setCatalog({ teams, agents, workspaces }),
      (err: Error) =>
        live && setProblem({ field: 'form', message: `Could not load the catalog: ${err.message}` }),
    );
    return () => {
      live = false;
    };
  }, [orgId, realmId]);

  const choices = useMemo(() => {
    const list: { name: string; version: string }[] =
      form.kind === 'team' ? (catalog?.teams ?? []) : (catalog?.agents ?? []).filter((a) => !a.is_system);
    const versions = new Map<string, string[]>();
    for (const x of list) versions.set(x.name, [...(versions.get(x.name) ?? []), x.version]);
    return versions;
  }, [catalog, form.kind]);

  const set = (patch: Partial<StartRunForm>) => {
    setForm((f) => ({ ...f, ...patch }));
    setProblem(null);
  };
  const value = (e: Event) => (e.target as HTMLInputElement).value;

  const submit = async (e: Event) => {
    e.preventDefault();
    const built = buildRunRequest(realmId, form);
    if (!built.ok) return setProblem(built);
    setBusy(true);
    try {
      const r = await api('runs/new', built.body);
      onClose();
      location.hash = formatRoute({ name: 'run', id: r.data.run_id });
    } catch (err) {
      setProblem({ field: 'form', message: (err as Error).message });
    } finally {
      setBusy(false);
    }
  };

  const invalid = (field: string) => (problem?.field === field ? { 'aria-invalid': true } : {});
  return (
    <Modal open title={title} onClose={onClose}>
      <form class="start-run" onSubmit={submit} aria-busy={catalog === null}>
        <fieldset class="segmented">
          <legend>Run</legend>
          {(['team', 'agent'] as const).map((k) => (
            <label key={k}>
              <input
                type="radio"
                name="kind"
                value={k}
                checked={form.kind === k}
                onChange={() => set({ kind: k, name: '', version: '' })}
              />
              {k === 'team' ? 'A team' : 'One agent'}
            </label>
          ))}
        </fieldset>
        <div class="row">
          <label>
            {form.kind === 'team' ? 'Team' : 'Agent'}
            <select
              key={catalog ? 'catalog' : 'loading'}
              name="name"
              required
              value={form.name}
              onChange={(e) => set({ name: value(e), version: '' })}
              {...invalid('name')}
            >
              <option value="">{catalog ? 'choose…' : 'loading…'}</option>
              {[...choices.keys()].map((n) => (
                <option key={n} value={n}>
                  {n}
                </option>
              ))}
            </select>
          </label>
          <label>
            Version
            <select
              key={catalog ? 'catalog' : 'loading'}
              name="version"
              value={form.version}
              onChange={(e) => set({ version: value(e) })}
            >
              <option value="">newest</option>
              {(choices.get(form.name) ?? []).map((v) => (
                <option key={v} value={v}>
                  {v}
                </option>
              ))}
            </select>
          </label>
        </div>
        <label>
          Where
          <select
            key={catalog ? 'catalog' : 'loading'}
            name="workspace"
            value={form.workspaceId}
            onChange={(e) => set({ workspaceId: value(e) })}
          >
            <option value="">any daemon of the realm (no workspace)</option>
            {(catalog?.workspaces ?? []).map((w) => (
              <option key={w.id} value={w.id} disabled={w.status !== 'ready'}>
                {w.name} — {w.path}
                {w.status !== 'ready' ? ` (${w.status})` : ''}
              </option>
            ))}
          </select>
        </label>
        <fieldset {...invalid('inputs')}>
          <legend>
            Inputs{' '}
            <button
              type="button"
              class="link"
              onClick={() => set({ inputsMode: form.inputsMode === 'fields' ? 'json' : 'fields' })}
            >
              {form.inputsMode === 'fields' ? 'edit as JSON' : 'edit as fields'}
            </button>
          </legend>
          {form.inputsMode === 'json' ? (
            <textarea
              name="inputs-json"
              rows={5}
              spellcheck={false}
              placeholder='{"branch": "main"}'
              value={form.json}
              onInput={(e) => set({ json: value(e) })}
            />
          ) : (
            <>
              {form.rows.map((row, i) => (
                <div class="row" key={i}>
                  <input
                    aria-label={`Input ${i + 1} name`}
                    placeholder="name"
                    value={row.key}
                    onInput={(e) =>
                      set({ rows: form.rows.map((r, j) => (j === i ? { ...r, key: value(e) } : r)) })
                    }
                  />
                  <input
                    aria-label={`Input ${i + 1} value`}
                    placeholder="value"
                    value={row.value}
                    onInput={(e) =>
                      set({ rows: form.rows.map((r, j) => (j === i ? { ...r, value: value(e) } : r)) })
                    }
                  />
                  <button
                    type="button"
                    aria-label={`Remove input ${i + 1}`}
                    onClick={() => set({ rows: form.rows.filter((_, j) => j !== i) })}
                  >
                    ×
                  </button>
                </div>
              ))}
              <button type="button" onClick={() => set({ rows: [...form.rows, { key: '', value: '' }] })}>
                Add input
              </button>
              <p class="hint">Values are text; use JSON for numbers, lists or objects.</p>
            </>
          )}
        </fieldset>
        <details open={form.reviewers !== '' || form.runName !== '' || form.priority !== ''}>
          <summary>More options</summary>
          <label>
            Run name
            <input
              name="run_name"
              placeholder="named after the team"
              value={form.runName}
              onInput={(e) => set({ runName: value(e) })}
            />
          </label>
          <label {...invalid('reviewers')}>
            Reviewers, one line per phase
            <textarea
              name="reviewers"
              rows={2}
              placeholder="draft: ada, grace"
              value={form.reviewers}
              onInput={(e) => set({ reviewers: value(e) })}
            />
          </label>
          <label {...invalid('priority')}>
            Priority (0–9, higher starts first; default 5)
            <input
              name="priority"
              type="number"
              min={0}
              max={9}
              value={form.priority}
              onInput={(e) => set({ priority: value(e) })}
            />
          </label>
        </details>
        {problem ? (
          <p class="note error" role="alert">
            {problem.message}
          </p>
        ) : null}
        <div class="buttons">
          <button type="submit" class="primary" disabled={busy || catalog === null}>
            {busy ? 'Starting…' : 'Start run'}
          </button>
          <button type="button" onClick={onClose}>
            Close
          </button>
        </div>
      </form>
    </Modal>
  );
}

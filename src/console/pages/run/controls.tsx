import { useState } from 'preact/hooks';
import { api } from '../../api.js';
import { explainBlocker, humanize } from '../../format.js';
import { runControls } from '../../permissions.js';
import type { Run } from '../../types.js';
import { Modal } from '../../ui.js';

/** A run's controls: cancel, resume, force-terminate, each behind a confirming dialog. */

type Action = 'cancel' | 'resume' | 'terminate';
const ACTION_TEXT: Record<Action, { title: string; button: string; busy: string }> = {
  cancel: { title: 'Cancel this run?', button: 'Cancel run', busy: 'Cancelling…' },
  resume: { title: 'Resume this run?', button: 'Resume', busy: 'Resuming…' },
  terminate: { title: 'Force-terminate this run?', button: 'Force terminate', busy: 'Terminating…' },
};

export function Controls({
  run,
  role,
  roleKnown,
  refresh,
}: {
  run: Run;
  role: Parameters<typeof runControls>[1];
  roleKnown: boolean;
  refresh: () => void;
}) {
  const [open, setOpen] = useState<Action | null>(null);
  const [reason, setReason] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  if (!roleKnown) return <div class="controls" aria-hidden="true" />;
  const c = runControls(run, role);
  const close = () => {
    setOpen(null);
    setReason('');
    setError(null);
  };
  const confirm = async (e: Event) => {
    e.preventDefault();
    if (!open) return;
    setBusy(true);
    setError(null);
    try {
      if (open === 'cancel')
        await api('runs/cancel', { run_id: run.run_id, ...(reason.trim() ? { reason: reason.trim() } : {}) });
      else if (open === 'resume') await api('runs/resume', { run_id: run.run_id });
      else await api('runs/force_terminate', { run_id: run.run_id, reason: reason.trim() });
      close();
      refresh();
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(false);
    }
  };
  const notes = [c.cancel.blocker, c.resume.blocker, c.terminate.blocker, c.roleNote].filter(Boolean);
  const none = !c.cancel.allowed && !c.resume.allowed && !c.terminate.allowed;
  if (none && notes.length === 0) notes.push(`Nothing to do: the run ${humanize(run.state)}.`);
  const ft = run.force_terminate;
  return (
    <section class="controls" aria-label="Run controls">
      <div class="buttons">
        {c.cancel.allowed ? (
          <button type="button" onClick={() => setOpen('cancel')}>
            Cancel run
          </button>
        ) : null}
        {c.resume.allowed ? (
          <button type="button" onClick={() => setOpen('resume')}>
            Resume
          </button>
        ) : null}
        {c.terminate.allowed ? (
          <button type="button" class="danger" onClick={() => setOpen('terminate')}>
            Force terminate
          </button>
        ) : null}
      </div>
      {notes.map((n) => (
        <p class="note" key={n}>
          {n}
        </p>
      ))}
      {ft.already_terminated ? (
        <p class="note">Terminated{ft.terminated_reason ? `: ${ft.terminated_reason}` : ''}.</p>
      ) : null}
      <Modal open={open !== null} title={open ? ACTION_TEXT[open].title : ''} onClose={close}>
        <form method="dialog" onSubmit={confirm}>
          {open === 'cancel' ? (
            <p>The daemon stops the agent (SIGTERM, then SIGKILL); live child runs are cancelled too.</p>
          ) : null}
          {open === 'resume' ? (
            <p>The run starts again at phase {run.current_phase ?? 'one'}; earlier outputs are kept.</p>
          ) : null}
          {open === 'terminate' ? (
            <p>
              Ends the run on the hub without its daemon ({explainBlocker(ft.trigger) || 'eligible'}). Use it
              only when the daemon cannot.
            </p>
          ) : null}
          {open === 'cancel' || open === 'terminate' ? (
            <label>
              Reason{open === 'terminate' ? ' (required)' : ''}
              <textarea
                rows={2}
                required={open === 'terminate'}
                value={reason}
                onInput={(e) => setReason((e.target as HTMLTextAreaElement).value)}
              />
            </label>
          ) : null}
          {error ? (
            <p class="note error" role="alert">
              {error}
            </p>
          ) : null}
          <div class="buttons">
            <button type="submit" class={open === 'terminate' ? 'danger' : 'primary'} disabled={busy}>
              {open ? (busy ? ACTION_TEXT[open].busy : ACTION_TEXT[open].button) : ''}
            </button>
            <button type="button" onClick={close} disabled={busy}>
              Keep it
            </button>
          </div>
        </form>
      </Modal>
    </section>
  );
}

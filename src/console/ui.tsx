/** Small shared pieces of the console's pages. */
import type { ComponentChildren } from 'preact';
import { useEffect, useRef } from 'preact/hooks';
import type { ApiError } from './api.js';
import { formatRelative, formatTime, humanize, isoTime } from './format.js';

export function StateBadge({ state }: { state: string }) {
  return <span class={`badge state-${state}`}>{humanize(state)}</span>;
}

/** A time shown relative to now, with the absolute time as its tooltip. */
export function Ago({ at, now }: { at: number | null; now: number }) {
  if (at === null) return <span class="muted">—</span>;
  return (
    <time dateTime={isoTime(at)} title={`${formatTime(at)} (${isoTime(at)})`}>
      {formatRelative(at, now)}
    </time>
  );
}

/** A local date and time, with how long ago and the ISO time as its tooltip. */
export function When({ at, now }: { at: number | null; now: number }) {
  if (at === null) return <span class="muted">—</span>;
  return (
    <time dateTime={isoTime(at)} title={`${formatRelative(at, now)} (${isoTime(at)})`}>
      {formatTime(at)}
    </time>
  );
}

export function ErrorNote({ error, what }: { error: ApiError | null; what?: string }) {
  if (!error) return null;
  return (
    <p class="note error" role="alert">
      {what ? `${what}: ` : ''}
      {error.message}
    </p>
  );
}

/**
 * Placeholder rows of the same height as real ones, so the page does not jump when data arrives;
 * `narrow` lists the columns hidden on narrow screens, as in the real rows.
 */
export function SkeletonRows({ rows, cols, narrow = [] }: { rows: number; cols: number; narrow?: number[] }) {
  return (
    <>
      {Array.from({ length: rows }, (_, i) => (
        <tr class="skeleton" key={i}>
          {Array.from({ length: cols }, (_, j) => (
            <td key={j} class={narrow.includes(j) ? 'hide-narrow' : undefined}>
              <span class="bone" aria-hidden="true" />
            </td>
          ))}
        </tr>
      ))}
    </>
  );
}

export function SkeletonBlock({ lines = 3 }: { lines?: number }) {
  return (
    <div class="skeleton-block" aria-hidden="true">
      {Array.from({ length: lines }, (_, i) => (
        <span class="bone" key={i} />
      ))}
    </div>
  );
}

/** The page's title; focused after navigation so keyboard and screen-reader users start there. */
export function PageTitle({ children, aside }: { children: ComponentChildren; aside?: ComponentChildren }) {
  return (
    <div class="page-head">
      <h1 tabIndex={-1} id="page-title">
        {children}
      </h1>
      {aside ? <div class="page-aside">{aside}</div> : null}
    </div>
  );
}

/** A modal dialog (native <dialog>: focus trap and Escape come with it). */
export function Modal({
  open,
  title,
  onClose,
  children,
}: {
  open: boolean;
  title: string;
  onClose: () => void;
  children: ComponentChildren;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const d = ref.current;
    if (!d) return;
    if (open && !d.open) d.showModal();
    if (!open && d.open) d.close();
  }, [open]);
  return (
    <dialog ref={ref} aria-labelledby="modal-title" onClose={onClose} onCancel={onClose}>
      <h2 id="modal-title">{title}</h2>
      {open ? children : null}
    </dialog>
  );
}

export function Empty({ children }: { children: ComponentChildren }) {
  return <p class="empty">{children}</p>;
}

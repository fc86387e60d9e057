/**
 * The console's one form: a native <dialog> with labelled fields, used for every create, edit and
 * remove. Escape closes it; the first field (or the first one the hub refused) gets the focus, and
 * the focus returns to the button that opened it. A refusal is shown at the top with the hub's
 * message and beside each field the hub named (`details.issues[].field`). When `onSubmit` answers
 * something to show (a token, a secret), the dialog shows it in place of the form, once.
 */
import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { fieldErrors } from './issues.js';

export type FieldValue = string | boolean | string[];
export type Values = Record<string, FieldValue>;

export interface Field {
  name: string;
  label: string;
  type?: 'text' | 'password' | 'url' | 'email' | 'number' | 'select' | 'checkbox' | 'checks';
  /** For select and checks. */
  options?: readonly { value: string; label: string }[];
  value?: FieldValue;
  required?: boolean;
  help?: string;
  placeholder?: string;
  /** Shown but not editable (the name of the secret being replaced). */
  readOnly?: boolean;
  /** The API's field this one stands for, when the names differ (`destinations` for a URL). */
  api?: string;
}

export interface FormSpec {
  title: string;
  /** A sentence above the fields. */
  intro?: ComponentChildren;
  fields: Field[];
  submit: string;
  danger?: boolean;
  /** Throws an ApiError to refuse; may answer what to show once instead of closing. */
  onSubmit(values: Values): Promise<ComponentChildren | undefined>;
}

const initial = (f: Field): FieldValue =>
  f.value ?? (f.type === 'checkbox' ? false : f.type === 'checks' ? [] : '');

export function FormDialog({ spec, onClose }: { spec: FormSpec | null; onClose: () => void }) {
  const ref = useRef<HTMLDialogElement>(null);
  const opener = useRef<HTMLElement | null>(null);
  useEffect(() => {
    const d = ref.current;
    if (!d) return;
    if (spec && !d.open) {
      opener.current = document.activeElement as HTMLElement | null;
      d.showModal();
    }
    if (!spec && d.open) d.close();
  }, [spec]);
  const close = () => {
    ref.current?.close();
    onClose();
    const back = opener.current?.isConnected ? opener.current : document.getElementById('page-title');
    back?.focus();
    opener.current = null;
  };
  return (
    <dialog ref={ref} aria-labelledby="form-title" onCancel={close} class="form-dialog">
      {spec ? <FormBody key={spec.title} spec={spec} close={close} /> : null}
    </dialog>
  );
}

function FormBody({ spec, close }: { spec: FormSpec; close: () => void }) {
  const [values, setValues] = useState<Values>(() =>
    Object.fromEntries(spec.fields.map((f) => [f.name, initial(f)])),
  );
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<{ message: string; byField: Record<string, string> } | null>(null);
  const [result, setResult] = useState<ComponentChildren | null>(null);
  const form = useRef<HTMLFormElement>(null);

  // Focus the first field, or after a refusal the first field it names.
  useEffect(() => {
    const root = form.current;
    if (!root) return;
    const target =
      root.querySelector<HTMLElement>('[aria-invalid="true"]') ??
      (error ? root.querySelector<HTMLElement>('[role="alert"]') : null) ??
      root.querySelector<HTMLElement>('input:not([readonly]), select, textarea, button');
    target?.focus();
  }, [error]);

  const set = (name: string, v: FieldValue) => setValues((cur) => ({ ...cur, [name]: v }));
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const shown = await spec.onSubmit(values);
      if (shown) setResult(shown);
      else close();
    } catch (err) {
      const { byField, summary } = fieldErrors(err, spec.fields);
      setError({ message: summary ?? (err as Error).message, byField });
    } finally {
      setBusy(false);
    }
  };

  if (result) {
    return (
      <div class="form-result">
        <h2 id="form-title">{spec.title}</h2>
        {result}
        <div class="buttons">
          <button type="button" class="primary" onClick={close}>
            Done
          </button>
        </div>
      </div>
    );
  }
  return (
    <form ref={form} onSubmit={submit} noValidate>
      <h2 id="form-title">{spec.title}</h2>
      {spec.intro ? <div class="intro">{spec.intro}</div> : null}
      {error ? (
        <p class="note error" role="alert" tabIndex={-1}>
          {error.message}
        </p>
      ) : null}
      {spec.fields.map((f) => (
        <FieldInput key={f.name} field={f} value={values[f.name]} error={error?.byField[f.name]} set={set} />
      ))}
      <div class="buttons">
        <button type="submit" class={spec.danger ? 'danger' : 'primary'} disabled={busy} aria-busy={busy}>
          {spec.submit}
        </button>
        <button type="button" onClick={close}>
          Cancel
        </button>
      </div>
    </form>
  );
}

function FieldInput({
  field: f,
  value,
  error,
  set,
}: {
  field: Field;
  value: FieldValue | undefined;
  error: string | undefined;
  set: (name: string, v: FieldValue) => void;
}) {
  const id = `f-${f.name}`;
  const described =
    [error ? `${id}-error` : '', f.help ? `${id}-help` : ''].filter(Boolean).join(' ') || undefined;
  const common = {
    id,
    name: f.name,
    required: f.required,
    'aria-invalid': error ? ('true' as const) : undefined,
    'aria-describedby': described,
  };
  const notes = (
    <>
      {f.help ? (
        <span class="help" id={`${id}-help`}>
          {f.help}
        </span>
      ) : null}
      {error ? (
        <span class="field-error" id={`${id}-error`}>
          {error}
        </span>
      ) : null}
    </>
  );
  if (f.type === 'checkbox') {
    return (
      <div class="field">
        <label class="check">
          <input
            type="checkbox"
            {...common}
            checked={value === true}
            onChange={(e) => set(f.name, (e.target as HTMLInputElement).checked)}
          />
          {f.label}
        </label>
        {notes}
      </div>
    );
  }
  if (f.type === 'checks') {
    const chosen = Array.isArray(value) ? value : [];
    return (
      <fieldset class="field" aria-invalid={common['aria-invalid']} aria-describedby={described}>
        <legend>{f.label}</legend>
        {f.options?.map((o) => (
          <label class="check" key={o.value}>
            <input
              type="checkbox"
              name={f.name}
              value={o.value}
              checked={chosen.includes(o.value)}
              onChange={(e) =>
                set(
                  f.name,
                  (e.target as HTMLInputElement).checked
                    ? [...chosen, o.value]
                    : chosen.filter((v) => v !== o.value),
                )
              }
            />
            {o.label}
          </label>
        ))}
        {notes}
      </fieldset>
    );
  }
  const text = typeof value === 'string' ? value : '';
  const onInput = (e: Event) => set(f.name, (e.target as HTMLInputElement).value);
  return (
    <div class="field">
      <label for={id}>
        {f.label}
        {f.required ? <span class="muted"> (required)</span> : null}
      </label>
      {f.type === 'select' ? (
        <select {...common} value={text} onChange={onInput}>
          {f.options?.map((o) => (
            <option key={o.value} value={o.value}>
              {o.label}
            </option>
          ))}
        </select>
      ) : (
        <input
          {...common}
          type={f.type ?? 'text'}
          value={text}
          readOnly={f.readOnly}
          placeholder={f.placeholder}
          autoComplete={f.type === 'password' ? 'new-password' : 'off'}
          spellcheck={false}
          onInput={onInput}
        />
      )}
      {notes}
    </div>
  );
}

/** A value the hub shows once (a token, a signing secret): copy it now, it will not be shown again. */
export function ShownOnce({
  label,
  value,
  children,
}: {
  label: string;
  value: string;
  children?: ComponentChildren;
}) {
  const [copied, setCopied] = useState<string | null>(null);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(value);
      setCopied('Copied.');
    } catch {
      setCopied('Copying was refused: select the text and copy it.');
    }
  };
  return (
    <div class="once">
      <p class="once-label">{label}</p>
      <div class="once-value">
        <code>{value}</code>
        <button type="button" onClick={copy}>
          Copy
        </button>
      </div>
      <p class="note" role="status">
        {copied ?? ''}
      </p>
      {children}
      <p class="note warn">
        <strong>It will not be shown again.</strong> Copy it now and keep it somewhere safe.
      </p>
    </div>
  );
}

/** The confirmation of a removal: a form without fields. */
export function confirmRemove(
  what: string,
  run: () => Promise<unknown>,
  intro?: ComponentChildren,
): FormSpec {
  return {
    title: `Remove ${what}?`,
    intro,
    fields: [],
    submit: 'Remove',
    danger: true,
    onSubmit: async () => {
      await run();
      return undefined;
    },
  };
}

/** `'  '` → undefined: optional text fields the user left empty are not sent. */
export const given = (v: FieldValue | undefined): string | undefined =>
  typeof v === 'string' && v.trim() !== '' ? v.trim() : undefined;
export const text = (v: FieldValue | undefined): string => (typeof v === 'string' ? v.trim() : '');

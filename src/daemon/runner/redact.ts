/**
 * Redaction of a run's secret values from its log lines, before they leave the machine
 * (CONTRACT.md §12). Each value is replaced by `***` in the forms an agent is likely to print:
 *
 * - as it is, and JSON-escaped (a value with quotes or newlines inside printed JSON);
 * - URL-encoded (`encodeURIComponent`, `+` for spaces, lower-case hex);
 * - base64 and base64url, with or without padding, also inside a longer base64 text: a value that
 *   starts 0, 1 or 2 bytes into a 3-byte group encodes to a run of characters that depends on the
 *   value only, and that run is what is replaced (the one or two characters at its edges, shared
 *   with the neighbouring bytes, stay);
 * - each line of a value that spans several lines (logs are line by line), when the line is at
 *   least MIN_PART characters long.
 *
 * Lines are whole when they get here (the agent's output is split at newlines after the stream
 * has joined its writes), so a value written in two pieces is one piece again. What is not
 * caught: other encodings (hex, gzip, …), a value split across two lines, and output the agent
 * writes to files or sends elsewhere (docs/security.md).
 */

export const MASK = '***';
/** Parts shorter than this (a line of a multi-line value, a base64 run) are left alone. */
const MIN_PART = 4;

function base64Runs(value: Buffer): string[] {
  const out: string[] = [];
  for (let shift = 0; shift < 3; shift++) {
    const enc = Buffer.concat([Buffer.alloc(shift), value])
      .toString('base64')
      .replace(/=+$/, '');
    // Characters that depend on the value's bits only: from the first that starts at or after the
    // value, to the last that ends within it.
    const first = Math.ceil((8 * shift) / 6);
    const last = Math.floor((8 * (shift + value.length)) / 6) - 1;
    if (last - first + 1 < MIN_PART) continue;
    const run = enc.slice(first, last + 1);
    out.push(run, run.replace(/\+/g, '-').replace(/\//g, '_'));
  }
  return out;
}

/** Every text that stands for `value` in a log line. */
export function formsOf(value: string): string[] {
  if (value === '') return [];
  const forms = new Set<string>([value]);
  forms.add(JSON.stringify(value).slice(1, -1));
  const url = encodeURIComponent(value);
  forms.add(url);
  forms.add(url.replace(/%20/g, '+'));
  forms.add(url.replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase()));
  const bytes = Buffer.from(value, 'utf8');
  forms.add(bytes.toString('base64'));
  forms.add(bytes.toString('base64url'));
  for (const r of base64Runs(bytes)) forms.add(r);
  if (/[\r\n]/.test(value)) {
    for (const line of value.split(/\r?\n/)) if (line.length >= MIN_PART) forms.add(line);
  }
  forms.delete('');
  return [...forms];
}

/** The values of one run; `redact` masks every form of each in a line. */
export class Redactor {
  /** Every form of every value, longest first, as one alternation: one scan of a line finds them all. */
  private pattern: RegExp | null = null;
  private readonly values = new Set<string>();

  add(values: Iterable<string>): void {
    let changed = false;
    for (const v of values) {
      if (v === '' || this.values.has(v)) continue;
      this.values.add(v);
      changed = true;
    }
    if (!changed) return;
    const all = new Set<string>();
    for (const v of this.values) for (const f of formsOf(v)) all.add(f);
    // Longest first, so a value inside a longer form does not leave the rest of that form behind.
    const forms = [...all].sort((a, b) => b.length - a.length);
    this.pattern = new RegExp(forms.map((f) => f.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|'), 'g');
  }

  get active(): boolean {
    return this.pattern !== null;
  }

  redact(text: string): string {
    return this.pattern ? text.replace(this.pattern, MASK) : text;
  }
}

import { useEffect, useState } from 'preact/hooks';
import type { Artifact } from '../../../shared/api/artifacts.js';
import { api, session } from '../../api.js';
import { formatBytes } from '../../format.js';
import { runStream, useLive } from '../../live.js';
import type { Run } from '../../types.js';

/**
 * A run's artifacts: a list with downloads, and a preview of text (the first 64 KB), diffs and
 * images. Bytes are fetched with the session token in the Authorization header (never in a URL)
 * and shown as text, or as an image through a `blob:` URL; nothing of an artifact is ever put in the
 * page as HTML (docs/console.md, docs/security.md).
 */

const PREVIEW_BYTES = 64 * 1024;

async function fetchBytes(a: Artifact, range?: string): Promise<Response> {
  const token = session.token();
  const res = await fetch(`/v1/artifacts/${encodeURIComponent(a.id)}`, {
    headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(range ? { range } : {}) },
    credentials: 'omit',
    cache: 'no-store',
  });
  if (!res.ok) throw new Error(`the hub answered HTTP ${res.status}`);
  return res;
}

const kindOf = (a: Artifact): 'image' | 'diff' | 'text' | null => {
  const t = a.content_type.split(';')[0]!;
  if (['image/png', 'image/jpeg', 'image/gif', 'image/webp'].includes(t)) return 'image';
  if (t === 'text/x-diff') return 'diff';
  if (t.startsWith('text/') || t === 'application/json' || t === 'application/yaml') return 'text';
  return null;
};

async function download(a: Artifact): Promise<void> {
  const blob = await (await fetchBytes(a)).blob();
  const url = URL.createObjectURL(blob);
  const link = document.createElement('a');
  link.href = url;
  link.download = a.name.split('/').pop() ?? 'artifact';
  link.click();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

function Preview({ a }: { a: Artifact }) {
  const kind = kindOf(a);
  const [text, setText] = useState<string | null>(null);
  const [image, setImage] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    let url: string | null = null;
    let gone = false;
    (async () => {
      if (kind === 'image') {
        url = URL.createObjectURL(await (await fetchBytes(a)).blob());
        if (!gone) setImage(url);
      } else {
        const res = await fetchBytes(a, a.size > PREVIEW_BYTES ? `bytes=0-${PREVIEW_BYTES - 1}` : undefined);
        const t = await res.text();
        if (!gone) setText(t);
      }
    })().catch((e: Error) => !gone && setError(e.message));
    return () => {
      gone = true;
      if (url) URL.revokeObjectURL(url);
    };
  }, [a.id, kind]);
  if (error) return <p class="error">{error}</p>;
  if (kind === 'image') return image ? <img class="artifact-image" src={image} alt={a.name} /> : null;
  if (text === null) return <p class="muted">Loading…</p>;
  const cut = a.size > PREVIEW_BYTES ? <p class="muted">First 64 KB of {formatBytes(a.size)}.</p> : null;
  if (kind === 'diff') {
    return (
      <>
        <pre class="artifact-text diff">
          {text.split('\n').map((line, i) => (
            <span
              key={i}
              class={
                line.startsWith('+')
                  ? 'add'
                  : line.startsWith('-')
                    ? 'del'
                    : line.startsWith('@@')
                      ? 'hunk'
                      : ''
              }
            >
              {line}
              {'\n'}
            </span>
          ))}
        </pre>
        {cut}
      </>
    );
  }
  return (
    <>
      <pre class="artifact-text">{text}</pre>
      {cut}
    </>
  );
}

export function RunArtifacts({ run, live }: { run: Run; live: boolean }) {
  const list = useLive(
    () => api('artifacts/list', { run_id: run.run_id }).then((r) => r.data),
    [run.run_id],
    live ? 5000 : null,
    // Artifacts come with a phase's steps: read again on the run's history events (and once more
    // when the run ends, as every part of the page is).
    live ? runStream(run.run_id, 'history') : null,
  );
  const [open, setOpen] = useState<string | null>(null);
  const [failed, setFailed] = useState<string | null>(null);
  if (!list.data || list.data.length === 0) return null;
  return (
    <section aria-labelledby="artifacts-h">
      <h2 id="artifacts-h">Artifacts</h2>
      {failed ? <p class="error">{failed}</p> : null}
      <div class="table-wrap">
        <table>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Phase</th>
              <th scope="col" class="num">
                Size
              </th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {list.data.map((a) => (
              <tr key={a.id} data-artifact-id={a.id}>
                <td>{a.name}</td>
                <td>{a.phase}</td>
                <td class="num">{formatBytes(a.size)}</td>
                <td>
                  {kindOf(a) ? (
                    <button type="button" onClick={() => setOpen(open === a.id ? null : a.id)}>
                      {open === a.id ? 'Hide' : 'Show'}
                    </button>
                  ) : null}{' '}
                  <button type="button" onClick={() => download(a).catch((e: Error) => setFailed(e.message))}>
                    Download
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {list.data
        .filter((a) => a.id === open)
        .map((a) => (
          <Preview key={a.id} a={a} />
        ))}
    </section>
  );
}

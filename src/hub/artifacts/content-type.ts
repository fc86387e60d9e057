/** The content type of an artifact, from its name's extension (a small table; else octet-stream). */
const BY_EXTENSION: Record<string, string> = {
  txt: 'text/plain; charset=utf-8',
  log: 'text/plain; charset=utf-8',
  md: 'text/markdown; charset=utf-8',
  csv: 'text/csv; charset=utf-8',
  diff: 'text/x-diff; charset=utf-8',
  patch: 'text/x-diff; charset=utf-8',
  json: 'application/json',
  xml: 'application/xml',
  yaml: 'application/yaml',
  yml: 'application/yaml',
  html: 'text/html; charset=utf-8',
  htm: 'text/html; charset=utf-8',
  svg: 'image/svg+xml',
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
  webp: 'image/webp',
  pdf: 'application/pdf',
  zip: 'application/zip',
  gz: 'application/gzip',
  tar: 'application/x-tar',
};

export function contentTypeOf(name: string): string {
  const m = /\.([A-Za-z0-9]{1,10})$/.exec(name);
  return (m && BY_EXTENSION[m[1]!.toLowerCase()]) || 'application/octet-stream';
}

/**
 * Types a browser may show inline from the hub's origin: plain text and raster images. Anything
 * else (HTML, SVG, which can run script, and everything unknown) is served as an attachment.
 */
export function servedInline(contentType: string): boolean {
  const base = contentType.split(';')[0]!.trim();
  return base === 'text/plain' || ['image/png', 'image/jpeg', 'image/gif', 'image/webp'].includes(base);
}

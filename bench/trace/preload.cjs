// A run's way, stamp by stamp: preload this into the hub and daemon processes of a bench
// (`NODE_OPTIONS="--require ./bench/trace/preload.cjs" npm run bench -- runs`, which every bench child
// inherits) and each process writes, when it exits, the stamps of what it did to
// $SVC_TRACE_DIR/trace.<pid>.json (default /tmp/svc-trace): every PostgreSQL round trip (the pipelines
// of src/db/pg-client.ts included) and SQLite statement with its duration, every tunnel frame sent and
// received, every HTTP request and its reply. SQLite statements under 50 µs are left out unless
// SVC_TRACE_ALL=1. bench/trace/show.mjs merges the files and prints one run's steps, or counts the
// statements. Times are performance.timeOrigin + performance.now(), comparable across processes.
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const { createRequire, syncBuiltinESMExports } = require('node:module');

const dir = process.env.SVC_TRACE_DIR ?? '/tmp/svc-trace';
const all = process.env.SVC_TRACE_ALL === '1';
/** [kind, start, end (0: an instant), text, rows (SQLite reads)] */
const stamps = [];
const now = () => performance.timeOrigin + performance.now();
const short = (text, n) => String(text).slice(0, n).replace(/\s+/g, ' ');

process.on('exit', () => {
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, `trace.${process.pid}.json`), JSON.stringify(stamps));
});
for (const signal of ['SIGTERM', 'SIGINT']) process.on(signal, () => process.exit(0));

// The project's own copies of the packages, whatever the process's working folder.
const requireHere = createRequire(path.join(__dirname, '..', '..', 'package.json'));

function tracePg(pg) {
  const query = pg.Client.prototype.query;
  pg.Client.prototype.query = function (...args) {
    const config = args[0];
    const start = now();
    if (config && typeof config.submit === 'function' && Array.isArray(config.statements)) {
      // A pipeline (src/db/pg-client.ts): done at its ReadyForQuery or its error.
      const label = `pipeline ${config.statements.map((s) => short(s.text, 40)).join(' | ')}`;
      const ready = config.handleReadyForQuery;
      const error = config.handleError;
      config.handleReadyForQuery = function (...more) {
        stamps.push(['pg', start, now(), label]);
        return ready.apply(this, more);
      };
      config.handleError = function (...more) {
        stamps.push(['pg', start, now(), `failed ${label}`]);
        return error.apply(this, more);
      };
      return query.apply(this, args);
    }
    const text = typeof config === 'string' ? config : (config?.text ?? '?');
    const result = query.apply(this, args);
    if (result && typeof result.then === 'function') {
      result.then(
        () => stamps.push(['pg', start, now(), short(text, 70)]),
        () => stamps.push(['pg', start, now(), `failed ${short(text, 70)}`]),
      );
    }
    return result;
  };
}

function traceSqlite(Database) {
  const statement = Object.getPrototypeOf(new Database(':memory:').prepare('select 1'));
  for (const method of ['run', 'all', 'get', 'iterate']) {
    const original = statement[method];
    statement[method] = function (...args) {
      const start = now();
      const result = original.apply(this, args);
      const end = now();
      if (all || end - start > 0.05) {
        const rows = Array.isArray(result) ? result.length : undefined;
        stamps.push(['sql', start, end, short(this.source, 60), ...(rows === undefined ? [] : [rows])]);
      }
      return result;
    };
  }
}

function traceWs(ws) {
  const WebSocket = ws.WebSocket ?? ws;
  const send = WebSocket.prototype.send;
  WebSocket.prototype.send = function (...args) {
    stamps.push(['ws>', now(), 0, short(args[0], 60)]);
    return send.apply(this, args);
  };
  const emit = WebSocket.prototype.emit;
  WebSocket.prototype.emit = function (...args) {
    if (args[0] === 'message') stamps.push(['ws<', now(), 0, short(args[1], 60)]);
    return emit.apply(this, args);
  };
}

function traceHttp(http) {
  const emit = http.Server.prototype.emit;
  http.Server.prototype.emit = function (...args) {
    const [name, req, res] = args;
    if (name === 'request') {
      stamps.push(['req', now(), 0, req.url]);
      res.on('finish', () => stamps.push(['res', now(), 0, req.url]));
    }
    return emit.apply(this, args);
  };
}

function traceSpawn(childProcess) {
  const spawn = childProcess.spawn;
  childProcess.spawn = function (...args) {
    const start = now();
    const child = spawn.apply(this, args);
    stamps.push(['spawn', start, now(), `${args[0]} ${args[1]?.[0] ?? ''}`]);
    return child;
  };
  syncBuiltinESMExports();
}

tracePg(requireHere('pg'));
traceSqlite(requireHere('better-sqlite3'));
traceWs(requireHere('ws'));
traceHttp(require('node:http'));
traceSpawn(require('node:child_process'));

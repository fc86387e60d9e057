import pino, { type Logger } from 'pino';

export type { Logger };

/** JSON logs on stdout; `SVC_LOG_LEVEL` sets the level (default info, `silent` in tests). */
export function createLogger(name: string, level = process.env.SVC_LOG_LEVEL ?? 'info'): Logger {
  return pino({ name, level, base: { svc: name } });
}

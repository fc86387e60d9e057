/**
 * Agent manifests and team definitions (CONTRACT.md §5): parsing from YAML, JSON or an object, and
 * validation. Pure functions; every failure is an AppError('bad_request') whose message says what
 * and where, with `details.issues` for schema problems.
 */
import { createRequire } from 'node:module';
import { z } from 'zod';
import { AppError, type FieldIssue } from '../../shared/errors.js';
import { tooDeepMessage, valueTooDeep } from '../../shared/json-depth.js';
import { SECRET_NAME, SECRET_NAME_RULE } from '../../shared/secret-key.js';

/**
 * The YAML parser, loaded at the first YAML document rather than with the hub: starting the hub
 * (a restart above all) does not need it, and it is a large package.
 */
let yaml: typeof import('yaml') | null = null;
const yamlParser = () => (yaml ??= createRequire(import.meta.url)('yaml') as typeof import('yaml'));

export const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;
const MAX_ALIASES = 100;

function bad(message: string, issues?: FieldIssue[]): AppError {
  return new AppError('bad_request', message, issues ? { issues } : undefined);
}

/** A YAML string, a JSON string or an object → a plain object. */
export function parseDocument(input: unknown, what: string): Record<string, unknown> {
  let value: unknown = input;
  if (typeof input === 'string') {
    const text = input.replace(/^\uFEFF/, '');
    if (text.trim() === '') throw bad(`${what} is empty`);
    if (/^\s*[{[]/.test(text)) {
      try {
        value = JSON.parse(text);
      } catch (e) {
        throw bad(`${what} is not valid JSON: ${(e as Error).message}`);
      }
    } else {
      const docs = yamlParser().parseAllDocuments(text);
      if (!Array.isArray(docs)) throw bad(`${what} is empty`);
      if (docs.length !== 1) throw bad(`${what} holds ${docs.length} YAML documents; send exactly one`);
      const doc = docs[0]!;
      const err = doc.errors[0];
      if (err) {
        const pos = err.linePos?.[0];
        const where = pos ? ` at line ${pos.line}, column ${pos.col}` : '';
        const reason = (err.message.split('\n')[0] ?? '').replace(/ at line \d+, column \d+:?$/, '');
        throw bad(`${what} is not valid YAML${where}: ${reason}`);
      }
      try {
        value = doc.toJS({ maxAliasCount: MAX_ALIASES });
      } catch (e) {
        throw bad(`${what} could not be read: ${(e as Error).message}`);
      }
    }
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw bad(`${what} must be a mapping of fields (got ${Array.isArray(value) ? 'a list' : typeof value})`);
  }
  if (valueTooDeep(value)) throw bad(tooDeepMessage(what));
  return value as Record<string, unknown>;
}

function issuesOf(err: z.ZodError, prefix: string): FieldIssue[] {
  return err.issues.map((i) => ({ field: [prefix, ...i.path.map(String)].join('.'), message: i.message }));
}

function check<T>(schema: z.ZodType<T>, value: unknown, what: string): T {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  const issues = issuesOf(r.error, what);
  throw bad(`invalid ${what}: ${issues.map((i) => `${i.field}: ${i.message}`).join('; ')}`, issues);
}

const versionString = z.string().trim().min(1, 'must not be empty').max(100);
/** YAML reads `version: 1.0` as the number 1; refuse numbers rather than silently change them. */
const version = z.unknown().transform((v, ctx) => {
  if (typeof v === 'number') {
    ctx.addIssue({ code: 'custom', message: 'must be a string (quote it: "1.0")' });
    return z.NEVER;
  }
  const r = versionString.safeParse(v);
  if (!r.success) {
    ctx.addIssue({ code: 'custom', message: r.error.issues[0]?.message ?? 'invalid' });
    return z.NEVER;
  }
  return r.data;
});
const catalogName = z.string().regex(NAME_PATTERN, 'letters, digits, ".", "_" and "-", at most 100');

const scalarString = z
  .union([z.string(), z.number(), z.boolean()])
  .transform((v) => String(v))
  .pipe(z.string().max(32_768));

export const ExecSpec = z.object({
  command: z
    .array(z.string().min(1, 'must not be empty'), 'must be a list of strings, e.g. ["node", "agent.js"]')
    .min(1, 'must name a program'),
  env: z
    .record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'is not a valid variable name'), scalarString)
    .default({}),
  timeout_ms: z
    .number()
    .int()
    .min(1)
    .max(7 * 24 * 60 * 60 * 1000)
    .default(600_000),
  // Names of realm or organization secrets the agent gets as environment variables (CONTRACT.md §12).
  secrets: z
    .array(
      z
        .string()
        .regex(SECRET_NAME, SECRET_NAME_RULE)
        .refine((n) => !n.startsWith('SVC_'), 'SVC_ names are the daemon’s own'),
      'must be a list of secret names, e.g. [API_KEY]',
    )
    .max(100)
    .refine((l) => new Set(l).size === l.length, 'names a secret twice')
    .default([]),
});

const ManifestBase = z.looseObject({
  name: catalogName.optional(),
  version: version.optional(),
  description: z.string().max(10_000).optional(),
  agent_type: z.string().min(1).max(100).optional(),
});

export const AGENT_TYPES = ['exec'] as const;

export interface AgentManifest {
  name: string;
  version: string;
  description: string;
  agent_type: string;
  command: string[];
  env: Record<string, string>;
  timeout_ms: number;
  /** Secrets the agent gets as environment variables (names only; the values stay on the hub). */
  secrets: string[];
  [extra: string]: unknown;
}

/**
 * The manifest with the request's fields applied over it (name, version, description, agent_type
 * fall back to the manifest's; agent_type then to `exec`), fully validated.
 */
export function normalizeAgentManifest(
  raw: unknown,
  overrides: {
    name?: string | undefined;
    version?: string | undefined;
    description?: string | undefined;
    agent_type?: string | undefined;
  },
): AgentManifest {
  const doc = check(ManifestBase, parseDocument(raw, 'manifest'), 'manifest');
  const name = overrides.name ?? doc.name;
  if (!name) throw bad('invalid manifest: name is missing (set name in the manifest or the request)');
  if (!NAME_PATTERN.test(name))
    throw bad('invalid manifest: name: letters, digits, ".", "_" and "-", at most 100');
  const ver = overrides.version ?? doc.version;
  if (!ver) throw bad('invalid manifest: version is missing (set version in the manifest or the request)');
  const agentType = overrides.agent_type ?? doc.agent_type ?? 'exec';
  if (!(AGENT_TYPES as readonly string[]).includes(agentType)) {
    throw bad(
      `invalid manifest: agent_type "${agentType}" is not supported (supported: ${AGENT_TYPES.join(', ')})`,
    );
  }
  const exec = check(ExecSpec, doc, 'manifest');
  const clash = exec.secrets.find((n) => n in exec.env);
  if (clash) throw bad(`invalid manifest: ${clash} is both in env and in secrets; keep it in one`);
  return {
    ...doc,
    name,
    version: ver,
    description: overrides.description ?? doc.description ?? '',
    agent_type: agentType,
    command: exec.command,
    env: exec.env,
    timeout_ms: exec.timeout_ms,
    secrets: exec.secrets,
  };
}

/** `name` or `name@version`. */
export function parseRef(ref: string): { name: string; version: string | null } {
  const at = ref.indexOf('@');
  return at < 0 ? { name: ref, version: null } : { name: ref.slice(0, at), version: ref.slice(at + 1) };
}

const refString = z
  .string()
  .min(1)
  .max(201)
  .refine((s) => {
    const r = parseRef(s);
    return NAME_PATTERN.test(r.name) && (r.version === null || versionString.safeParse(r.version).success);
  }, 'must be NAME or NAME@VERSION');

/** The fields a phase may carry. Anything else is refused, so a definition cannot smuggle in the
 * row ids (`agent_id`, `team_version_id`) that registration pins from its own resolution. */
const PHASE_FIELDS = {
  name: catalogName,
  agent: refString.optional(),
  team: refString.optional(),
  review: z.boolean().default(false),
  review_timeout_ms: z.number().int().min(1000).optional(),
  // request_changes reruns of a `review: true` phase before the run fails (default 3);
  // `max_review_rounds` is the older spelling of the same setting.
  review_max_rounds: z.number().int().min(1).max(100).optional(),
  max_review_rounds: z.number().int().min(1).max(100).optional(),
  foreach: z.string().min(1).max(500).optional(),
  max_parallel: z.number().int().min(1).max(1000).optional(),
  inputs: z.record(z.string(), z.unknown()).optional(),
};

export const Phase = z
  .strictObject(PHASE_FIELDS, {
    error: (iss) =>
      iss.code === 'unrecognized_keys'
        ? `unknown field${iss.keys.length > 1 ? 's' : ''} ${iss.keys.map((k) => `"${k}"`).join(', ')} (a phase takes ${Object.keys(PHASE_FIELDS).join(', ')})`
        : undefined,
  })
  .superRefine((p, ctx) => {
    if ((p.agent === undefined) === (p.team === undefined)) {
      ctx.addIssue({ code: 'custom', message: 'a phase names exactly one of agent or team' });
    }
    if (p.foreach !== undefined && p.team === undefined) {
      ctx.addIssue({ code: 'custom', path: ['foreach'], message: 'foreach is only allowed with team' });
    }
    if (p.review && p.team !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['review'], message: 'review is only allowed with agent' });
    }
  });
export type Phase = z.infer<typeof Phase>;

/** A concurrency group of a team's runs (CONTRACT.md §11). */
const ConcurrencyGroup = z.strictObject({
  key: z
    .string('must be a string')
    .regex(
      /^(realm|team|workspace|inputs\.[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*)$/,
      'must be realm, team, workspace or inputs.<dotted path>',
    ),
  limit: z.number('must be a number').int('must be an integer').min(1, 'must be at least 1').max(100_000),
});

const Definition = z.looseObject({
  concurrency: z
    .array(ConcurrencyGroup, 'must be a list of {key, limit}')
    .max(8, 'at most 8 groups')
    .superRefine((groups, ctx) => {
      const seen = new Set<string>();
      groups.forEach((g, i) => {
        if (seen.has(g.key))
          ctx.addIssue({ code: 'custom', path: [i, 'key'], message: `duplicate key "${g.key}"` });
        seen.add(g.key);
      });
    })
    .optional(),
  timeout_ms: z
    .number('must be a number')
    .int('must be an integer')
    .min(1)
    .max(30 * 24 * 3600 * 1000)
    .optional(),
  name: catalogName.optional(),
  version: version.optional(),
  description: z.string().max(10_000).optional(),
  phases: z
    .array(Phase, 'must be a list of phases')
    .min(1, 'a team has at least one phase')
    .max(200)
    .superRefine((phases, ctx) => {
      const seen = new Set<string>();
      phases.forEach((p, i) => {
        if (seen.has(p.name))
          ctx.addIssue({ code: 'custom', path: [i, 'name'], message: `duplicate phase name "${p.name}"` });
        seen.add(p.name);
      });
    }),
});

export interface TeamDefinition {
  name: string;
  version: string;
  description: string;
  phases: Phase[];
  [extra: string]: unknown;
}

/** A stored team definition: every reference pinned to a row of the organization. */
export type PinnedPhase = Phase & { agent_id?: string; team_version_id?: string };
export interface PinnedDefinition {
  name: string;
  version: string;
  description: string;
  phases: PinnedPhase[];
  [extra: string]: unknown;
}

/** Parses and validates a team definition (references are resolved by the service). */
export function normalizeTeamDefinition(
  raw: unknown,
  overrides: { name?: string | undefined; version?: string | undefined },
): TeamDefinition {
  const doc = check(Definition, parseDocument(raw, 'definition'), 'definition');
  const name = overrides.name ?? doc.name;
  if (!name) throw bad('invalid definition: name is missing (set name in the definition or the request)');
  const ver = overrides.version ?? doc.version;
  if (!ver)
    throw bad('invalid definition: version is missing (set version in the definition or the request)');
  return { ...doc, name, version: ver, description: doc.description ?? '', phases: doc.phases };
}

import { hostname } from 'node:os'
import type { RequestRecord } from '../record/record.js'
import { maskSecretText } from './secret-text.js'

/** The access log: one JSON line per request, from the same RequestRecord as the metrics so both agree. */

/** The fields of one access-log line. Times in milliseconds, to 0.1 ms. */
export interface AccessLogFields {
  readonly reqId: string
  readonly instance: string
  /** the upstream, when not the CRM's own (docs/upstreams.md) */
  readonly upstream: string | undefined
  readonly app: string | undefined
  /** endpoint name: the id `METHOD /template`, or `unknown` (src/catalog/names.ts); never the raw path: ids in paths stay out of logs */
  readonly endpoint: string
  readonly status: number
  readonly outcome: RequestRecord['outcome']
  /** the version header as the client sent it, and as sent upstream (after rewrite or pin) */
  readonly version: string | undefined
  readonly upstreamVersion: string | undefined
  readonly totalMs: number
  readonly queueMs: number
  readonly upstreamMs: number
  /** waited for an upstream socket with a permit held (docs/deploy.md, "Sizing") */
  readonly socketWaitMs: number
  readonly retries: number
  readonly upstream429s: number
}

const ms = (seconds: number): number => Math.round(seconds * 10_000) / 10

export function accessLogFields(record: RequestRecord): AccessLogFields {
  return {
    reqId: record.requestId,
    instance: record.instance,
    upstream: record.upstream,
    app: record.app,
    endpoint: record.endpoint,
    status: record.status,
    outcome: record.outcome,
    version: record.version,
    upstreamVersion: record.upstreamVersion,
    totalMs: ms(record.totalSeconds),
    queueMs: ms(record.queueSeconds),
    upstreamMs: ms(record.upstreamSeconds),
    socketWaitMs: ms(record.socketWaitSeconds ?? 0),
    retries: record.retries,
    upstream429s: record.upstream429s,
  }
}

/**
 * The access line in pino's shape, built by hand: every field is one sluice sets and none carries a
 * credential, so pino's walk and redaction would cost without protecting anything (docs/observability.md, "Request
 * logs").
 */
export function accessLogLine(record: RequestRecord, now: number = Date.now()): string {
  // Field for field as accessLogFields (a test holds the two together); undefined fields are left out, as
  // JSON.stringify does.
  const r = record
  return (
    `{"level":30,"time":${now}${PINO_BASE},"reqId":${str(r.requestId)},"instance":${str(r.instance)}` +
    (r.upstream === undefined ? '' : `,"upstream":${str(r.upstream)}`) +
    (r.app === undefined ? '' : `,"app":${str(r.app)}`) +
    `,"endpoint":${str(r.endpoint)},"status":${r.status},"outcome":"${r.outcome}"` +
    (r.version === undefined ? '' : `,"version":${str(r.version)}`) +
    (r.upstreamVersion === undefined ? '' : `,"upstreamVersion":${str(r.upstreamVersion)}`) +
    `,"totalMs":${ms(r.totalSeconds)},"queueMs":${ms(r.queueSeconds)},"upstreamMs":${ms(r.upstreamSeconds)}` +
    `,"socketWaitMs":${ms(r.socketWaitSeconds ?? 0)}` +
    `,"retries":${r.retries},"upstream429s":${r.upstream429s}` +
    (r.versionWarnings?.length ? `,"versionWarnings":${JSON.stringify(r.versionWarnings)}` : '') +
    `,"msg":"request"}\n`
  )
}

// Printable ASCII without `"` and `\`: such a string is its own JSON text between quotes.
const PLAIN = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/
const str = (s: string): string => (PLAIN.test(s) ? `"${s}"` : JSON.stringify(s))

/** pino's default `base` bindings, as pino writes them */
const PINO_BASE = `,"pid":${process.pid},"hostname":${str(hostname())}`

// Header names that carry credentials. pino paths are case-sensitive: Node lower-cases incoming
// headers, but headers an app or a library builds (undici options, an error's `config`) may not be.
const SECRET_HEADERS = [
  'authorization',
  'Authorization',
  'proxy-authorization',
  'Proxy-Authorization',
  'cookie',
  'Cookie',
  'set-cookie',
  'Set-Cookie',
  'x-api-key',
  'X-Api-Key',
  'X-API-Key',
]
/** Objects that are logged with their headers: `log.info({ req: { headers } })` and the like. */
const HEADER_HOLDERS = ['req', 'request', 'res', 'reply', 'response', 'upstream', 'options', 'config']
/** Fields named like secrets, at the top of a log object or one level down. */
const SECRET_FIELDS = ['password', 'apiKey', 'api_key', 'authorization', 'token', 'secret']

/**
 * pino `redact.paths`, explicit because wildcard paths multiply the cost of every line (docs/observability.md,
 * "Cost on the request path"); errors are scrubbed at any depth by `LOG_SERIALIZERS.err`, so use both.
 */
export const REDACT_PATHS: string[] = [
  ...SECRET_HEADERS.map((h) => `headers["${h}"]`),
  ...HEADER_HOLDERS.flatMap((holder) => SECRET_HEADERS.map((h) => `${holder}.headers["${h}"]`)),
  ...SECRET_FIELDS,
  ...['settings', 'redis', 'auth', 'credentials', 'options', 'config'].flatMap((holder) =>
    SECRET_FIELDS.map((f) => `${holder}.${f}`),
  ),
]

export const REDACT_CENSOR = '[redacted]'

// Keys whose values are credentials wherever they appear inside a logged error.
const SECRET_KEY =
  /^(authorization|proxy-authorization|cookie|set-cookie|x-api-key|api-key|apikey|api_key|password|passwd|secret|token|access_?token|auth)$/i
const MAX_DEPTH = 8

/**
 * The pino `err` serializer: pino's error shape with every credential-named field censored at any depth
 * (docs/observability.md, "Request logs"); it runs only for lines that log an error.
 */
export function serializeError(err: unknown): SerializedError {
  const scrubbed = scrub(err, 0, new WeakSet())
  if (scrubbed !== null && typeof scrubbed === 'object' && !Array.isArray(scrubbed)) {
    const o = scrubbed as Record<string, unknown>
    const text = (v: unknown, fallback: string): string => (typeof v === 'string' ? v : fallback)
    return { ...o, type: text(o.type, 'Object'), message: text(o.message, ''), stack: text(o.stack, '') }
  }
  // something else was logged under `err` (a string, a number): keep it, in pino's shape
  return { type: typeof err, message: String(scrubbed), stack: '' }
}

export interface SerializedError {
  type: string
  message: string
  stack: string
  [key: string]: unknown
}

/** pino `serializers` (as Fastify's `logger.serializers` accepts them): the scrubbing `err` serializer. */
export const LOG_SERIALIZERS: { err: (err: Error) => SerializedError } = { err: serializeError }

function scrub(value: unknown, depth: number, seen: WeakSet<object>): unknown {
  if (typeof value === 'string') return maskSecretText(value)
  if (value === null || typeof value !== 'object') return value
  if (seen.has(value)) return '[Circular]'
  if (depth >= MAX_DEPTH) return '[Object]'
  seen.add(value)
  if (ArrayBuffer.isView(value)) return `[${value.constructor.name} of ${value.byteLength} bytes]`
  if (Array.isArray(value)) {
    // raw header lists alternate names and values: ['Authorization', 'Basic …', …]
    return value.map((v, i) =>
      i > 0 && typeof value[i - 1] === 'string' && SECRET_KEY.test(value[i - 1] as string)
        ? REDACT_CENSOR
        : scrub(v, depth + 1, seen),
    )
  }
  const out: Record<string, unknown> = {}
  if (value instanceof Error) {
    out.type = value.constructor.name
    out.message = maskSecretText(value.message)
    out.stack = value.stack === undefined ? undefined : maskSecretText(value.stack)
    if (value.cause !== undefined) out.cause = scrub(value.cause, depth + 1, seen)
    if (value instanceof AggregateError) out.aggregateErrors = scrub(value.errors, depth + 1, seen)
  }
  // A Redis command on an ioredis error (`{ name: 'auth', args: [password] }`): its arguments can be
  // credentials or data (keys name organisations), so none is logged.
  const isCommand =
    typeof (value as { name?: unknown }).name === 'string' && Array.isArray((value as { args?: unknown }).args)
  for (const [key, v] of Object.entries(value)) {
    out[key] = SECRET_KEY.test(key) || (isCommand && key === 'args') ? REDACT_CENSOR : scrub(v, depth + 1, seen)
  }
  return out
}

import { hostname } from 'node:os'
import type { RequestRecord } from '../proxy/record.js'
import { maskSecretText } from './secret-text.js'

/**
 * The access log: one JSON line per request, built from the same RequestRecord as the metrics so
 * both always agree. Build it only when the line will be written (the proxy checks the log level
 * once, at start).
 */

/** The fields of one access-log line. Times in milliseconds, to 0.1 ms. */
export interface AccessLogFields {
  readonly reqId: string
  readonly instance: string
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
  readonly retries: number
  readonly upstream429s: number
}

const ms = (seconds: number): number => Math.round(seconds * 10_000) / 10

export function accessLogFields(record: RequestRecord): AccessLogFields {
  return {
    reqId: record.requestId,
    instance: record.instance,
    app: record.app,
    endpoint: record.endpoint,
    status: record.status,
    outcome: record.outcome,
    version: record.version,
    upstreamVersion: record.upstreamVersion,
    totalMs: ms(record.totalSeconds),
    queueMs: ms(record.queueSeconds),
    upstreamMs: ms(record.upstreamSeconds),
    retries: record.retries,
    upstream429s: record.upstream429s,
  }
}

/**
 * The access line as text, in the shape of pino's lines (`level`, `time`, `pid`, `hostname`, the
 * fields, `msg: "request"`) but without pino's generic walk over the object and its redaction:
 * every field is one sluice sets itself, and none carries a credential (the instance is the
 * Basic-auth username; the API key is never decoded into anything kept). Built by hand: about a
 * sixth of the time of `log.info(fields, 'request')` with sluice's logger, 1.3 KB allocated against
 * 3.6 (docs/benchmarks.md, "Hot-path tricks").
 */
export function accessLogLine(record: RequestRecord, now: number = Date.now()): string {
  // Field for field as accessLogFields (a test holds the two together); undefined fields are left out, as JSON.stringify does.
  const r = record
  return (
    `{"level":30,"time":${now}${PINO_BASE},"reqId":${str(r.requestId)},"instance":${str(r.instance)}` +
    (r.app === undefined ? '' : `,"app":${str(r.app)}`) +
    `,"endpoint":${str(r.endpoint)},"status":${r.status},"outcome":"${r.outcome}"` +
    (r.version === undefined ? '' : `,"version":${str(r.version)}`) +
    (r.upstreamVersion === undefined ? '' : `,"upstreamVersion":${str(r.upstreamVersion)}`) +
    `,"totalMs":${ms(r.totalSeconds)},"queueMs":${ms(r.queueSeconds)},"upstreamMs":${ms(r.upstreamSeconds)}` +
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
 * pino `redact.paths`: Authorization, cookies and API keys in `headers` and in the headers of
 * `req`, `request`, `res`, `reply`, `response`, `upstream`, `options` and `config`; fields named like
 * secrets at the top level and one level down. Paths are explicit on purpose: with pino 10, every
 * wildcard path multiplies the cost of every log line (see bench/metrics: ~1 ms a line with
 * wildcards at depth 3, against ~10 µs with these). Errors are scrubbed by `LOG_SERIALIZERS.err` at
 * any depth instead. Use both: `{ redact: { paths: REDACT_PATHS, censor: REDACT_CENSOR }, serializers: LOG_SERIALIZERS }`.
 * Secrets inside free text (a message, a URL) cannot be reached by paths: never put them there.
 */
export const REDACT_PATHS: string[] = [
  ...SECRET_HEADERS.map((h) => `headers["${h}"]`),
  ...HEADER_HOLDERS.flatMap((holder) => SECRET_HEADERS.map((h) => `${holder}.headers["${h}"]`)),
  ...SECRET_FIELDS,
  ...['settings', 'redis', 'auth', 'credentials', 'options', 'config'].flatMap((holder) => SECRET_FIELDS.map((f) => `${holder}.${f}`)),
]

export const REDACT_CENSOR = '[redacted]'

// Keys whose values are credentials wherever they appear inside a logged error.
const SECRET_KEY =
  /^(authorization|proxy-authorization|cookie|set-cookie|x-api-key|api-key|apikey|api_key|password|passwd|secret|token|access_?token|auth)$/i
const MAX_DEPTH = 8

/**
 * The pino `err` serializer: pino's usual error shape (`type`, `message`, `stack`, own enumerable
 * fields, `cause`) with every credential-named field replaced by REDACT_CENSOR, at any depth: an
 * upstream error's request options, its `config.headers`, its cause's headers, raw header arrays.
 * Runs only for lines that log an error (under `err`), so the access log does not pay for it.
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
      i > 0 && typeof value[i - 1] === 'string' && SECRET_KEY.test(value[i - 1] as string) ? REDACT_CENSOR : scrub(v, depth + 1, seen),
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
  const isCommand = typeof (value as { name?: unknown }).name === 'string' && Array.isArray((value as { args?: unknown }).args)
  for (const [key, v] of Object.entries(value)) {
    out[key] = SECRET_KEY.test(key) || (isCommand && key === 'args') ? REDACT_CENSOR : scrub(v, depth + 1, seen)
  }
  return out
}

import type { RequestRecord } from '../proxy/record.js'

/**
 * The access log: one pino JSON line per request, built from the same RequestRecord as the metrics
 * so both always agree. Build it only when the line will be written:
 * `if (log.isLevelEnabled('info')) log.info(accessLogFields(record), 'request finished')`.
 */

/** The fields of one access-log line. Times in milliseconds, to 0.1 ms. */
export interface AccessLogFields {
  readonly reqId: string
  readonly instance: string
  readonly app: string | undefined
  /** endpoint id `METHOD /template` (never the raw path: ids in paths stay out of logs) */
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
  'api-key',
  'apikey',
]
// Fields named like secrets, wherever a logged object (an error, an options object) carries them.
const SECRET_FIELDS = ['password', 'passwd', 'apiKey', 'api_key', 'apikey', 'secret', 'token', 'accessToken', 'auth']

const prop = (name: string): string => (/^[A-Za-z_$][\w$]*$/.test(name) ? `.${name}` : `["${name}"]`)

/**
 * pino `redact.paths` for Authorization, cookies, API keys and passwords: in request and response
 * headers (`req.headers`, `res.headers`), in any logged object's headers one to three levels down
 * (`err.headers`, `err.config.headers`, `err.cause.options.headers`…), and as plain fields up to
 * three levels down. Use with a fixed censor: `redact: { paths: REDACT_PATHS, censor: REDACT_CENSOR }`.
 * Secrets inside free text (a message, a URL) cannot be reached by paths: never put them there.
 */
export const REDACT_PATHS: string[] = [
  ...SECRET_HEADERS.flatMap((h) => [
    `headers${prop(h)}`,
    `*.headers${prop(h)}`,
    `*.*.headers${prop(h)}`,
    `*.*.*.headers${prop(h)}`,
  ]),
  ...SECRET_FIELDS.flatMap((f) => [f, `*${prop(f)}`, `*.*${prop(f)}`, `*.*.*${prop(f)}`]),
]

export const REDACT_CENSOR = '[redacted]'

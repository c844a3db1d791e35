import { z } from 'zod'
import { clientSettingsSchema } from './client-settings.js'

/** Settings of the proxy server: where it listens, where it forwards, how long requests wait and retry. */

const port = z.number().int().min(0).max(65535)
const positiveMs = z.number().int().positive()
/** an HTTP header name, lower-cased as Node gives headers */
const headerName = z
  .string()
  .regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/, 'a valid HTTP header name')
  .transform((s) => s.toLowerCase())

export const proxySettingsShape = {
  /**
   * interface the proxy listens on: this machine only unless set, so that trying sluice out never
   * opens a proxy with the org's credentials passing through to the network; containers set 0.0.0.0
   */
  host: z.string().min(1).default('127.0.0.1'),
  port: port.default(8080),
  /** the API v2 root requests are forwarded to */
  upstream: z
    .url({ protocol: /^https?$/ })
    // Apps send their own Authorization; credentials in this URL would be dropped, and logged with it.
    .refine(
      (u) => !/^[a-z]+:\/\/[^/?#]*@/i.test(u),
      'must not hold credentials (user:password@): apps send their own Authorization',
    )
    .default('https://api.neoncrm.com/v2'),
  /** the path prefix apps use in front of API paths (they replace https://api.neoncrm.com/v2 with http://sluice/v2) */
  basePath: z
    .string()
    .regex(/^\/[A-Za-z0-9._~-]+$/, 'one path segment such as /v2')
    .default('/v2'),
  /** header naming the instance when a request has no Basic auth; then `default` */
  instanceHeader: headerName.default('x-sluice-instance'),
  /** header naming the calling app, for logs */
  appHeader: headerName.default('x-sluice-app'),
  /**
   * whether the client is a proxy sluice trusts: then its `Forwarded` and `X-Real-IP` pass on;
   * otherwise they are dropped. `X-Forwarded-For` gets the client's address appended either way.
   */
  trustProxy: z.boolean().default(false),
  /**
   * whether the API gets the client's address (`X-Forwarded-For`, and from a trusted proxy `Forwarded`
   * and `X-Real-IP`). It is part of what makes two answers the same (docs/reuse.md): false sends none,
   * so clients at different addresses share answers again.
   */
  forwardClientAddress: z.boolean().default(true),
  queue: z
    .strictObject({
      /** the most requests that may wait for one (instance, endpoint) on this replica */
      maxLength: z.number().int().nonnegative().default(1000),
      /**
       * the part of `maxLength` one app may fill on a key (with app identity on; an app's own `maxQueued`
       * wins): past it that app's requests are refused while the others keep theirs. 1: no share
       */
      maxShare: z.number().gt(0).max(1).default(0.5),
      /** the longest a request waits in the queue, in total across upstream-429 retries */
      maxWaitMs: positiveMs.default(60_000),
      /** request header with which a client asks for a shorter wait, in seconds (e.g. `x-sluice-max-wait: 5`) */
      waitHeader: headerName.default('x-sluice-max-wait'),
    })
    .prefault({}),
  retry: z
    .strictObject({
      /** request bodies up to this size are buffered so an upstream 429 can be retried; larger ones stream */
      maxBufferBytes: z.number().int().nonnegative().default(1_048_576),
      /** first back-off after an upstream 429 without Retry-After; doubles each time, with full jitter */
      baseDelayMs: positiveMs.default(100),
      maxDelayMs: positiveMs.default(5_000),
    })
    .prefault({}),
  upstreamTimeouts: z
    .strictObject({
      connectMs: positiveMs.default(10_000),
      /** time to the response headers */
      headersMs: positiveMs.default(60_000),
      /** time between body chunks */
      bodyMs: positiveMs.default(60_000),
    })
    .prefault({}),
  /**
   * most sockets open to one upstream; 0: no cap, so every permit held gets a socket at once and the limits
   * bound the sockets. A cap below the permits a replica holds makes requests wait for a socket with their
   * permit held (docs/deploy.md, "Sizing")
   */
  upstreamConnections: z.number().int().nonnegative().default(0),
  /** bounds on the clients' side: a timeout per phase, the body's pace, the answer held (client-settings.ts) */
  client: clientSettingsSchema.prefault({}),
  shutdown: z
    .strictObject({
      /**
       * how long after SIGTERM the queued and in-flight requests keep being served (the queue keeps its
       * place); those still queued then get 503 + Retry-After. 0: at once
       */
      drainMs: z.number().int().nonnegative().default(30_000),
      /** then, how long in-flight requests have to finish before connections are closed anyway (an upstream timeout's worth) */
      graceMs: positiveMs.default(60_000),
    })
    .prefault({}),
  /** giving the heap back after a burst of client connections (memory-after-burst.ts) */
  memory: z
    .strictObject({
      /** open client connections that make a burst; once they are gone, sluice asks V8 to give the heap back. 0: never */
      burstConnections: z.number().int().nonnegative().default(1_000),
      /** how long the burst must have been gone first (an hour at most) */
      quietMs: positiveMs.max(3_600_000).default(5_000),
      /**
       * what queued requests, buffered bodies, answers held for slow clients and the cache may keep
       * together; past it new requests get 503 SLUICE_MEMORY_BUDGET. Unset: half of the container's
       * memory limit above 160 MiB (at least 16 MiB) and at most V8's heap bound less 80 MiB; without a
       * limit, half the heap bound, at most the bound less 80 MiB (src/budget/limit.ts)
       */
      budgetBytes: z.number().int().positive().optional(),
      /**
       * the part of the budget one app (one organisation with app identity off) may hold: past it that
       * app's new work is refused while the others keep theirs. 1: no share
       */
      maxShare: z.number().gt(0).max(1).default(0.5),
    })
    .prefault({}),
}
export type ProxySettings = z.output<ReturnType<typeof z.strictObject<typeof proxySettingsShape>>>

/**
 * A bare Node pass-through in front of UPSTREAM on PORT: node:http in, an undici Pool out, the answer
 * piped back, nothing else — the floor the proxies of the comparison are divided by. It may take a
 * semaphore for the request's (organisation, endpoint) at the catalog's limit before forwarding,
 * released once the upstream's answer has been read and passed on:
 *
 * - REDIS_URL set: a redis-semaphore `Semaphore` (default options, as documented) — a proxy built
 *   on redis-semaphore, beside sluice's Redis limiter;
 * - SEMAPHORE=memory: a trivial in-process FIFO semaphore (a count and an array of resolvers) — the
 *   floor of the contention scenario, the same path with none of sluice in it;
 * - REDIS_URL and REDIS_ROUND_TRIPS=1: no semaphore, a script that does nothing (`return 1`) before
 *   forwarding and again after the answer — the floor of any Redis-shared limiter on this machine:
 *   two round trips per request and nothing else;
 * - REDIS_URL and REDIS_SCRIPTS=1: sluice's own acquire and release scripts (uncontended: the permit
 *   is free) run straight from here, with none of sluice's replica-side code around them;
 * - REDIS_URL and REDIS_SCRIPTS=reuse: the path of a kept permit (docs/redis-limiter.md, "The request
 *   path on Redis"): per key, one acquire, then each request one `reuse` script of that permit before
 *   forwarding and nothing after it — sluice's uncontended path with none of its replica-side code.
 *
 *   node --import tsx bench/compare/passthrough.ts   (UPSTREAM=http://host:port PORT=n [REDIS_URL=… [REDIS_ROUND_TRIPS=1 | REDIS_SCRIPTS=1 | REDIS_SCRIPTS=reuse] | SEMAPHORE=memory])
 */
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http'
import { Redis } from 'ioredis'
import { Semaphore } from 'redis-semaphore'
import { Pool } from 'undici'
import { DEFAULT_CATALOG_FILE, loadCatalog } from '../../src/catalog/index.js'
import { acquire } from '../../src/limiter/redis/acquire/index.js'
import { semaphoreKeysOf, tagOf } from '../../src/limiter/redis/keys.js'
import { release } from '../../src/limiter/redis/release/index.js'
import { reuse } from '../../src/limiter/redis/reuse/index.js'
import { Scripts } from '../../src/limiter/redis/script.js'
import { waiterId } from '../../src/limiter/redis/waiter-id.js'

const upstream = process.env.UPSTREAM ?? 'http://127.0.0.1:8081'
const pool = new Pool(upstream, { connections: 256, keepAliveTimeout: 30_000 })
const redis = process.env.REDIS_URL === undefined ? undefined : new Redis(process.env.REDIS_URL)
const catalog = loadCatalog(DEFAULT_CATALOG_FILE, { defaultLimit: 5, overrides: {} })

const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'host', 'upgrade', 'proxy-connection'])
function pass(headers: IncomingHttpHeaders): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {}
  for (const name in headers) if (!HOP_BY_HOP.has(name)) out[name] = headers[name]!
  return out
}

interface Gate {
  acquire(): Promise<void>
  release(): Promise<void> | void
}

/** First come first served: a release hands the slot straight to the oldest waiter. */
class FifoSemaphore implements Gate {
  private held = 0
  private readonly waiters: (() => void)[] = []
  constructor(private readonly limit: number) {}
  acquire(): Promise<void> {
    if (this.held < this.limit) {
      this.held++
      return Promise.resolve()
    }
    return new Promise((resolve) => this.waiters.push(resolve))
  }
  release(): void {
    const next = this.waiters.shift()
    if (next === undefined) this.held--
    else next()
  }
}
const inProcess = process.env.SEMAPHORE === 'memory' ? new Map<string, FifoSemaphore>() : undefined

/** The semaphore of the request's (organisation, endpoint), or undefined without one. */
function semaphoreFor(req: IncomingMessage): Gate | undefined {
  if (redis === undefined && inProcess === undefined) return undefined
  const url = req.url ?? '/'
  const q = url.indexOf('?')
  const match = catalog.match(req.method ?? 'GET', (q < 0 ? url : url.slice(0, q)).replace(/^\/v2/, ''))
  if (!match.ok) return undefined
  const key = `${req.headers.authorization ?? 'default'} ${match.endpoint.id}`
  const limit = match.endpoint.limit ?? 5
  if (redis !== undefined) return new Semaphore(redis, key, limit)
  let semaphore = inProcess!.get(key)
  if (semaphore === undefined) inProcess!.set(key, (semaphore = new FifoSemaphore(limit)))
  return semaphore
}

const roundTripsOnly = redis !== undefined && process.env.REDIS_ROUND_TRIPS === '1'
const scriptsMode = redis === undefined ? undefined : process.env.REDIS_SCRIPTS
const scripts = scriptsMode === '1' || scriptsMode === 'reuse' ? new Scripts(redis!, undefined, 2_000) : undefined
let sequence = 0
/** REDIS_SCRIPTS=reuse: the permit id each key keeps, by Authorization (one connection per organisation) */
const keptIds = new Map<string, string>()

/** sluice's acquire script for the request's key (a published limit of 5, learning on), then a release to call. */
async function sluiceScripts(req: IncomingMessage): Promise<(() => Promise<unknown>) | undefined> {
  const instance = req.headers.authorization ?? 'default'
  const keys = semaphoreKeysOf('sluice', tagOf({ instance, endpoint: 'GET /accounts/{id}/contacts' }))
  const limit = '5 5 1 3600000'
  const keptId = scriptsMode === 'reuse' ? keptIds.get(instance) : undefined
  if (keptId !== undefined) {
    const reply = await reuse(scripts!, keys, {
      id: keptId,
      limit,
      leaseMs: 30_000,
      idleMs: 90_000,
      channelPrefix: 'sluice:grant:',
    })
    if (reply.reused) return undefined
    keptIds.delete(instance)
  }
  const id = waiterId({
    replicaId: `floor-${process.pid}`,
    sequence: ++sequence,
    arrivedAt: Date.now(),
    maxHeld: Infinity,
    app: 'default',
  })
  await acquire(scripts!, keys, {
    id,
    replicaId: `floor-${process.pid}`,
    limit,
    leaseMs: 30_000,
    liveMs: 30_000,
    idleMs: 90_000,
    ageMs: 0,
    full: false,
    announce: false,
    instance: 'i',
    endpoint: 'e',
    channelPrefix: 'sluice:grant:',
    wantHead: false,
    cost: 1,
  })
  if (scriptsMode === 'reuse') {
    keptIds.set(instance, id)
    return undefined
  }
  return () =>
    release(scripts!, keys, {
      ids: [id],
      replicaId: `floor-${process.pid}`,
      limit,
      leaseMs: 30_000,
      idleMs: 90_000,
      channelPrefix: 'sluice:grant:',
      wantHead: false,
      answer: { outcome: 'success', heldMs: 1 },
    })
}
const nothing = (): Promise<unknown> => redis!.eval('return 1', 0)

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const semaphore = roundTripsOnly || scripts ? undefined : semaphoreFor(req)
  if (roundTripsOnly) await nothing()
  const releaseScript = scripts ? await sluiceScripts(req) : undefined
  await semaphore?.acquire()
  try {
    const hasBody = req.headers['content-length'] !== undefined || req.headers['transfer-encoding'] !== undefined
    const answer = await pool.request({
      path: req.url ?? '/',
      method: req.method as 'GET',
      headers: pass(req.headers),
      body: hasBody ? req : null,
    })
    res.writeHead(answer.statusCode, pass(answer.headers))
    for await (const chunk of answer.body) res.write(chunk as Buffer)
    res.end()
  } finally {
    if (roundTripsOnly) await nothing()
    await releaseScript?.()
    await semaphore?.release()
  }
}

const server = createServer({ keepAlive: true, noDelay: true }, (req, res) => {
  handle(req, res).catch((err: unknown) => {
    if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' })
    res.end(String(err))
  })
})
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ listening: server.address() })}\n`)
})
process.once('SIGTERM', () => {
  server.close()
  server.closeAllConnections()
  redis?.disconnect()
  void pool.close().then(() => process.exit(0))
})

/**
 * A flood on one key: one request holds the only permit of a limit-1 key at the API while 5,000
 * more arrive, each on its own connection, and wait in sluice's queue; then the holder finishes and
 * the queue drains. The same 5,000 held connections against a bare node:http server and a bare
 * Fastify one that hold every request unanswered, then answer them (bench/compare/hold-server.ts),
 * give the floor: what Node and Fastify cost per held connection, and how much of sluice's is its own.
 *
 * Each process's memory is read idle (after a warm-up), with every request held, 10 s after the flood
 * (the clients gone), and once its resident set is back within 10% of idle (watched for
 * `SLUICE_BENCH_FLOOD_SETTLE_MS`, 90 s: V8's memory reducer gives the heap's pages back only after
 * the process has been quiet a while — docs/benchmarks.md, "Memory"): the resident set (/proc), split by
 * /proc/<pid>/smaps into glibc's main heap (`[heap]`), other anonymous mappings (V8's heap pages,
 * malloc's mmapped chunks and thread arenas, stacks) and file-backed pages (code), and V8's heap
 * (used, committed, the new and old spaces' committed size) with `external` (Buffers, ArrayBuffers).
 * What one held request costs = the difference / the requests.
 */
import { readFileSync } from 'node:fs'
import { stripTypeScriptTypes } from 'node:module'
import { Pool } from 'undici'
import { freePort, startNode, waitForHttp } from '../children.js'
import { rssOf, spawnProxy, type ProxyProcess } from '../../test/support/process.js'

export const FLOOD = 5_000
const basic = (org: string): string => `Basic ${Buffer.from(`${org}:bench-key`).toString('base64')}`
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))
/** How long the holder keeps the permit at the API: long enough for every waiter to queue. */
const HOLD_MS = Number(process.env.SLUICE_BENCH_FLOOD_HOLD_MS ?? 20_000)
/** How long the process is watched after the flood for its resident set to come back (V8's memory reducer takes 30–50 s). */
const SETTLE_MS = Number(process.env.SLUICE_BENCH_FLOOD_SETTLE_MS ?? 90_000)
/** "back to idle": a resident set within this share of the idle one */
const BACK_TO_IDLE = 1.1

/** One reading of a process's memory, bytes. */
export interface MemoryReading {
  readonly rss: number
  /** resident in glibc's main heap (`[heap]`, brk): the main thread's malloc */
  readonly mallocHeap: number
  /** resident in other anonymous mappings: V8's heap pages, mmapped malloc chunks, thread arenas, stacks */
  readonly anon: number
  /** resident file-backed pages: node's binary and libraries */
  readonly file: number
  readonly heapUsed: number
  /** V8's committed heap (every space) */
  readonly heapTotal: number
  readonly newSpace: number
  readonly oldSpace: number
  /** memory of Buffers and ArrayBuffers outside V8's heap */
  readonly external: number
}

export interface FloodFigures {
  readonly waiters: number
  readonly idle: MemoryReading
  /** with every request held */
  readonly queued: MemoryReading
  /** 10 s after the flood has drained and the clients have left */
  readonly after: MemoryReading
  /** when the resident set came back within 10% of idle (ms after the clients left; undefined: not within SETTLE_MS), and the reading then (or at SETTLE_MS) */
  readonly backToIdleMs: number | undefined
  readonly settled: MemoryReading
  /** the most resident memory the process had (VmHWM), the drain included */
  readonly peakRss: number
  readonly rssPerWaiter: number
  readonly heapPerWaiter: number
  readonly non200: number
}

/** A process under the flood: how to hold requests, count them and read its heap. */
export interface FloodTarget {
  readonly url: string
  readonly pid: number
  /** requests held (queued) now */
  held(): Promise<number>
  /** V8's side of the reading */
  heap(): Promise<Pick<MemoryReading, 'heapUsed' | 'heapTotal' | 'newSpace' | 'oldSpace' | 'external'>>
  /** makes later requests wait: `release` lets them go (sluice: once the holder is done), `over` says the hold ran out */
  hold(post: Post): Promise<{ release(): Promise<void>; over(): boolean }>
  stop(): Promise<unknown>
}

type Post = (org: string, headers?: Record<string, string>) => Promise<number>

/** VmHWM: the most resident memory the process has had, bytes (Linux /proc). */
function peakRssOf(pid: number): number {
  const m = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
  return m ? Number(m[1]) * 1024 : 0
}

/** Resident bytes by kind of mapping, from /proc/<pid>/smaps. */
export function residentByMapping(pid: number): Pick<MemoryReading, 'mallocHeap' | 'anon' | 'file'> {
  let mallocHeap = 0
  let anon = 0
  let file = 0
  let kind: 'mallocHeap' | 'anon' | 'file' = 'anon'
  for (const line of readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
    const header = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(line)
    if (header) {
      const name = header[1]!
      kind = name === '[heap]' ? 'mallocHeap' : name.startsWith('/') ? 'file' : 'anon'
      continue
    }
    const rss = /^Rss:\s+(\d+) kB$/.exec(line)
    if (!rss) continue
    const bytes = Number(rss[1]) * 1024
    if (kind === 'mallocHeap') mallocHeap += bytes
    else if (kind === 'file') file += bytes
    else anon += bytes
  }
  return { mallocHeap, anon, file }
}

async function read(target: FloodTarget): Promise<MemoryReading> {
  const heap = await target.heap()
  return { rss: rssOf(target.pid) ?? 0, ...residentByMapping(target.pid), ...heap }
}

/** sluice (`node dist/main.js`, or `main`) in front of the sim: a holder takes the limit-1 key's only permit for HOLD_MS. */
export async function sluiceTarget(
  simApiUrl: string,
  env: Record<string, string>,
  main?: string,
): Promise<FloodTarget> {
  const proxy: ProxyProcess = await spawnProxy(
    { SLUICE_UPSTREAM: simApiUrl, SLUICE_QUEUE_MAX_LENGTH: String(FLOOD * 2), ...env },
    undefined,
    main,
  )
  const metric = (text: string, name: string): number => {
    const m = new RegExp(`^${name.replace(/[{}]/g, '\\$&')} (\\S+)$`, 'm').exec(text)
    if (m === null) throw new Error(`no ${name} on /metrics`)
    return Number(m[1])
  }
  return {
    url: proxy.url,
    pid: proxy.pid,
    async held() {
      const status = (await (await fetch(`${proxy.adminUrl}/status`)).json()) as { keys: { queued: number }[] }
      return status.keys.reduce((n, k) => n + k.queued, 0)
    },
    async heap() {
      const text = await (await fetch(`${proxy.adminUrl}/metrics`)).text()
      return {
        heapUsed: metric(text, 'nodejs_heap_size_used_bytes'),
        heapTotal: metric(text, 'nodejs_heap_size_total_bytes'),
        newSpace: metric(text, 'nodejs_heap_space_size_total_bytes{space="new"}'),
        oldSpace: metric(text, 'nodejs_heap_space_size_total_bytes{space="old"}'),
        external: metric(text, 'nodejs_external_memory_bytes'),
      }
    },
    async hold(post) {
      let holding = true
      const holder = post('flood', { 'x-sim-delay-ms': String(HOLD_MS) }).finally(() => (holding = false))
      await sleep(200)
      if (!holding) throw new Error('the holder came back at once')
      return { release: async () => void (await holder), over: () => !holding }
    },
    stop: () => proxy.stop(),
  }
}

/** A bare server holding every request (bench/compare/hold-server.ts): `node` or `fastify`. */
export async function holdServerTarget(
  kind: 'node' | 'fastify',
  env: Record<string, string> = {},
): Promise<FloodTarget> {
  const port = await freePort()
  // Run as plain JavaScript: Node's own type stripping would load its TypeScript parser (about 40 MB
  // resident) into the very process whose idle memory is the floor.
  const code = stripTypeScriptTypes(readFileSync(new URL('hold-server.ts', import.meta.url), 'utf8'))
  const child = startNode(['--input-type=module', '--eval', code], { HOLD_KIND: kind, PORT: String(port), ...env })
  const url = `http://127.0.0.1:${port}`
  await waitForHttp(`${url}/__hold/status`)
  interface Status {
    held: number
    memory: NodeJS.MemoryUsage
    spaces: Record<string, number>
  }
  const control = async (what: string, method = 'GET'): Promise<Status> =>
    (await (await fetch(`${url}/__hold/${what}`, { method })).json()) as Status
  return {
    url,
    pid: child.process.pid!,
    held: async () => (await control('status')).held,
    async heap() {
      const { memory, spaces } = await control('status')
      return {
        heapUsed: memory.heapUsed,
        heapTotal: memory.heapTotal,
        newSpace: spaces.new_space ?? 0,
        oldSpace: spaces.old_space ?? 0,
        external: memory.external,
      }
    },
    async hold() {
      await control('start', 'POST')
      const until = Date.now() + HOLD_MS
      return { release: async () => void (await control('release', 'POST')), over: () => Date.now() > until }
    },
    stop: () => child.stop(),
  }
}

export async function runFlood(
  start: () => Promise<FloodTarget>,
  /** called idle, with every waiter queued, and after the flood (e.g. to take a heap snapshot) */
  onPhase?: (phase: 'idle' | 'queued' | 'after', target: FloodTarget) => Promise<void>,
  settleMs = SETTLE_MS,
): Promise<FloodFigures> {
  const target = await start()
  const pool = new Pool(target.url, { connections: FLOOD + 64, keepAliveTimeout: 120_000 })
  const post: Post = async (org, headers = {}) => {
    const res = await pool.request({
      path: '/v2/accounts/search',
      method: 'POST',
      body: '{}',
      headers: {
        authorization: basic(org),
        'content-type': 'application/json',
        'neon-api-version': '2.12',
        ...headers,
      },
    })
    await res.body.dump()
    return res.statusCode
  }
  try {
    // warm-up: every path taken a few hundred times on 64 connections, then quiet
    await Promise.all(
      Array.from({ length: 64 }, async (_, i) => {
        for (let k = 0; k < 10; k++) await post(`warm${i}`)
      }),
    )
    await sleep(2_000)
    const idle = await read(target)
    await onPhase?.('idle', target)

    const hold = await target.hold(post)
    let non200 = 0
    // a connection reset (a loaded machine's listen backlog overflowing) is an answer ≠ 200, not the end of the bench
    const waiters = Array.from({ length: FLOOD }, () =>
      post('flood').then(
        (s) => void (s === 200 || non200++),
        () => void non200++,
      ),
    )
    let peakRss = 0
    for (;;) {
      await sleep(250)
      peakRss = Math.max(peakRss, peakRssOf(target.pid))
      if ((await target.held()) >= FLOOD) break
      if (hold.over())
        throw new Error(`the ${FLOOD} waiters did not all queue within ${HOLD_MS} ms (SLUICE_BENCH_FLOOD_HOLD_MS)`)
    }
    await sleep(500)
    peakRss = Math.max(peakRss, peakRssOf(target.pid))
    const queued = await read(target)
    await onPhase?.('queued', target)
    await hold.release()
    await Promise.all(waiters)
    peakRss = Math.max(peakRss, peakRssOf(target.pid)) // the drain included
    // the clients leave (their keep-alive connections would otherwise stay open, and with them
    // each connection's socket and parser), then the process idles
    await pool.close()
    const left = Date.now()
    await sleep(Math.min(10_000, settleMs))
    const after = await read(target)
    await onPhase?.('after', target)
    let settled = after
    while (settled.rss > idle.rss * BACK_TO_IDLE && Date.now() - left < settleMs) {
      await sleep(2_000)
      settled = await read(target)
    }
    const backToIdleMs = settled.rss <= idle.rss * BACK_TO_IDLE ? Date.now() - left : undefined
    return {
      waiters: FLOOD,
      idle,
      queued,
      after,
      backToIdleMs,
      settled,
      peakRss,
      rssPerWaiter: (queued.rss - idle.rss) / FLOOD,
      heapPerWaiter: (queued.heapUsed - idle.heapUsed) / FLOOD,
      non200,
    }
  } finally {
    await pool.destroy()
    await target.stop()
  }
}

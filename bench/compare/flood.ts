/**
 * A flood on one key: one request holds the only permit of a limit-1 key at the API while 5,000
 * more arrive, each on its own connection, and wait in sluice's queue; then the holder finishes and
 * the queue drains. The proxy's memory is read idle (after a warm-up), with every waiter queued, and
 * after the flood: resident set (/proc) and V8's heap (`nodejs_heap_size_used_bytes` on /metrics).
 * What one queued request costs = the difference / the waiters — the whole proxy's share: the
 * client's socket and Fastify request, the handler's state, the limiter's waiter (and in Redis mode
 * its entry in Redis, which is not in this process).
 */
import { readFileSync } from 'node:fs'
import { Pool } from 'undici'
import { rssOf, spawnProxy, type ProxyProcess } from '../../test/support/process.js'

export const FLOOD = 5_000
const basic = (org: string): string => `Basic ${Buffer.from(`${org}:bench-key`).toString('base64')}`
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))
/** How long the holder keeps the permit at the API: long enough for every waiter to queue. */
const HOLD_MS = Number(process.env.SLUICE_BENCH_FLOOD_HOLD_MS ?? 20_000)

export interface FloodFigures {
  readonly waiters: number
  readonly idleRss: number
  /** resident set with every waiter queued */
  readonly queuedRss: number
  /** the most resident memory the process had (VmHWM), the queue's drain included */
  readonly peakRss: number
  /** resident set once the flood has drained and the process has been idle `settleMs` */
  readonly afterRss: number
  readonly idleHeap: number
  readonly queuedHeap: number
  readonly afterHeap: number
  readonly rssPerWaiter: number
  readonly heapPerWaiter: number
  readonly non200: number
}

async function heapUsed(proxy: ProxyProcess): Promise<number> {
  const text = await (await fetch(`${proxy.adminUrl}/metrics`)).text()
  const m = /^nodejs_heap_size_used_bytes (\d+(\.\d+)?(e\+\d+)?)$/m.exec(text)
  if (m === null) throw new Error('no nodejs_heap_size_used_bytes on /metrics')
  return Number(m[1])
}

async function queued(proxy: ProxyProcess): Promise<number> {
  const status = (await (await fetch(`${proxy.adminUrl}/status`)).json()) as { keys: { queued: number }[] }
  return status.keys.reduce((n, k) => n + k.queued, 0)
}

/** VmHWM: the most resident memory the process has had, bytes (Linux /proc). */
function peakRssOf(pid: number): number {
  const m = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
  return m ? Number(m[1]) * 1024 : 0
}

export async function runFlood(
  simApiUrl: string,
  env: Record<string, string>,
  settleMs = 10_000,
  /** called idle, with every waiter queued, and after the flood (e.g. to take a heap snapshot) */
  onPhase?: (phase: 'idle' | 'queued' | 'after', proxy: ProxyProcess) => Promise<void>,
): Promise<FloodFigures> {
  const proxy = await spawnProxy({ SLUICE_UPSTREAM: simApiUrl, SLUICE_QUEUE_MAX_LENGTH: String(FLOOD * 2), ...env })
  const pool = new Pool(proxy.url, { connections: FLOOD + 64, keepAliveTimeout: 120_000 })
  const post = async (org: string, headers: Record<string, string> = {}): Promise<number> => {
    const res = await pool.request({
      path: '/v2/accounts/search',
      method: 'POST',
      body: '{}',
      headers: { authorization: basic(org), 'content-type': 'application/json', 'neon-api-version': '2.12', ...headers },
    })
    await res.body.dump()
    return res.statusCode
  }
  try {
    // warm-up: every path taken a few hundred times on 64 connections, then quiet
    await Promise.all(Array.from({ length: 64 }, async (_, i) => {
      for (let k = 0; k < 10; k++) await post(`warm${i}`)
    }))
    await sleep(2_000)
    const idleRss = rssOf(proxy.pid) ?? 0
    const idleHeap = await heapUsed(proxy)
    await onPhase?.('idle', proxy)

    let held = true
    const holder = post('flood', { 'x-sim-delay-ms': String(HOLD_MS) }).finally(() => (held = false))
    await sleep(200)
    let non200 = 0
    const waiters = Array.from({ length: FLOOD }, () => post('flood').then((s) => void (s === 200 || non200++)))
    let peakRss = 0
    let queuedHeap = 0
    for (;;) {
      await sleep(250)
      peakRss = Math.max(peakRss, peakRssOf(proxy.pid))
      if ((await queued(proxy)) >= FLOOD) break
      if (!held) throw new Error(`the ${FLOOD} waiters did not all queue within ${HOLD_MS} ms (SLUICE_BENCH_FLOOD_HOLD_MS)`)
    }
    await sleep(500)
    peakRss = Math.max(peakRss, peakRssOf(proxy.pid))
    const queuedRss = rssOf(proxy.pid) ?? 0
    queuedHeap = await heapUsed(proxy)
    await onPhase?.('queued', proxy)
    await holder
    await Promise.all(waiters)
    peakRss = Math.max(peakRss, peakRssOf(proxy.pid)) // the drain included
    // the clients leave (their keep-alive connections would otherwise stay open, and with them
    // each connection's socket and parser), then the proxy idles
    await pool.close()
    await sleep(settleMs)
    const afterRss = rssOf(proxy.pid) ?? 0
    const afterHeap = await heapUsed(proxy)
    await onPhase?.('after', proxy)
    return {
      waiters: FLOOD,
      idleRss,
      queuedRss,
      peakRss,
      afterRss,
      idleHeap,
      queuedHeap,
      afterHeap,
      rssPerWaiter: (queuedRss - idleRss) / FLOOD,
      heapPerWaiter: (queuedHeap - idleHeap) / FLOOD,
      non200,
    }
  } finally {
    await pool.destroy()
    await proxy.stop()
  }
}

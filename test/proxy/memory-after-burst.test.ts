import { connect, type Socket } from 'node:net'
import { constants, PerformanceObserver, type PerformanceEntry } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { startProxy, type RunningProxy } from '../support/proxy.js'

// README "Memory after a burst": once a burst of client connections has gone, sluice asks V8 for
// the collection it makes under memory pressure, once. The proxy runs in this process, so the
// collection is seen here as major GCs (Node gives them no flag of their own). The rules' corners
// (two looks in a row, spacing, heap growth) are in burst-watch.test.ts.

const BURST = 40
const QUIET_MS = 100

let proxy: RunningProxy | undefined
const sockets: Socket[] = []
afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy()
  await proxy?.close()
  proxy = undefined
})

/** `n` connections, open once the proxy has accepted every one of them */
async function open(p: RunningProxy, n: number): Promise<Socket[]> {
  const { port } = new URL(p.url)
  const before = await connectionsOf(p)
  const opened = await Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<Socket>((resolve, reject) => {
          const s = connect(Number(port), '127.0.0.1', () => resolve(s)).once('error', reject)
        }),
    ),
  )
  sockets.push(...opened)
  await vi.waitFor(async () => expect(await connectionsOf(p)).toBe(before + n), { timeout: 5_000, interval: 10 })
  return opened
}

const connectionsOf = (p: RunningProxy): Promise<number> =>
  new Promise((resolve, reject) => p.app.proxy.server.getConnections((err, n) => (err ? reject(err) : resolve(n))))

async function closeAll(some: Socket[]): Promise<void> {
  await Promise.all(some.map((s) => new Promise<void>((resolve) => s.once('close', () => resolve()).end())))
}

async function collections(p: RunningProxy): Promise<number> {
  const text = await (await fetch(`${p.adminUrl}/metrics`)).text()
  const m = /^sluice_heap_collections_total (\d+)$/m.exec(text)
  if (m === null) throw new Error('no sluice_heap_collections_total on /metrics')
  return Number(m[1])
}

/** major collections in this process while `during` runs */
async function majorGCs(during: () => Promise<void>): Promise<number> {
  let majors = 0
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries() as (PerformanceEntry & { detail?: { kind: number; flags: number } })[]) {
      const detail = entry.detail
      if (detail !== undefined && detail.kind === constants.NODE_PERFORMANCE_GC_MAJOR) majors++
    }
  })
  observer.observe({ entryTypes: ['gc'] })
  try {
    await during()
    await sleep(50) // gc entries are delivered after the collection
  } finally {
    observer.disconnect()
  }
  return majors
}

describe('memory after a burst of connections', () => {
  it('gives the heap back once, after the burst has gone — not while a tenth of it is still open', async () => {
    proxy = await startProxy({
      upstream: 'http://127.0.0.1:9/v2',
      memory: { burstConnections: BURST, quietMs: QUIET_MS },
    })
    const p = proxy
    const burst = await open(p, BURST + 10)

    // most of the burst gone, but 10 of 50 still open (more than a tenth): not yet
    await closeAll(burst.slice(10))
    await sleep(QUIET_MS * 4)
    expect(await collections(p)).toBe(0)

    const atTheEnd = await majorGCs(async () => {
      await closeAll(burst.slice(0, 10))
      await vi.waitFor(async () => expect(await collections(p)).toBe(1), { timeout: 10_000, interval: QUIET_MS })
    })
    expect(atTheEnd).toBeGreaterThanOrEqual(1)
    const line = p.logs.find((l) => l.msg === 'heap given back after a burst of connections')
    expect(line).toMatchObject({ peakConnections: BURST + 10 })
    expect(line?.heapCommittedAfter).toBeLessThanOrEqual(line?.heapCommittedBefore as number)

    // once per burst: quiet afterwards, nothing more
    await sleep(QUIET_MS * 4)
    expect(await collections(p)).toBe(1)
  })

  it('leaves the heap to V8 when the connections never made a burst, or when it is switched off', async () => {
    for (const memory of [
      { burstConnections: BURST, quietMs: QUIET_MS },
      { burstConnections: 0, quietMs: QUIET_MS },
    ]) {
      proxy = await startProxy({ upstream: 'http://127.0.0.1:9/v2', memory })
      const p = proxy
      const few = await open(p, memory.burstConnections === 0 ? BURST * 2 : BURST - 1)
      await closeAll(few)
      await sleep(QUIET_MS * 4)
      expect(await collections(p)).toBe(0)
      expect(p.logs.some((l) => String(l.msg).includes('heap'))).toBe(false)
      await p.close()
      proxy = undefined
    }
  })
})

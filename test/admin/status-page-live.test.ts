import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startProxy, type RunningProxy, type StatusKey } from '../support/proxy.js'
import { basicAuth, startSim, type Sim } from '../support/sim.js'
import { parsePromText, valueOf } from '../metrics/prom-text.js'
import {
  hasChromium,
  launchChromium,
  nextRender,
  readField,
  readKeys,
  waitFor,
  type PageKey,
} from './status-page-support.js'
import { needs } from '../support/tools.js'

interface Status {
  mode: string
  backend: string
  keys: StatusKey[]
}

// Every request takes 30 s upstream, so the permits and queues stay put while the page is read.
const SLOW = { 'x-sim-delay-ms': '30000' }
const TRAFFIC: [org: string, method: string, path: string, count: number][] = [
  ['org1', 'POST', '/accounts/search', 3], // limit 1: 1 in flight, 2 queued
  ['org1', 'GET', '/accounts/17/contacts', 7], // limit 5: 5 in flight, 2 queued
  ['org2', 'POST', '/donations/search', 2], // limit 1: 1 in flight, 1 queued
]
const EXPECTED = {
  'org1|POST /accounts/search': { inFlight: 1, limit: 1, queued: 2 },
  'org1|GET /accounts/{id}/contacts': { inFlight: 5, limit: 5, queued: 2 },
  'org2|POST /donations/search': { inFlight: 1, limit: 1, queued: 1 },
}

const stable = (s: Status) =>
  Object.fromEntries(
    s.keys.map((k) => [`${k.instance}|${k.endpoint}`, { inFlight: k.inFlight, limit: k.limit, queued: k.queued }]),
  )

describe.skipIf(!hasChromium)(`the status page over the real proxy, while traffic queues ${needs('chromium')}`, () => {
  let sim: Sim
  let proxy: RunningProxy
  let browser: Browser
  let page: Page
  const clients = new AbortController()

  const status = async (): Promise<Status> => (await (await fetch(`${proxy.adminUrl}/status`)).json()) as Status

  beforeAll(async () => {
    sim = await startSim({})
    proxy = await startProxy({ upstream: sim.apiUrl, shutdown: { graceMs: 200 }, logLevel: 'warn' })
    browser = await launchChromium()
    page = await browser.newPage()
  })
  afterAll(async () => {
    clients.abort()
    await browser?.close()
    // the sim first: it cuts the 30 s upstream requests, so the proxy has nothing left to wait for
    await sim?.close()
    await proxy?.close()
  })

  it('shows the same permits, queues and waits as /status', async () => {
    for (const [org, method, path, count] of TRAFFIC) {
      for (let i = 0; i < count; i++) {
        // each asks for another page: identical reads would share one call and one permit
        fetch(`${proxy.url}/v2${path}?page=${i}`, {
          method,
          headers: { authorization: basicAuth(org), 'content-type': 'application/json', ...SLOW },
          ...(method === 'POST' ? { body: '{}' } : {}),
          signal: clients.signal,
        }).catch(() => undefined) // aborted at the end
      }
    }
    const deadline = Date.now() + 15_000
    for (;;) {
      const s = stable(await status())
      if (
        Object.keys(EXPECTED).every(
          (k) => JSON.stringify(s[k]) === JSON.stringify(EXPECTED[k as keyof typeof EXPECTED]),
        )
      )
        break
      if (Date.now() > deadline) throw new Error(`traffic did not queue as planned: ${JSON.stringify(s)}`)
      await new Promise((r) => setTimeout(r, 20))
    }

    // the page as the admin port serves it (with its CSP), next to the real /status
    await page.goto(`${proxy.adminUrl}/?refresh=250`)
    await nextRender(page)
    // /status before and after one render: the counts are frozen (30 s upstream), the waits only grow.
    const before = await status()
    await nextRender(page)
    const shown = await readKeys(page)
    const after = await status()
    expect(stable(after)).toEqual(stable(before))
    expect(stable(after)).toEqual(EXPECTED)

    const byKey = new Map<string, PageKey>(shown.map((k) => [k.key, k]))
    expect([...byKey.keys()].sort()).toEqual(Object.keys(EXPECTED).sort())
    for (const k of after.keys) {
      const id = `${k.instance}|${k.endpoint}`
      const row = byKey.get(id)!
      expect({ inFlight: row.inFlight, limit: row.limit, queued: row.queued }, id).toEqual({
        inFlight: k.inFlight,
        limit: k.limit,
        queued: k.queued,
      })
      const old = before.keys.find((b) => b.instance === k.instance && b.endpoint === k.endpoint)!
      expect(row.oldestWaitMs, id).toBeGreaterThanOrEqual(old.oldestWaitMs)
      expect(row.oldestWaitMs, id).toBeLessThanOrEqual(k.oldestWaitMs)
      if (k.queued > 0) expect(row.oldestWaitMs, id).toBeGreaterThan(0)
    }
    expect(await readField(page, 'mode')).toBe(after.mode)
    expect(await readField(page, 'backend')).toBe(after.backend)
    expect(await readField(page, 'totalQueued')).toBe('5')
    expect(await readField(page, 'totalInFlight')).toBe('7')

    // /metrics says the same, from the same limiter
    const scraped = parsePromText(await (await fetch(`${proxy.adminUrl}/metrics`)).text())
    for (const k of after.keys) {
      const labels = { endpoint: k.endpoint, org: k.instance }
      expect(valueOf(scraped, 'sluice_permits_in_flight', labels), k.endpoint).toBe(k.inFlight)
      expect(valueOf(scraped, 'sluice_queue_depth', labels), k.endpoint).toBe(k.queued)
      expect(valueOf(scraped, 'sluice_permit_limit', labels), k.endpoint).toBe(k.limit)
    }
    expect(valueOf(scraped, 'sluice_limiter_mode', { mode: after.mode })).toBe(1)

    // Clients hang up: the queued leave at once, the permits stay held while the upstream still works.
    clients.abort()
    await waitFor(
      page,
      `[...document.querySelectorAll('#keys [data-field=queued]')].every((td) => td.getAttribute('data-value') === '0')`,
    )
    const left = await status()
    const rows = await readKeys(page)
    expect(rows.map((r) => [r.key, r.inFlight, r.queued]).sort()).toEqual(
      left.keys.map((k) => [`${k.instance}|${k.endpoint}`, k.inFlight, k.queued]).sort(),
    )
    expect(rows.reduce((n, r) => n + r.inFlight, 0)).toBe(7)
    // every client hung up before its answer: all 12 are counted client_aborted (the 7 upstream too,
    // though their permits stay held until the upstream answers)
    const until = Date.now() + 10_000
    let aborted = 0
    while (aborted < 12 && Date.now() < until) {
      const m = parsePromText(await (await fetch(`${proxy.adminUrl}/metrics`)).text())
      aborted = m
        .filter((x) => x.name === 'sluice_requests_total' && x.labels.outcome === 'client_aborted')
        .reduce((n, x) => n + x.value, 0)
      if (aborted < 12) await new Promise((r) => setTimeout(r, 50))
    }
    expect(aborted).toBe(12)
  })
})

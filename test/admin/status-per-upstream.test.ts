import { mkdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startProxy, type RunningProxy } from '../support/proxy.js'
import { basicAuth, startSim, type Sim } from '../support/sim.js'
import { hasChromium, launchChromium, nextRender } from './status-page-support.js'
import { needs } from '../support/tools.js'

/*
 * /status and the status page per upstream (docs/observability.md, "Status page"): the CRM, its trial
 * and an own API with a configured limit of 4 and a rate; each upstream's route, credentials and 429s;
 * each key's limit with where it comes from (a configured 4 is "4 configured", never "4 learned"), its
 * rate and next start. Read in headless Chromium from the real admin port; a screenshot is kept in
 * tmp/status-per-upstream.png.
 */

interface Key {
  upstream?: string
  instance: string
  endpoint: string
  limit: number
  limitSource?: string
  inFlight: number
  queued: number
  learned?: unknown
}
interface Status {
  keys: Key[]
  rates?: { upstream?: string; instance: string; endpoint: string; rate?: { requests: number; windowMs: number } }[]
  upstreams?: { name: string; prefix: string; credentials: string; upstream429s: number }[]
}

const SLOW = { 'x-sim-delay-ms': '30000' }
const RATE = { requests: 100, windowMs: 10_000 }
const SCREENSHOT = join(process.cwd(), 'tmp', 'status-per-upstream.png')

describe.skipIf(!hasChromium)(`/status and the status page per upstream ${needs('chromium')}`, () => {
  let sim: Sim
  let proxy: RunningProxy
  let browser: Browser
  let page: Page
  const clients = new AbortController()
  const status = async (): Promise<Status> => (await (await fetch(`${proxy.adminUrl}/status`)).json()) as Status
  const fire = (path: string, headers: Record<string, string>): void =>
    void fetch(`${proxy.url}${path}`, { headers, signal: clients.signal }).catch(() => undefined)

  beforeAll(async () => {
    sim = await startSim({})
    proxy = await startProxy({
      upstream: sim.apiUrl,
      shutdown: { graceMs: 200 },
      logLevel: 'warn',
      upstreams: [
        { name: 'trial', prefix: '/trial/v2', url: sim.apiUrl, profile: 'neon-v2' },
        {
          name: 'reports',
          prefix: '/reports/v1',
          url: sim.apiUrl,
          catalog: { default: 4, per: 'upstream', rate: RATE },
          instance: { from: 'header', header: 'x-account-id' },
        },
      ],
    })
    browser = await launchChromium()
    page = await browser.newPage({ viewport: { width: 1400, height: 900 } })
  })
  afterAll(async () => {
    clients.abort()
    await browser?.close()
    await sim?.close()
    await proxy?.close()
  })

  it("groups keys by upstream with limit, source, rate and next start, and counts each upstream's 429s", async () => {
    // a trial request the API answers 429 until its 1 s deadline: counted as trial's
    const throttled = fetch(`${proxy.url}/trial/v2/accounts/1`, {
      headers: {
        authorization: basicAuth('1001'),
        'x-sim-status': '429',
        'x-sim-retry-after': '0',
        'x-sluice-max-wait': '1',
      },
    })
    for (let i = 0; i < 2; i++)
      fire(`/v2/accounts/17/contacts?page=${i}`, { authorization: basicAuth('org1'), ...SLOW })
    for (let i = 0; i < 6; i++)
      fire(`/reports/v1/accounts/${i}`, { authorization: 'Bearer own', 'x-account-id': 'acct-1', ...SLOW })
    expect((await throttled).status).toBe(503)

    const deadline = Date.now() + 15_000
    let s = await status()
    const reportsKey = (st: Status): Key | undefined => st.keys.find((k) => k.upstream === 'reports')
    while (!(reportsKey(s)?.inFlight === 4 && reportsKey(s)?.queued === 2)) {
      if (Date.now() > deadline) throw new Error(`traffic did not queue as planned: ${JSON.stringify(s.keys)}`)
      await new Promise((r) => setTimeout(r, 20))
      s = await status()
    }

    // /status: the upstreams, a key's source, the rate
    expect(s.upstreams?.map((u) => [u.name, u.prefix, u.credentials])).toEqual([
      ['neon', '/v2', 'passed'],
      ['trial', '/trial/v2', 'passed'],
      ['reports', '/reports/v1', 'passed'],
    ])
    const by429 = Object.fromEntries(s.upstreams!.map((u) => [u.name, u.upstream429s]))
    expect(by429.trial).toBeGreaterThanOrEqual(1)
    expect([by429.neon, by429.reports]).toEqual([0, 0])
    expect(reportsKey(s)).toMatchObject({ instance: 'acct-1', endpoint: 'ALL /*', limit: 4, limitSource: 'configured' })
    expect(reportsKey(s)!.learned).toBeUndefined()
    const crm = s.keys.find((k) => k.upstream === undefined && k.instance === 'org1')
    expect(crm).toMatchObject({ endpoint: 'GET /accounts/{id}/contacts', limit: 5, limitSource: 'published' })
    expect(s.rates?.find((r) => r.upstream === 'reports' && r.instance === 'acct-1')?.rate).toEqual({
      ...RATE,
      burst: 1,
    })

    // the page, from the real admin port
    await page.goto(`${proxy.adminUrl}/?refresh=250`)
    await nextRender(page)
    await nextRender(page)
    const upstreams = await page.evaluate<string[][]>(
      `[...document.querySelectorAll('#upstreams tbody tr')].map((tr) => [...tr.children].map((td) => td.textContent))`,
    )
    expect(upstreams.map((r) => [r[0], r[1], r[2], r[3]])).toEqual([
      ['neon', '/v2', "apps' own", '1'],
      ['trial', '/trial/v2', "apps' own", '0'],
      ['reports', '/reports/v1', "apps' own", '1'],
    ])
    expect(Number(upstreams[1]![6])).toBeGreaterThanOrEqual(1) // trial's 429s
    const rows = await page.evaluate<{ upstream: string; key: string; limit: string; source: string; rate: string }[]>(
      `[...document.querySelectorAll('#keys tr[data-key]')].map((tr) => ({
        upstream: tr.getAttribute('data-upstream'), key: tr.getAttribute('data-key'),
        limit: tr.querySelector('[data-field=limit]').textContent,
        source: tr.querySelector('[data-field=limit]').getAttribute('data-source'),
        rate: tr.querySelector('[data-field=rate]').textContent }))`,
    )
    expect(rows.map((r) => [r.upstream, r.key, r.limit])).toEqual([
      ['neon', 'org1|GET /accounts/{id}/contacts', '5 published'],
      ['reports', 'reports acct-1|ALL /*', '4 configured'],
    ])
    expect(rows[1]!.rate).toMatch(/^100 \/ 10\.0 s configured · next (now|in .+)$/)
    expect(rows[0]!.rate).toBe('—')

    mkdirSync(join(process.cwd(), 'tmp'), { recursive: true })
    await page.screenshot({ path: SCREENSHOT, fullPage: true })
    expect(statSync(SCREENSHOT).size).toBeGreaterThan(10_000)
  }, 60_000)
})

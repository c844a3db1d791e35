import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  hasChromium,
  launchChromium,
  nextRender,
  readField,
  readKeys,
  servePage,
  waitFor,
  type PageServer,
} from './status-page-support.js'
import { needs } from '../support/tools.js'

// A status document as the admin server answers it, with an instance name that tries to be markup.
const XSS = '<img src=x onerror="window.__pwned=1">'
const APP_XSS = '<img src=y onerror="window.__pwned=2">'
/** one key of /status, with the optional parts of fair share (apps) and learned limits */
interface KeyRow {
  instance: string
  endpoint: string
  limit: number
  inFlight: number
  queued: number
  oldestWaitMs: number
  apps?: { app: string; held: number; queued: number }[]
  learned?: { value: number; ceiling: number }
}
const fixture = () => ({
  mode: 'redis',
  backend: 'redis',
  uptimeSeconds: 3725,
  closing: false,
  keys: [
    {
      instance: 'org1',
      endpoint: 'POST /accounts/search',
      limit: 1,
      inFlight: 1,
      queued: 7,
      oldestWaitMs: 12_500,
      apps: [
        { app: 'batch', held: 0, queued: 6 },
        { app: 'web', held: 1, queued: 1 },
      ],
    },
    {
      instance: 'org1',
      endpoint: 'GET /accounts/{id}/contacts',
      limit: 5,
      inFlight: 3,
      queued: 0,
      oldestWaitMs: 0,
      learned: { value: 5.43, ceiling: 50 },
    },
    {
      instance: XSS,
      endpoint: 'GET /donations/{id}',
      limit: 5,
      inFlight: 5,
      queued: 2,
      oldestWaitMs: 800,
      // more apps than the cell shows, one of them named like markup
      apps: [
        { app: 'a1', held: 0, queued: 1 },
        { app: APP_XSS, held: 4, queued: 0 },
        { app: 'a2', held: 1, queued: 0 },
        { app: 'a3', held: 0, queued: 1 },
        { app: 'a4', held: 0, queued: 0 },
        { app: 'a5', held: 0, queued: 0 },
        { app: 'a6', held: 0, queued: 0 },
        { app: 'a7', held: 0, queued: 0 },
      ],
    },
  ] as KeyRow[],
  versions: [
    { version: '2.9', state: 'deprecated', retiresOn: '2026-09-12', requests: 42 },
    { version: '2.11', state: 'supported', requests: 1234 },
  ],
  details: { replicas: 3, redis: { state: 'ready' } },
})

describe.skipIf(!hasChromium)(`the status page in headless Chromium (a fixed /status) ${needs('chromium')}`, () => {
  let browser: Browser
  let page: Page
  let server: PageServer
  let status: { code: number; body: string } = { code: 200, body: JSON.stringify(fixture()) }

  beforeAll(async () => {
    server = await servePage(() => Promise.resolve(status))
    browser = await launchChromium()
    page = await browser.newPage()
  })
  afterAll(async () => {
    await browser?.close()
    await server?.close()
  })

  it('shows every key, the mode, the versions and the details of /status, under its own CSP', async () => {
    const blocked: string[] = []
    page.on('console', (m) => {
      if (m.type() === 'error') blocked.push(m.text())
    })
    await page.goto(`${server.url}/?refresh=300`)
    await nextRender(page)

    const keys = await readKeys(page)
    const expected = fixture().keys
    expect(keys.map((k) => k.key).sort()).toEqual(expected.map((k) => `${k.instance}|${k.endpoint}`).sort())
    for (const k of expected) {
      const shown = keys.find((x) => x.key === `${k.instance}|${k.endpoint}`)!
      expect(shown).toMatchObject({
        instance: k.instance,
        endpoint: k.endpoint,
        inFlight: k.inFlight,
        limit: k.limit,
        queued: k.queued,
        oldestWaitMs: k.oldestWaitMs,
      })
    }
    // a learned limit is marked as such, with its value on hover; the others are plain numbers (README "Learned limits")
    const limitCell = (key: string): Promise<string[]> =>
      page.evaluate<string[]>(
        `(() => { const c = document.querySelector('tr[data-key="${key}"] [data-field=limit]'); return [c.textContent, c.getAttribute('data-learned'), c.getAttribute('title')] })()`,
      )
    expect(await limitCell('org1|GET /accounts/{id}/contacts')).toEqual([
      '5 learned',
      '5.43',
      'learned from the answers of the API: 5.43, never above 50',
    ])
    expect(await limitCell('org1|POST /accounts/search')).toEqual(['1', null, null])
    // the bar is in flight against the limit
    expect(keys.find((k) => k.key === 'org1|GET /accounts/{id}/contacts')!.barWidth).toBe('60%')
    expect(keys.find((k) => k.key === 'org1|POST /accounts/search')!.barWidth).toBe('100%')

    expect(await readField(page, 'mode')).toBe('redis')
    expect(await readField(page, 'backend')).toBe('redis')
    expect(await readField(page, 'uptimeSeconds')).toBe('1h 2m')
    expect(await readField(page, 'totalQueued')).toBe('9')
    expect(await readField(page, 'totalInFlight')).toBe('9')
    expect(await readField(page, 'keyCount')).toBe('3')
    expect(await readField(page, 'connection')).toBe('live')

    const versions = await page.evaluate<
      string[][]
    >(`[...document.querySelectorAll('#versions tr[data-version]')].map((tr) => [
      tr.getAttribute('data-version'), tr.querySelector('[data-field=state]').textContent,
      tr.querySelector('[data-field=retiresOn]').textContent, tr.querySelector('[data-field=requests]').textContent])`)
    expect(versions).toEqual([
      ['2.11', 'supported', '—', '1234'],
      ['2.9', 'deprecated', '2026-09-12', '42'],
    ])
    expect(await page.evaluate(`document.querySelector('[data-detail=redis]').textContent`)).toBe('{"state":"ready"}')

    // each app's share of a key, holding apps first; nothing for a key whose status has no `apps`
    const apps = await page.evaluate<
      Record<string, string[][]>
    >(`Object.fromEntries([...document.querySelectorAll('#keys tr[data-key]')].map((tr) => [
      tr.getAttribute('data-key'),
      [...tr.querySelectorAll('[data-field=apps] [data-app]')].map((a) => [a.getAttribute('data-app'), a.getAttribute('data-held'), a.getAttribute('data-queued'), a.textContent, a.getAttribute('title')])]))`)
    expect(apps['org1|POST /accounts/search']).toEqual([
      ['web', '1', '1', 'web 1 held · 1 waiting', 'web: 1 of 1 permits held (100%), 1 of 7 waiters (14%)'],
      ['batch', '0', '6', 'batch 0 held · 6 waiting', 'batch: 0 of 1 permits held (0%), 6 of 7 waiters (86%)'],
    ])
    expect(apps['org1|GET /accounts/{id}/contacts']).toEqual([])
    // the busiest six, holding first, then a count of the rest; a name that looks like markup is text
    expect(apps[`${XSS}|GET /donations/{id}`]!.map((a) => a[0])).toEqual([APP_XSS, 'a2', 'a1', 'a3', 'a4', 'a5'])
    expect(
      await page.evaluate(
        `document.querySelector('tr[data-key="org1|POST /accounts/search"]') !== null && [...document.querySelectorAll('#keys tr[data-key]')].find((tr) => tr.getAttribute('data-key').endsWith('|GET /donations/{id}')).querySelector('.app.more').textContent`,
      ),
    ).toBe('+2 more')
    expect(
      await page.evaluate(
        `document.querySelector('tr[data-key="org1|GET /accounts/{id}/contacts"] [data-field=apps]').textContent`,
      ),
    ).toBe('')

    // the instance name was shown as text, never run as markup; and the CSP let the page's own script run
    expect(await page.evaluate('window.__pwned')).toBeUndefined()
    expect(await page.evaluate('document.querySelectorAll("#keys img").length')).toBe(0)
    expect(blocked.filter((t) => /Content Security Policy/i.test(t))).toEqual([])
  })

  it('follows changes: new keys appear, finished keys go, and an unreachable /status marks the page stale', async () => {
    const next = fixture()
    next.keys = [
      { instance: 'org1', endpoint: 'POST /accounts/search', limit: 1, inFlight: 1, queued: 2, oldestWaitMs: 300 },
      { instance: 'org9', endpoint: 'POST /orders/search', limit: 1, inFlight: 1, queued: 0, oldestWaitMs: 0 },
    ]
    status = { code: 200, body: JSON.stringify(next) }
    await nextRender(page)
    const keys = await readKeys(page)
    expect(keys.map((k) => [k.key, k.inFlight, k.limit, k.queued])).toEqual([
      ['org1|POST /accounts/search', 1, 1, 2],
      ['org9|POST /orders/search', 1, 1, 0],
    ])

    // the filter hides rows without changing the data behind them
    await page.fill('#filter', 'orders')
    expect(
      await page.evaluate(`[...document.querySelectorAll('#keys tr[data-key]')].filter((tr) => !tr.hidden).length`),
    ).toBe(1)
    await page.fill('#filter', '')

    status = { code: 503, body: '{}' }
    await waitFor(page, `document.querySelector('[data-field=connection]').textContent === 'stale'`)
    expect(await readField(page, 'error')).toContain('/status answered 503')
    // the last good figures stay on the page
    expect((await readKeys(page)).length).toBe(2)

    status = { code: 200, body: JSON.stringify({ ...next, keys: [], mode: 'local' }) }
    await nextRender(page)
    expect(await readKeys(page)).toEqual([])
    expect(await page.evaluate(`document.querySelector('#keys tr.empty').textContent`)).toContain('No active keys')
    expect(await readField(page, 'mode')).toBe('local')
    expect(await readField(page, 'connection')).toBe('live')
  })
})

import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  hasChromium,
  launchChromium,
  nextRender,
  readField,
  servePage,
  type PageServer,
} from './status-page-support.js'
import { needs } from '../support/tools.js'

// /status with the reuse section as the admin server answers it; one instance name tries to be markup.
const XSS = '<img src=x onerror="window.__pwned=1">'
const STATUS = {
  mode: 'memory',
  backend: 'memory',
  uptimeSeconds: 60,
  closing: false,
  keys: [],
  reuse: {
    coalescing: { calls: 1, followers: 4 },
    cache: { entries: 2, bytes: 4096 },
    permitsSaved: [
      { instance: 'org1', endpoint: 'GET /properties/countries', coalesced: 19, cacheHits: 40 },
      { instance: XSS, endpoint: 'GET /accounts/{id}', coalesced: 3, cacheHits: 0 },
    ],
  },
}

interface SavedRow {
  key: string
  instance: string
  coalesced: number
  cacheHits: number
  saved: number
}

const READ_SAVED = `[...document.querySelectorAll('#saved tbody tr[data-saved-key]')].map((tr) => ({
  key: tr.getAttribute('data-saved-key'),
  instance: tr.querySelector('.instance').textContent,
  coalesced: Number(tr.querySelector('[data-field=coalesced]').getAttribute('data-value')),
  cacheHits: Number(tr.querySelector('[data-field=cacheHits]').getAttribute('data-value')),
  saved: Number(tr.querySelector('[data-field=saved]').getAttribute('data-value')),
}))`

describe.skipIf(!hasChromium)(`the status page shows the permits saved per key ${needs('chromium')}`, () => {
  let browser: Browser
  let page: Page
  let server: PageServer

  beforeAll(async () => {
    server = await servePage(() => Promise.resolve({ code: 200, body: JSON.stringify(STATUS) }))
    browser = await launchChromium()
    page = await browser.newPage()
  })
  afterAll(async () => {
    await browser?.close()
    await server?.close()
  })

  it('one row per (instance, endpoint) with coalesced, cache hits and their sum, and the total in a tile', async () => {
    await page.goto(`${server.url}/?refresh=300`)
    await nextRender(page)
    expect(await page.evaluate<SavedRow[]>(READ_SAVED)).toEqual([
      { key: 'org1|GET /properties/countries', instance: 'org1', coalesced: 19, cacheHits: 40, saved: 59 },
      { key: `${XSS}|GET /accounts/{id}`, instance: XSS, coalesced: 3, cacheHits: 0, saved: 3 },
    ])
    expect(await readField(page, 'totalSaved')).toBe('62')
    expect(await page.evaluate('document.querySelector("#saved").hidden')).toBe(false)
    expect(await page.evaluate('window.__pwned')).toBeUndefined()
  })
})

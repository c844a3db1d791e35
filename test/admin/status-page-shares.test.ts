import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { hasChromium, launchChromium, nextRender, servePage, type PageServer } from './status-page-support.js'
import { needs } from '../support/tools.js'

// /status with each app's use of what all apps share (memory.holders, the keys' apps[].queued summed,
// reuse.coalescing.apps); one app name tries to be markup.
const XSS = '<img src=x onerror="window.__pwned=1">'
const STATUS = {
  mode: 'memory',
  backend: 'memory',
  uptimeSeconds: 60,
  closing: false,
  keys: [
    {
      instance: '1001',
      endpoint: 'GET /accounts',
      limit: 5,
      inFlight: 5,
      queued: 3,
      oldestWaitMs: 10,
      apps: [
        { app: 'batch', held: 4, queued: 2 },
        { app: 'web', held: 1, queued: 1 },
      ],
    },
    {
      instance: '1002',
      endpoint: 'GET /accounts',
      limit: 5,
      inFlight: 1,
      queued: 4,
      oldestWaitMs: 10,
      apps: [{ app: 'batch', held: 1, queued: 4 }],
    },
  ],
  memory: { budgetBytes: 1048576, inUse: 81920, shareBytes: 524288, by: 'app', holders: { web: 16384, batch: 65536 } },
  reuse: { coalescing: { calls: 1, followers: 3, apps: { batch: 1, [XSS]: 2 } }, cache: null, permitsSaved: [] },
}

const READ_SHARES = `[...document.querySelectorAll('#shares tbody tr')].map((tr) => [
  tr.cells[0].textContent,
  Number(tr.querySelector('[data-field=memory]').getAttribute('data-value')),
  Number(tr.querySelector('[data-field=queued]').getAttribute('data-value')),
  Number(tr.querySelector('[data-field=followers]').getAttribute('data-value')),
])`

describe.skipIf(!hasChromium)(`the status page shows each app's shares ${needs('chromium')}`, () => {
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

  it('one row per app: its memory held, its waiters over every key and its requests following calls; names stay text', async () => {
    await page.goto(`${server.url}/?refresh=300`)
    await nextRender(page)
    expect(await page.evaluate(READ_SHARES)).toEqual([
      [XSS, 0, 0, 2],
      ['batch', 65536, 6, 1],
      ['web', 16384, 1, 0],
    ])
    expect(await page.evaluate('document.querySelector("#shares").hidden')).toBe(false)
    expect(await page.evaluate('window.__pwned')).toBeUndefined()
  })
})

import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { chromium, type Browser, type Page } from 'playwright-core'
import { renderStatusPage, statusPageHeaders } from '../../src/admin/status-page.js'
import { CHROMIUM, has } from '../support/tools.js'

export { CHROMIUM }
export const hasChromium = has('chromium')

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  })
}

export interface PageServer {
  readonly url: string
  close(): Promise<void>
}

/**
 * Serves the status page at `/` (with its CSP headers) and `/status` from `status()`: a fixed JSON
 * document, or the real admin server's `/status` passed through.
 */
export async function servePage(status: () => Promise<{ code: number; body: string }>): Promise<PageServer> {
  const server: Server = createServer((req, res) => {
    if (req.url === '/' || req.url?.startsWith('/?') || req.url === '/status.html') {
      res.writeHead(200, statusPageHeaders()).end(renderStatusPage())
      return
    }
    if (req.url === '/status') {
      status().then(
        ({ code, body }) => res.writeHead(code, { 'content-type': 'application/json' }).end(body),
        (err: Error) => res.writeHead(500).end(err.message),
      )
      return
    }
    res.writeHead(404).end()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}

export interface PageKey {
  readonly key: string
  readonly instance: string
  readonly endpoint: string
  readonly inFlight: number
  readonly limit: number
  readonly queued: number
  readonly oldestWaitMs: number
  readonly barWidth: string
}

// Read with string expressions: functions passed to page.evaluate would be serialised after the
// test transform, which may add helpers the browser does not have.
const READ_KEYS = `[...document.querySelectorAll('#keys tr[data-key]')].map((tr) => {
  const v = (f) => Number(tr.querySelector('[data-field=' + f + ']').getAttribute('data-value'))
  return {
    key: tr.getAttribute('data-key'),
    instance: tr.querySelector('[data-field=instance]').textContent,
    endpoint: tr.querySelector('[data-field=endpoint]').textContent,
    inFlight: v('inFlight'), limit: v('limit'), queued: v('queued'), oldestWaitMs: v('oldestWaitMs'),
    barWidth: tr.querySelector('.bar > span').style.width,
  }
})`

export const readKeys = (page: Page): Promise<PageKey[]> => page.evaluate<PageKey[]>(READ_KEYS)

export const readField = (page: Page, field: string): Promise<string> =>
  page.evaluate<string>(`document.querySelector('[data-field=${field}]').textContent`)

export const updates = (page: Page): Promise<number> =>
  page.evaluate<number>('Number(document.body.getAttribute("data-updates"))')

/**
 * Waits until `expression` is truthy in the page. Polls with page.evaluate (which the page's CSP does
 * not govern) rather than page.waitForFunction (which evals inside the page, and the CSP forbids eval).
 */
export async function waitFor(page: Page, expression: string, timeoutMs = 10_000): Promise<void> {
  const until = Date.now() + timeoutMs
  while (!(await page.evaluate(expression))) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${expression}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

/** Waits until the page has rendered a /status answer fetched after this call. */
export async function nextRender(page: Page): Promise<void> {
  const seen = await updates(page)
  // one render may be in flight with an answer fetched before the call: wait for the one after it
  await waitFor(page, `Number(document.body.getAttribute("data-updates")) >= ${seen + 2}`)
}

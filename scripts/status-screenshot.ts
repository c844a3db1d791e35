/**
 * `npm run screenshot:status [-- --url <admin url>] [--out file.png]`: takes a screenshot of the status
 * page in headless Chromium (Debian's /usr/bin/chromium), to look at it as a person would.
 *
 * With --url, of a running sluice's admin port. Without, of a demo: the real proxy in front of a
 * stand-in upstream that takes 3 s per request, with traffic from a few organisations queueing.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { parseArgs } from 'node:util'
import { chromium } from 'playwright-core'
import { buildApp } from '../src/app.js'
import { loadSettings } from '../src/config/load.js'

const { values } = parseArgs({
  options: {
    url: { type: 'string' },
    out: { type: 'string', default: 'status-page.png' },
    width: { type: 'string', default: '1280' },
  },
})

const listen = async (server: Server): Promise<string> => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

async function demo(): Promise<{ pageUrl: string; stop: () => Promise<void> }> {
  // A slow stand-in for the API: every request takes 3 s, so queues build up behind the limits.
  const upstream = createServer((req, res) => {
    req.resume()
    const timer = setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'), 3_000)
    res.on('close', () => clearTimeout(timer))
  })
  const upstreamUrl = await listen(upstream)
  const app = await buildApp(
    loadSettings(
      {},
      {
        host: '127.0.0.1',
        adminHost: '127.0.0.1',
        port: 0,
        adminPort: 0,
        upstream: `${upstreamUrl}/v2`,
        logLevel: 'warn',
      },
    ),
  )
  const { proxyUrl, adminUrl } = await app.listen()

  const basic = (org: string) => `Basic ${Buffer.from(`${org}:demo-key`).toString('base64')}`
  const traffic: [string, string, string, number][] = [
    ['acme-foundation', 'POST', '/accounts/search', 6],
    ['acme-foundation', 'GET', '/accounts/1001/contacts', 7],
    ['acme-foundation', 'GET', '/donations/77', 3],
    ['riverside-arts', 'POST', '/donations/search', 3],
    ['riverside-arts', 'GET', '/events/5/attendees', 5],
    ['hope-shelter', 'POST', '/orders/search', 1],
    ['hope-shelter', 'GET', '/properties/countries', 2],
  ]
  const controller = new AbortController()
  for (const [org, method, path, n] of traffic) {
    for (let i = 0; i < n; i++) {
      void fetch(`${proxyUrl}/v2${path}`, {
        method,
        headers: {
          authorization: basic(org),
          'content-type': 'application/json',
          'neon-api-version': ['2.11', '2.9', '2.10', '2.12'][i % 4]!,
        },
        ...(method === 'POST' ? { body: '{}' } : {}),
        signal: controller.signal,
      }).catch(() => undefined)
    }
  }

  return {
    pageUrl: `${adminUrl}/`,
    stop: async () => {
      controller.abort()
      // the stand-in API first: it cuts the slow requests, so the proxy has nothing to wait for
      upstream.closeAllConnections()
      await app.close()
      upstream.close()
    },
  }
}

const target = values.url
  ? { pageUrl: new URL('status.html', values.url.replace(/\/?$/, '/')).href, stop: async () => {} }
  : await demo()
const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
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
try {
  const page = await browser.newPage({ viewport: { width: Number(values.width), height: 800 } })
  await page.goto(`${target.pageUrl}?refresh=500`)
  // a couple of renders, so the wait times have grown a little
  for (let i = 0; i < 100 && Number(await page.evaluate('document.body.getAttribute("data-updates")')) < 3; i++) {
    await new Promise((r) => setTimeout(r, 100))
  }
  await page.screenshot({ path: values.out, fullPage: true })
  console.log(`wrote ${values.out} (${target.pageUrl})`)
} finally {
  await browser.close()
  await target.stop()
}

#!/usr/bin/env node
/**
 * `npm run demo`: the sim and sluice side by side. The same burst, well over the API's limits, is
 * fired straight at the sim and through sluice; the table shows what each client got.
 */
import { performance } from 'node:perf_hooks'
import { request } from 'undici'
import { buildApp } from '../app.js'
import { loadSettings } from '../config/load.js'
import { startSim, type Sim } from '../sim/index.js'

const BURST = [
  { method: 'POST', path: '/accounts/search', endpoint: 'POST /accounts/search', count: 20 },
  { method: 'GET', path: '/accounts/1001/contacts', endpoint: 'GET /accounts/{id}/contacts', count: 40 },
] as const
const LATENCY_MS = 40
const auth = `Basic ${Buffer.from('demo-org:demo-key').toString('base64')}`

interface Tally {
  ok: number
  tooMany: number
  other: number
  ms: number
}

async function fire(baseUrl: string): Promise<Tally> {
  const tally: Tally = { ok: 0, tooMany: 0, other: 0, ms: 0 }
  const started = performance.now()
  await Promise.all(
    BURST.flatMap((b) =>
      Array.from({ length: b.count }, async (_, i) => {
        // each read asks for another page: identical reads through sluice would share one call
        const res = await request(`${baseUrl}/v2${b.path}${b.method === 'GET' ? `?page=${i}` : ''}`, {
          method: b.method,
          headers: { authorization: auth, 'content-type': 'application/json' },
          body: b.method === 'POST' ? '{"searchFields":[]}' : null,
        })
        await res.body.dump()
        if (res.statusCode === 429) tally.tooMany++
        else if (res.statusCode < 300) tally.ok++
        else tally.other++
      }),
    ),
  )
  tally.ms = performance.now() - started
  return tally
}

const maxAtApi = (sim: Sim): string =>
  BURST.map((b) => `${b.endpoint.split(' ')[1]}: ${sim.stats().keys[`demo-org ${b.endpoint}`]?.maxInProgress ?? 0}`).join(', ')

async function main(): Promise<void> {
  const sim = await startSim({ latencyMs: LATENCY_MS })
  const settings = loadSettings({}, { upstream: sim.apiUrl, host: '127.0.0.1', port: 0, adminHost: '127.0.0.1', adminPort: 0, logLevel: 'warn' })
  const app = await buildApp(settings)
  const { proxyUrl } = await app.listen()
  const total = BURST.reduce((n, b) => n + b.count, 0)
  process.stdout.write(
    `sim (the API's limits: 1 in progress for POST /accounts/search, 5 for GET /accounts/{id}/contacts; ${LATENCY_MS} ms a request) on ${sim.url}\n` +
      `sluice on ${proxyUrl}\n\nA burst of ${total} requests at once for one organisation (${BURST.map((b) => `${b.count} × ${b.endpoint}`).join(', ')}):\n\n`,
  )

  const direct = await fire(sim.url)
  const directMax = maxAtApi(sim)
  sim.reset()
  const viaSluice = await fire(proxyUrl)
  const sluiceMax = maxAtApi(sim)

  const rows = [
    ['', 'direct to the API', 'through sluice'],
    ['2xx answers', String(direct.ok), String(viaSluice.ok)],
    ['429 Too Many Requests', String(direct.tooMany), String(viaSluice.tooMany)],
    ['other answers', String(direct.other), String(viaSluice.other)],
    ['most in progress at the API', directMax, sluiceMax],
    ['time for the whole burst', `${direct.ms.toFixed(0)} ms`, `${viaSluice.ms.toFixed(0)} ms`],
  ]
  const widths = [0, 1, 2].map((c) => Math.max(...rows.map((r) => r[c]!.length)))
  for (const row of rows) process.stdout.write(`  ${row.map((cell, c) => cell.padEnd(widths[c]!)).join('  │  ')}\n`)
  process.stdout.write(
    `\nDirect, the API refused what was over its limits and the app would have to retry. Through sluice every request\nwaited its turn in a fair queue and got its answer; the API never saw more than its limit.\n`,
  )
  await app.close()
  await sim.close()
}

main().catch((err: unknown) => {
  process.stderr.write(`demo failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`)
  process.exit(1)
})

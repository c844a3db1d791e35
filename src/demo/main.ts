#!/usr/bin/env node
/**
 * `npm run demo` (README "The demo"): the simulated API and sluice in front of it, on this machine
 * only; the upstream is always the sim. `--once` stops before the curl lines (for scripts).
 */
import { performance } from 'node:perf_hooks'
import { request } from 'undici'
import { buildApp } from '../app.js'
import { loadSettings } from '../config/load.js'
import { ConfigError } from '../errors/config-error.js'
import { startSim, type Sim } from '../sim/index.js'

const BURST = [
  { method: 'POST', path: '/accounts/search', endpoint: 'POST /accounts/search', count: 20 },
  { method: 'GET', path: '/accounts/1001/contacts', endpoint: 'GET /accounts/{id}/contacts', count: 40 },
] as const
const LATENCY_MS = 40
/** A "–" endpoint (no published limit) and the limit the sim keeps to itself for it. */
const UNPUBLISHED = { endpoint: 'GET /accounts/{id}/memberships', hidden: 2, waves: 4, wave: 20 } as const
/** The demo's organisation and key: the sim takes any; they are the Basic-auth user and password an app sends. */
const ORG = 'demo-org'
const KEY = 'demo-key'
const auth = `Basic ${Buffer.from(`${ORG}:${KEY}`).toString('base64')}`

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
  BURST.map((b) => `${b.endpoint.split(' ')[1]}: ${sim.stats().keys[`${ORG} ${b.endpoint}`]?.maxInProgress ?? 0}`).join(
    ', ',
  )

const out = (text: string): void => void process.stdout.write(text)

/** One request through sluice, printed as the curl line that makes it, then its status and body. */
async function showOneRequest(proxyUrl: string): Promise<void> {
  const url = `${proxyUrl}/v2/accounts/1001/contacts`
  out(`$ curl -u ${ORG}:${KEY} ${url}\n`)
  const res = await request(url, { headers: { authorization: auth } })
  const body = await res.body.text()
  out(
    `${body}\n(${res.statusCode}; the sim echoes what reached it: sluice forwarded the request as the app sent it)\n\n`,
  )
}

async function showBurst(sim: Sim, proxyUrl: string): Promise<void> {
  const total = BURST.reduce((n, b) => n + b.count, 0)
  out(
    `A burst of ${total} requests at once for one organisation (${BURST.map((b) => `${b.count} × ${b.endpoint}`).join(', ')}):\n\n`,
  )
  sim.reset()
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
  for (const row of rows)
    out(
      `  ${row
        .map((cell, c) => cell.padEnd(widths[c]!))
        .join('  │  ')
        .trimEnd()}\n`,
    )
  out(
    `\nDirect, the API refused what was over its limits and the app would have to retry. Through sluice every request\nwaited its turn in a fair queue and got its answer; the API never saw more than its limit.\n`,
  )
}

/** Waves of requests at once to a "–" endpoint: the 429s the API answered in each, and the limit sluice has after it. */
async function showLearning(sim: Sim, proxyUrl: string, adminUrl: string): Promise<void> {
  const { endpoint, hidden, waves, wave } = UNPUBLISHED
  out(
    `\nLearning a limit the API does not publish: it allows ${hidden} in progress for ${endpoint} and does not say so;\n` +
      `sluice starts from limits.default (5). ${waves} waves of ${wave} requests at once, one after the other:\n\n`,
  )
  const rows = [['wave', '429s the API answered (sluice retried them)', "sluice's limit after", 'client answers 200']]
  let page = 0
  for (let w = 1; w <= waves; w++) {
    sim.reset()
    const statuses = await Promise.all(
      Array.from({ length: wave }, async () => {
        const res = await request(`${proxyUrl}/v2/accounts/1001/memberships?page=${++page}`, {
          headers: { authorization: auth },
        })
        await res.body.dump()
        return res.statusCode
      }),
    )
    const refused = sim.stats().keys[`${ORG} ${endpoint}`]?.rejected429 ?? 0
    const status = (await (await request(`${adminUrl}/status`)).body.json()) as {
      learned?: { instance: string; endpoint: string; limit: number }[]
    }
    const learned = status.learned?.find((l) => l.instance === ORG && l.endpoint === endpoint)
    rows.push([
      String(w),
      String(refused),
      learned === undefined ? '5' : `${learned.limit} (learned)`,
      String(statuses.filter((s) => s === 200).length),
    ])
  }
  const widths = [0, 1, 2, 3].map((c) => Math.max(...rows.map((r) => r[c]!.length)))
  for (const row of rows)
    out(
      `  ${row
        .map((cell, c) => cell.padEnd(widths[c]!))
        .join('  │  ')
        .trimEnd()}\n`,
    )
  out(
    `\nThe first wave drew 429s (never passed on to the app), and each lowered the limit; then the waves went through at the API's own limit.\n`,
  )
}

function tryLines(proxyUrl: string, adminUrl: string, simUrl: string): string {
  return [
    '',
    'Both stay up until Ctrl-C. Try, from another terminal:',
    '',
    `  curl -u ${ORG}:${KEY} ${proxyUrl}/v2/accounts/1001/contacts`,
    `  curl -u ${ORG}:${KEY} -X POST -H 'content-type: application/json' -d '{"searchFields":[]}' ${proxyUrl}/v2/accounts/search`,
    `  curl -u ${ORG}:${KEY} -H 'NEON-API-VERSION: 2.1' ${proxyUrl}/v2/accounts/1001/contacts      # a retired version: 410 from sluice`,
    `  curl ${adminUrl}/status          # what sluice holds and queues now; ${adminUrl}/ is the live status page`,
    `  curl ${simUrl}/__sim/stats     # what reached the sim`,
    '',
    `-u ${ORG}:${KEY} is HTTP Basic auth, as apps send it to the API: the user is the organisation id, the password its API key.`,
    '',
  ].join('\n')
}

const SIM_PORT = /^\d+$/.test(process.env.SIM_PORT ?? '') ? Number(process.env.SIM_PORT) : 8081

async function main(): Promise<void> {
  const once = process.argv.includes('--once')
  const sim = await startSim({
    host: '127.0.0.1',
    port: SIM_PORT,
    latencyMs: LATENCY_MS,
    hiddenLimits: { [ORG]: { [UNPUBLISHED.endpoint]: UNPUBLISHED.hidden } },
  })
  // The user's settings apply, except the upstream: the demo never forwards anywhere but the sim.
  const settings = loadSettings(process.env, { upstream: sim.apiUrl, logLevel: process.env.SLUICE_LOG_LEVEL ?? 'warn' })
  const app = await buildApp(settings)
  let adminUrl: string
  let proxyUrl: string
  try {
    ;({ proxyUrl, adminUrl } = await app.listen())
  } catch (err) {
    await app.close().catch(() => {})
    await sim.close()
    throw err
  }
  out(
    `The simulated API (its limits: 1 in progress for POST /accounts/search, 5 for GET /accounts/{id}/contacts; ${LATENCY_MS} ms a request) on ${sim.url}\n` +
      `sluice in front of it on ${proxyUrl} (admin ${adminUrl})\n\n`,
  )
  await showOneRequest(proxyUrl)
  await showBurst(sim, proxyUrl)
  await showLearning(sim, proxyUrl, adminUrl)

  if (once) {
    await app.close()
    await sim.close()
    return
  }
  out(tryLines(proxyUrl, adminUrl, sim.url))
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve)
    process.once('SIGTERM', resolve)
  })
  out('\nstopping sluice and the sim\n')
  await app.close()
  await sim.close()
}

main().catch((err: unknown) => {
  if (err instanceof ConfigError) process.stderr.write(`demo: ${err.message}\n`)
  else if (err instanceof Error && 'code' in err && err.code === 'EADDRINUSE') {
    process.stderr.write(
      `demo: ${err.message}: something else listens there; set SLUICE_PORT, SLUICE_ADMIN_PORT or SIM_PORT (0 picks a free port)\n`,
    )
  } else process.stderr.write(`demo failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`)
  process.exit(1)
})

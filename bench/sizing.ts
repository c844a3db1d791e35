/**
 * `npm run bench -- sizing`: the figures docs/deploy.md "Sizing" turns into replicas, CPU and memory
 * requests, sockets and Redis. A real proxy process (dist/main.js) per setup, in front of a stand-in
 * API in this process that answers at once (plain HTTP, or HTTPS with a throw-away CA), loaded by
 * 32 closed loops, each its own organisation so no limit binds: CPU per request of the proxy (from
 * /proc) and of Redis (INFO cpu), in process, on Redis, and on Redis with a TLS upstream. Then the
 * resident memory a queued request costs: 3,000 requests queued behind held limit-1 permits.
 */
import { createServer as createHttp, request, type IncomingMessage, type ServerResponse } from 'node:http'
import { createServer as createHttps } from 'node:https'
import type { AddressInfo } from 'node:net'
import type { Redis } from 'ioredis'
import { cpuMs } from './children.js'
import { runLoad } from './loadgen.js'
import { spawnProxy, type ProxyProcess } from '../test/support/process.js'
import { startRedis } from '../test/support/redis.js'
import { makeTestCertificates } from '../test/support/tls.js'

const basic = (org: string): string => `Basic ${Buffer.from(`${org}:bench-key`).toString('base64')}`
const ANSWER = JSON.stringify({ accountId: '1', name: 'x'.repeat(200) })

/** The stand-in API: every request answered at once, but those the hold list keeps (answered on release). */
function apiHandler(held: ServerResponse[]) {
  return (req: IncomingMessage, res: ServerResponse): void => {
    req.resume()
    req.on('end', () => {
      if (req.url?.includes('/accounts/search')) return void held.push(res)
      res.writeHead(200, { 'content-type': 'application/json' }).end(ANSWER)
    })
  }
}

async function listen(server: ReturnType<typeof createHttp>): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return (server.address() as AddressInfo).port
}

async function redisCpuMs(client: Redis | undefined): Promise<number> {
  if (client === undefined) return 0
  const cpu = await client.info('cpu')
  const field = (name: string): number => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(cpu)?.[1] ?? 0)
  return (field('used_cpu_user') + field('used_cpu_sys')) * 1000
}

interface CpuRow {
  readonly setup: string
  readonly rps: number
  readonly p50Ms: number
  readonly proxyUs: number
  readonly redisUs: number
}

async function cpuPerRequest(setup: string, proxy: ProxyProcess, redis: Redis | undefined): Promise<CpuRow> {
  let proxyCpu = 0
  let redisCpu = 0
  let redisAt: Promise<number> = Promise.resolve(0)
  const load = await runLoad({
    url: proxy.url,
    connections: 32,
    durationMs: 8_000,
    warmupMs: 2_000,
    path: () => '/v2/accounts/1',
    headers: (i) => ({ authorization: basic(`org${i}`) }),
    onMeasure: (phase) => {
      const now = cpuMs(proxy.pid)
      proxyCpu = phase === 'start' ? -now : proxyCpu + now
      const previous = redisAt
      redisAt = redisCpuMs(redis).then(async (ms) => (phase === 'start' ? -ms : (await previous) + ms))
    },
  })
  redisCpu = await redisAt
  return {
    setup,
    rps: load.rps,
    p50Ms: load.p50Ms,
    proxyUs: (proxyCpu * 1000) / load.requests,
    redisUs: (redisCpu * 1000) / load.requests,
  }
}

/** Resident bytes per queued request: `count` requests queued on 10 limit-1 keys whose one permit each is held. */
async function memoryPerQueued(apiUrl: string, held: ServerResponse[], count: number): Promise<[number, number]> {
  const proxy = await spawnProxy({
    SLUICE_UPSTREAM: apiUrl,
    SLUICE_REQUEST_LOG: 'false',
    SLUICE_QUEUE_MAX_LENGTH: '100000',
    SLUICE_QUEUE_MAX_WAIT_MS: '600000',
  })
  const clients: ReturnType<typeof request>[] = []
  try {
    await new Promise((r) => setTimeout(r, 1_000))
    const idle = proxy.rssBytes() ?? 0
    const url = new URL(proxy.url)
    for (let i = 0; i < count; i++) {
      const req = request({
        host: url.hostname,
        port: url.port,
        method: 'POST',
        path: '/v2/accounts/search',
        agent: false,
        headers: { authorization: basic(`org${i % 10}`), 'content-type': 'application/json' },
      })
      req.on('error', () => undefined)
      req.end('{}')
      clients.push(req)
      if (i % 200 === 199) await new Promise((r) => setTimeout(r, 50))
    }
    const queued = async (): Promise<number> => {
      const text = await (await fetch(`${proxy.adminUrl}/metrics`)).text()
      return [...text.matchAll(/^sluice_queue_depth\{[^}]*\} (\d+)/gm)].reduce((n, m) => n + Number(m[1]), 0)
    }
    const deadline = Date.now() + 60_000
    while ((await queued()) < count - 10 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200))
    await new Promise((r) => setTimeout(r, 2_000))
    const peak = proxy.rssBytes() ?? 0
    return [idle, (peak - idle) / (count - 10)]
  } finally {
    for (const c of clients) c.destroy()
    for (const res of held.splice(0)) res.destroy()
    await proxy.stop()
  }
}

export async function runSizingBench(): Promise<string> {
  const certs = makeTestCertificates()
  const held: ServerResponse[] = []
  const http = createHttp(apiHandler(held))
  const https = createHttps({ key: certs.key, cert: certs.cert }, apiHandler(held))
  const redis = await startRedis()
  const client = redis.client()
  const rows: CpuRow[] = []
  try {
    const plain = `http://127.0.0.1:${await listen(http)}/v2`
    const tls = `https://127.0.0.1:${await listen(https)}/v2`
    const setups: [string, Record<string, string>, Redis | undefined][] = [
      ['in process', { SLUICE_UPSTREAM: plain }, undefined],
      ['Redis', { SLUICE_UPSTREAM: plain, SLUICE_REDIS_URL: redis.url }, client],
      [
        'Redis + TLS upstream',
        { SLUICE_UPSTREAM: tls, SLUICE_REDIS_URL: redis.url, NODE_EXTRA_CA_CERTS: certs.caFile },
        client,
      ],
    ]
    for (const [name, env, redisClient] of setups) {
      const proxy = await spawnProxy({ ...env, SLUICE_REDIS_KEY_PREFIX: `sizing-${rows.length}` })
      try {
        rows.push(await cpuPerRequest(name, proxy, redisClient))
      } finally {
        await proxy.stop()
      }
    }
    const [idle, perQueued] = await memoryPerQueued(plain, held, 3_000)
    return [
      '| setup | req/s (2 shared cores) | p50 ms | proxy CPU µs/request | Redis CPU µs/request |',
      '|---|---:|---:|---:|---:|',
      ...rows.map(
        (r) =>
          `| ${r.setup} | ${r.rps.toFixed(0)} | ${r.p50Ms.toFixed(2)} | ${r.proxyUs.toFixed(0)} | ${r.setup === 'in process' ? '–' : r.redisUs.toFixed(0)} |`,
      ),
      '',
      `Resident memory: idle ${(idle / 2 ** 20).toFixed(0)} MiB; ${(perQueued / 1024).toFixed(1)} KiB per queued request (2,990 queued on 10 keys, no body).`,
    ].join('\n')
  } finally {
    client.disconnect()
    await redis.close()
    http.closeAllConnections()
    https.closeAllConnections()
    http.close()
    https.close()
    certs.remove()
  }
}

import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { send } from '../support/http.js'
import { spawnProxy, type ProxyProcess } from '../support/process.js'
import { basic } from '../support/proxy.js'
import { startConnectProxy, startHttpsUpstream, type ConnectProxy } from '../support/connect-proxy.js'
import { makeTestCertificates, type TestCertificates } from '../support/tls.js'
import { useRedis } from '../support/use-redis.js'

/**
 * HTTPS_PROXY honoured for the upstream (docs/configuration.md, "A forward proxy"): the real
 * process, a CONNECT-only proxy asking for credentials, and an API over TLS whose certificate a
 * test CA signed (trusted through NODE_EXTRA_CA_CERTS). Redis is reached directly.
 */
describe('upstream requests through a forward proxy (HTTPS_PROXY)', () => {
  const redis = useRedis()
  let certs: TestCertificates
  let api: Awaited<ReturnType<typeof startHttpsUpstream>>
  let forward: ConnectProxy
  let sluice: ProxyProcess
  const password = 'pr0xy-s3cret-pw'
  const proxyAuth = `Basic ${Buffer.from(`egress:${password}`).toString('base64')}`

  beforeAll(async () => {
    certs = makeTestCertificates()
    api = await startHttpsUpstream(certs)
    forward = await startConnectProxy({ requireAuthorization: proxyAuth })
    sluice = await spawnProxy({
      SLUICE_UPSTREAM: `${api.url}/v2`,
      SLUICE_REDIS_URL: redis.url,
      HTTPS_PROXY: `http://egress:${password}@127.0.0.1:${forward.port}`,
      NO_PROXY: 'localhost,.internal.example',
      NODE_EXTRA_CA_CERTS: certs.caFile,
    })
  })
  afterAll(async () => {
    await sluice?.stop()
    await forward?.close()
    await api?.close()
    certs?.remove()
  })

  it("every request reaches the API through the proxy's tunnel, with the proxy's credentials sent to the proxy only", async () => {
    for (let i = 0; i < 3; i++) {
      const answer = await send(sluice.url, `/v2/accounts/${i}`, { headers: { authorization: basic('1001') } })
      expect(answer.status).toBe(200)
      expect(answer.json()).toMatchObject({
        method: 'GET',
        url: `/v2/accounts/${i}`,
        host: `127.0.0.1:${api.port}`,
        authorization: basic('1001'),
      })
    }
    expect(api.seen).toHaveLength(3)
    expect(api.seen.every((r) => r.proxyAuthorization === undefined)).toBe(true)
    // Only the API's host was tunnelled to (keep-alive: one tunnel may carry all three); never Redis.
    expect(forward.tunnels.length).toBeGreaterThan(0)
    expect(new Set(forward.tunnels)).toEqual(new Set([`127.0.0.1:${api.port}`]))
    expect(forward.authorizations.every((a) => a === proxyAuth)).toBe(true)
  })

  it('the proxy is named in the start-up line and /status without its credentials, and no line holds them', async () => {
    const started = sluice
      .output()
      .split('\n')
      .find((l) => l.includes('"sluice listening"'))
    expect(started).toBeDefined()
    expect(JSON.parse(started!)).toMatchObject({
      forwardProxy: `127.0.0.1:${forward.port} (HTTPS_PROXY, with credentials)`,
    })
    const status = await (await fetch(`${sluice.adminUrl}/status`)).text()
    expect(status).toContain(`127.0.0.1:${forward.port}`)
    for (const text of [sluice.output(), status]) {
      expect(text).not.toContain(password)
      expect(text).not.toContain(proxyAuth.slice('Basic '.length))
    }
  })
})

describe('NO_PROXY exempts the upstream', () => {
  let certs: TestCertificates
  let api: Awaited<ReturnType<typeof startHttpsUpstream>>
  let forward: ConnectProxy
  let sluice: ProxyProcess

  beforeAll(async () => {
    certs = makeTestCertificates()
    api = await startHttpsUpstream(certs)
    forward = await startConnectProxy()
    sluice = await spawnProxy({
      SLUICE_UPSTREAM: `${api.url}/v2`,
      https_proxy: forward.url,
      no_proxy: `example.com, 127.0.0.1:${api.port}`,
      NODE_EXTRA_CA_CERTS: certs.caFile,
    })
  })
  afterAll(async () => {
    await sluice?.stop()
    await forward?.close()
    await api?.close()
    certs?.remove()
  })

  it('goes straight to the API, and the start-up line and /status say NO_PROXY exempted it', async () => {
    const answer = await send(sluice.url, '/v2/accounts/1', { headers: { authorization: basic('1001') } })
    expect(answer.status).toBe(200)
    expect(api.seen).toHaveLength(1)
    expect(forward.tunnels).toEqual([])
    expect(forward.authorizations).toEqual([])
    const started = sluice
      .output()
      .split('\n')
      .find((l) => l.includes('"sluice listening"'))
    expect(JSON.parse(started!)).toMatchObject({ forwardProxy: 'none (no_proxy exempts the upstream)' })
    expect(await (await fetch(`${sluice.adminUrl}/status`)).json()).toMatchObject({
      forwardProxy: 'none (no_proxy exempts the upstream)',
    })
  })
})

import { createServer, type AddressInfo, type Socket } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { send } from '../support/http.js'
import { freePort, spawnProxy, type ProxyProcess } from '../support/process.js'
import { basic } from '../support/proxy.js'
import { startConnectProxy, startHttpsUpstream, type ConnectProxy } from '../support/connect-proxy.js'
import { makeTestCertificates, type TestCertificates } from '../support/tls.js'

/** A forward proxy that is down, or that refuses the tunnel: a 502 naming it by host:port, never with its credentials. */
describe('a forward proxy that fails', () => {
  const password = 'pr0xy-s3cret-pw'
  let certs: TestCertificates
  let api: Awaited<ReturnType<typeof startHttpsUpstream>>
  let refusing: ConnectProxy
  const sluices: ProxyProcess[] = []

  beforeAll(async () => {
    certs = makeTestCertificates()
    api = await startHttpsUpstream(certs)
    refusing = await startConnectProxy({ requireAuthorization: 'Basic other' })
  })
  afterAll(async () => {
    for (const s of sluices) await s.stop()
    await refusing?.close()
    await api?.close()
    certs?.remove()
  })

  it('unreachable: 502 SLUICE_FORWARD_PROXY_UNREACHABLE naming host:port', async () => {
    const port = await freePort()
    const sluice = await spawnProxy({
      SLUICE_UPSTREAM: `${api.url}/v2`,
      HTTPS_PROXY: `http://egress:${password}@127.0.0.1:${port}`,
      NODE_EXTRA_CA_CERTS: certs.caFile,
    })
    sluices.push(sluice)
    const answer = await send(sluice.url, '/v2/accounts/1', { headers: { authorization: basic('1001') } })
    expect(answer.status).toBe(502)
    expect(answer.json()).toEqual([
      {
        code: 'SLUICE_FORWARD_PROXY_UNREACHABLE',
        message: `The forward proxy 127.0.0.1:${port} could not be reached: ECONNREFUSED`,
      },
    ])
    expect(api.seen).toHaveLength(0)
    expect(sluice.output()).not.toContain(password)
  })

  it('taking a connection but never answering CONNECT: the same 502 once upstreamTimeouts.connectMs is over', async () => {
    const held: Socket[] = []
    const silent = createServer((socket) => void held.push(socket))
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
    const { port } = silent.address() as AddressInfo
    try {
      const sluice = await spawnProxy({
        SLUICE_UPSTREAM: `${api.url}/v2`,
        HTTPS_PROXY: `http://127.0.0.1:${port}`,
        SLUICE_UPSTREAM_TIMEOUTS_CONNECT_MS: '1000',
        NODE_EXTRA_CA_CERTS: certs.caFile,
      })
      sluices.push(sluice)
      const answer = await send(sluice.url, '/v2/accounts/1', { headers: { authorization: basic('1001') } })
      expect(answer.status).toBe(502)
      expect(answer.json()).toEqual([
        {
          code: 'SLUICE_FORWARD_PROXY_UNREACHABLE',
          message: `The forward proxy 127.0.0.1:${port} could not be reached: no answer to CONNECT within upstreamTimeouts.connectMs`,
        },
      ])
      expect(held.length).toBeGreaterThan(0)
    } finally {
      for (const socket of held) socket.destroy()
      await new Promise((resolve) => silent.close(resolve))
    }
  })

  it('refusing the tunnel (407): 502 SLUICE_FORWARD_PROXY_REFUSED naming it and the API', async () => {
    const sluice = await spawnProxy({
      SLUICE_UPSTREAM: `${api.url}/v2`,
      HTTPS_PROXY: `http://egress:${password}@127.0.0.1:${refusing.port}`,
      NODE_EXTRA_CA_CERTS: certs.caFile,
    })
    sluices.push(sluice)
    const answer = await send(sluice.url, '/v2/accounts/1', { headers: { authorization: basic('1001') } })
    expect(answer.status).toBe(502)
    expect(answer.json()).toEqual([
      {
        code: 'SLUICE_FORWARD_PROXY_REFUSED',
        message: `The forward proxy 127.0.0.1:${refusing.port} refused the tunnel to 127.0.0.1:${api.port}: it answered 407`,
      },
    ])
    expect(refusing.authorizations).toEqual([`Basic ${Buffer.from(`egress:${password}`).toString('base64')}`])
    expect(api.seen).toHaveLength(0)
    expect(sluice.output()).not.toContain(password)
  })

  it('a proxy variable that is no http(s) URL stops the start naming the variable', async () => {
    const started = spawnProxy(
      { SLUICE_UPSTREAM: `${api.url}/v2`, HTTPS_PROXY: `socks5://egress:${password}@127.0.0.1:1080` },
      10_000,
    )
    // one that started anyway is stopped with the others
    void started.then(
      (s) => sluices.push(s),
      () => undefined,
    )
    await expect(started).rejects.toThrow(
      /exited with 78 before listening:\nsluice: HTTPS_PROXY \(from the environment\) has the scheme socks5; only http:\/\/ and https:\/\/ proxies are supported/,
    )
  })
})

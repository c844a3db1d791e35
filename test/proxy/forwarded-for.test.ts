import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { send } from '../support/http.js'
import { startProxy, type RunningProxy } from '../support/proxy.js'
import { startSim, type Sim } from '../support/sim.js'

interface Echo {
  headers: Record<string, string>
}

const CLAIMS = { 'x-forwarded-for': '10.9.9.9', forwarded: 'for=10.9.9.9;proto=https', 'x-real-ip': '10.9.9.9' }

let sim: Sim
let untrusting: RunningProxy
let trusting: RunningProxy
beforeAll(async () => {
  sim = await startSim({})
  untrusting = await startProxy({ upstream: sim.apiUrl })
  trusting = await startProxy({ upstream: sim.apiUrl, trustProxy: true })
})
afterAll(async () => {
  await untrusting.close()
  await trusting.close()
  await sim.close()
})

const seenUpstream = async (proxy: RunningProxy, headers: Record<string, string>): Promise<Record<string, string>> =>
  (await send(proxy.url, '/v2/campaigns', { headers })).json<Echo>().headers

describe('X-Forwarded-For, Forwarded and X-Real-IP', () => {
  it('X-Forwarded-For gets the client address appended, or is set to it', async () => {
    expect((await seenUpstream(untrusting, {}))['x-forwarded-for']).toBe('127.0.0.1')
    expect((await seenUpstream(untrusting, { 'x-forwarded-for': '10.1.1.1, 10.2.2.2' }))['x-forwarded-for']).toBe(
      '10.1.1.1, 10.2.2.2, 127.0.0.1',
    )
  })

  it('by default Forwarded and X-Real-IP from a client are dropped: a client cannot claim another address', async () => {
    const seen = await seenUpstream(untrusting, CLAIMS)
    expect(seen).not.toHaveProperty('forwarded')
    expect(seen).not.toHaveProperty('x-real-ip')
    expect(seen['x-forwarded-for']).toBe('10.9.9.9, 127.0.0.1')
  })

  it('with trustProxy they pass on as the trusted proxy in front wrote them', async () => {
    const seen = await seenUpstream(trusting, CLAIMS)
    expect(seen).toMatchObject({
      forwarded: CLAIMS.forwarded,
      'x-real-ip': '10.9.9.9',
      'x-forwarded-for': '10.9.9.9, 127.0.0.1',
    })
  })
})

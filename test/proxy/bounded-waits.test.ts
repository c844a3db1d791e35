import { describe, expect, it } from 'vitest'
import { basicAuth, keyStats } from '../support/sim.js'
import { statusOf, useSimAndProxy } from '../support/proxy.js'
import { send, until } from '../support/http.js'

const SEARCH = 'POST /accounts/search'
const search = (org: string, extra: Record<string, string> = {}) => ({
  method: 'POST',
  headers: { authorization: basicAuth(org), ...extra },
  body: '{}',
})

describe('waits are bounded: a full queue or a passed deadline is a 503 with Retry-After', () => {
  const stack = useSimAndProxy({}, { queue: { maxLength: 2, maxWaitMs: 300 } })

  it('past the maximum wait: 503 SLUICE_QUEUE_TIMEOUT, and the request never reaches the API', async () => {
    const held = send(stack.proxy.url, '/v2/accounts/search', search('org1', { 'x-sim-delay-ms': '1500' }))
    await until(() => keyStats(stack.sim, 'org1', SEARCH)?.inProgress === 1, 'first request upstream')
    const late = await send(stack.proxy.url, '/v2/accounts/search', search('org1'))
    expect(late.status).toBe(503)
    expect(Number(late.headers['retry-after'])).toBeGreaterThanOrEqual(1)
    expect(late.headers['content-type']).toBe('application/json; charset=utf-8')
    const [error] = late.json<[{ code: string; message: string }]>()
    expect(error.code).toBe('SLUICE_QUEUE_TIMEOUT')
    expect(error.message).toMatch(
      /^Waited \d+ ms for a free slot on POST \/accounts\/search \(instance org1\) without getting one; try again later$/,
    )
    expect(keyStats(stack.sim, 'org1', SEARCH)?.requests).toBe(1)
    expect((await held).status).toBe(200)
  })

  it('a client may ask for a shorter wait; 0 means "only if free now"', async () => {
    const held = send(stack.proxy.url, '/v2/accounts/search', search('org2', { 'x-sim-delay-ms': '800' }))
    await until(() => keyStats(stack.sim, 'org2', SEARCH)?.inProgress === 1, 'first request upstream')
    const impatient = await send(stack.proxy.url, '/v2/accounts/search', search('org2', { 'x-sluice-max-wait': '0' }))
    expect(impatient.status).toBe(503)
    expect(impatient.json<[{ code: string }]>()[0].code).toBe('SLUICE_QUEUE_TIMEOUT')
    const line = stack.proxy.logs.findLast((l) => l.msg === 'request' && l.instance === 'org2')
    expect(line).toMatchObject({ outcome: 'queue_timeout', status: 503 })
    // The control header is sluice's own: it is never forwarded.
    expect((await held).json<{ headers: Record<string, string> }>().headers).not.toHaveProperty('x-sluice-max-wait')
  })

  it('past the maximum queue length: 503 SLUICE_QUEUE_FULL at once', async () => {
    const held = send(stack.proxy.url, '/v2/accounts/search', search('org3', { 'x-sim-delay-ms': '2000' }))
    await until(() => keyStats(stack.sim, 'org3', SEARCH)?.inProgress === 1, 'first request upstream')
    const waiting = [
      send(stack.proxy.url, '/v2/accounts/search', search('org3', { 'x-sluice-max-wait': '60' })),
      send(stack.proxy.url, '/v2/accounts/search', search('org3')),
    ]
    await until(async () => (await statusOf(stack.proxy, 'org3', SEARCH))?.queued === 2, 'two waiting')
    const full = await send(stack.proxy.url, '/v2/accounts/search', search('org3'))
    expect(full.status).toBe(503)
    expect(Number(full.headers['retry-after'])).toBeGreaterThanOrEqual(1)
    expect(full.json()).toEqual([
      {
        code: 'SLUICE_QUEUE_FULL',
        message: 'The queue for POST /accounts/search (instance org3) is full (2 waiting); try again later',
      },
    ])
    await Promise.all([held, ...waiting])
  })
})

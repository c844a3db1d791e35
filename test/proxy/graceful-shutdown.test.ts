import { once } from 'node:events'
import { describe, expect, it } from 'vitest'
import { basicAuth, keyStats, withSim } from '../support/sim.js'
import { spawnProxy } from '../support/process.js'
import { send, until } from '../support/http.js'

describe('SIGTERM: stop accepting, 503 to the queued, let the in-flight finish, exit 0', () => {
  it('drains a real process', async () => {
    const sim = await withSim()
    const proxy = await spawnProxy({ SLUICE_UPSTREAM: sim.apiUrl, SLUICE_SHUTDOWN_GRACE_MS: '10000' })
    const search = (extra: Record<string, string> = {}) => ({ method: 'POST', headers: { authorization: basicAuth('org1'), ...extra }, body: '{}' })

    const inFlight = send(proxy.url, '/v2/accounts/search', search({ 'x-sim-delay-ms': '1500' }))
    await until(() => keyStats(sim, 'org1', 'POST /accounts/search')?.inProgress === 1, 'request upstream')
    const queued = [send(proxy.url, '/v2/accounts/search', search()), send(proxy.url, '/v2/accounts/search', search())]
    await until(async () => {
      const status = (await (await fetch(`${proxy.adminUrl}/status`)).json()) as { keys: { queued: number }[] }
      return status.keys[0]?.queued === 2
    }, 'two queued')

    const exited = once(proxy.child, 'exit') as Promise<[number | null]>
    proxy.child.kill('SIGTERM')
    for (const answer of await Promise.all(queued)) {
      expect(answer.status).toBe(503)
      expect(answer.headers['retry-after']).toBe('1')
      expect(answer.json()).toEqual([{ code: 'SLUICE_UNAVAILABLE', message: 'sluice is shutting down' }])
    }
    const ready = await fetch(`${proxy.adminUrl}/readyz`)
    expect(ready.status).toBe(503)
    expect(await ready.json()).toMatchObject({ ready: false, closing: true })

    expect((await inFlight).status).toBe(200)
    const [code] = await exited
    expect(code).toBe(0)
    expect(keyStats(sim, 'org1', 'POST /accounts/search')).toMatchObject({ requests: 1, inProgress: 0 })
    await expect(send(proxy.url, '/v2/campaigns')).rejects.toThrow(/ECONNREFUSED/)
  })
})

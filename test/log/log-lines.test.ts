import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startSim, type Sim } from '../../src/sim/index.js'
import { send } from '../support/http.js'
import { spawnProxy } from '../support/process.js'
import { basic } from '../support/proxy.js'

describe('log lines of a real process (stdout, written once per event-loop turn)', () => {
  let sim: Sim
  beforeAll(async () => {
    sim = await startSim()
  })
  afterAll(async () => {
    await sim.close()
  })

  it('every request has its whole line, in order with the start and shutdown lines, and none is lost at shutdown', async () => {
    const proxy = await spawnProxy({ SLUICE_UPSTREAM: sim.apiUrl })
    // bursts of concurrent requests, so one turn finishes several of them
    const ids: string[] = []
    for (let burst = 0; burst < 5; burst++) {
      const batch = Array.from({ length: 40 }, (_, i) => `b${burst}-r${i}`)
      ids.push(...batch)
      const answers = await Promise.all(
        batch.map((id) =>
          send(proxy.url, '/v2/campaigns', {
            headers: { authorization: basic(`org${id.length}`), 'x-request-id': id },
          }),
        ),
      )
      expect(answers.every((a) => a.status === 200)).toBe(true)
    }
    // SIGTERM right after the last answers: their lines may still be pending when shutdown begins
    expect(await proxy.stop()).toBe(0)
    const lines = proxy
      .output()
      .split('\n')
      .filter((l) => l !== '')
    const parsed = lines.map((l) => JSON.parse(l) as Record<string, unknown>) // throws on a torn or merged line
    const requestIds = parsed.filter((l) => l.msg === 'request').map((l) => l.reqId)
    expect(requestIds.sort()).toEqual([...ids].sort())
    const msgs = parsed.map((l) => l.msg)
    expect(msgs.indexOf('sluice listening')).toBeLessThan(msgs.indexOf('request'))
    expect(msgs.slice(-2)).toEqual(['shutting down', 'sluice stopped'])
  })
})

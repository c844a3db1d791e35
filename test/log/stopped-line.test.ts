import { describe, expect, it } from 'vitest'
import { startProxy } from '../support/proxy.js'
import { startSim } from '../support/sim.js'

// README "Admin port, metrics and logs": a shutdown ends with one line saying sluice stopped, after
// every request, the admin port and the limiter are closed: the log alone tells a clean stop from a kill.

describe('the last line at shutdown', () => {
  it('is "sluice stopped", at info, after everything else', async () => {
    const sim = await startSim()
    const proxy = await startProxy({ upstream: sim.apiUrl })
    await fetch(`${proxy.url}/v2/accounts/1`, { headers: { authorization: `Basic ${btoa('1001:k')}` } })
    await proxy.close()
    await sim.close()
    const last = proxy.logs[proxy.logs.length - 1]!
    expect([last.level, last.msg, typeof last.uptimeSeconds]).toEqual([30, 'sluice stopped', 'number'])
    expect(proxy.logs.filter((l) => l.msg === 'sluice stopped')).toHaveLength(1)
  })
})

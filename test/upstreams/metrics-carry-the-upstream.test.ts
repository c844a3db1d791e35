import { describe, expect, it } from 'vitest'
import { parsePromText, valueOf } from '../metrics/prom-text.js'
import { basicAuth, keyStats } from '../support/sim.js'
import { useTrialStack } from './trial-stack.js'
import { send, until } from '../support/http.js'

/*
 * With more upstreams than the CRM's, per-key series carry an `upstream` label (docs/observability.md,
 * "Several upstreams"): one org id on two upstreams is two series, its org label the org id itself.
 */

const stack = useTrialStack()

const scrape = async () => parsePromText(await (await fetch(`${stack.proxy.adminUrl}/metrics`)).text())

describe('metrics carry the upstream', () => {
  it('in-flight gauges and request counts: one series per upstream for one org id', async () => {
    const held = (gate: string) => ({
      method: 'POST',
      headers: { authorization: basicAuth('1001'), 'x-sim-hold': gate },
      body: '{}',
    })
    const p = send(stack.proxy.url, '/v2/accounts/search', held('m'))
    const t = send(stack.proxy.url, '/trial/v2/accounts/search', held('m'))
    await until(
      () =>
        keyStats(stack.production, '1001', 'POST /accounts/search')?.inProgress === 1 &&
        keyStats(stack.trial, '1001', 'POST /accounts/search')?.inProgress === 1,
      'both in progress',
    )

    const during = await scrape()
    const key = { endpoint: 'POST /accounts/search', org: '1001' }
    expect(valueOf(during, 'sluice_permits_in_flight', { ...key, upstream: 'neon' })).toBe(1)
    expect(valueOf(during, 'sluice_permits_in_flight', { ...key, upstream: 'trial' })).toBe(1)

    stack.production.open('m')
    stack.trial.open('m')
    await Promise.all([p, t])
    const after = await scrape()
    const forwarded = { ...key, code: '200', outcome: 'forwarded' }
    expect(valueOf(after, 'sluice_requests_total', { ...forwarded, upstream: 'neon' })).toBe(1)
    expect(valueOf(after, 'sluice_requests_total', { ...forwarded, upstream: 'trial' })).toBe(1)
    expect(valueOf(after, 'sluice_upstream_429_total', { ...key, upstream: 'trial' })).toBe(0)
  })
})

import { describe, expect, it } from 'vitest'
import { basicAuth, keyStats } from '../support/sim.js'
import { useTrialStack } from './trial-stack.js'
import { send, until } from '../support/http.js'

/*
 * Two upstreams never share answers (docs/reuse.md, "The key"; docs/upstreams.md, "Keys"): the same
 * read of the same organisation id on production and on trial is two calls, each to its own host.
 */

const stack = useTrialStack(() => ({ coalesce: { enabled: true } }))

describe('reuse is per upstream', () => {
  it('an identical read in flight on production does not answer the same read on trial', async () => {
    const read = (gate: string) => ({ headers: { authorization: basicAuth('1001'), 'x-sim-hold': gate } })
    const first = send(stack.proxy.url, '/v2/accounts/7/contacts', read('same'))
    await until(
      () => keyStats(stack.production, '1001', 'GET /accounts/{id}/contacts')?.inProgress === 1,
      'production to have the read',
    )
    // the same read on production now would follow the call in flight (coalesced); on trial it must not
    const onTrial = send(stack.proxy.url, '/trial/v2/accounts/7/contacts', read('same'))
    await until(
      () => keyStats(stack.trial, '1001', 'GET /accounts/{id}/contacts')?.inProgress === 1,
      'trial to get its own call',
    )
    stack.production.open('same')
    stack.trial.open('same')
    const [p, t] = await Promise.all([first, onTrial])
    expect([p.status, t.status]).toEqual([200, 200])
    expect(p.headers['x-sluice-coalesced']).toBeUndefined()
    expect(t.headers['x-sluice-coalesced']).toBeUndefined()
    expect(keyStats(stack.production, '1001', 'GET /accounts/{id}/contacts')?.requests).toBe(1)
    expect(keyStats(stack.trial, '1001', 'GET /accounts/{id}/contacts')?.requests).toBe(1)
  })
})

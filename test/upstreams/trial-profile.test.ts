import { describe, expect, it } from 'vitest'
import { adminJson } from '../support/proxy.js'
import { basicAuth, keyStats } from '../support/sim.js'
import { useTrialStack } from './trial-stack.js'
import { send, until } from '../support/http.js'

/*
 * The CRM's trial environment is one entry with the built-in profile (docs/upstreams.md): the same
 * catalog and limits, its own host, and its own keys, so the same organisation id on production and
 * on trial is two sets of permits.
 */

interface Key {
  upstream?: string
  instance: string
  endpoint: string
  inFlight: number
  queued: number
  limit: number
}

const stack = useTrialStack(() => ({ requestLog: true }))

const search = (gate: string): { method: string; headers: Record<string, string>; body: string } => ({
  method: 'POST',
  headers: { authorization: basicAuth('1001'), 'x-sim-hold': gate },
  body: '{}',
})

describe('the trial environment as the neon-v2 profile', () => {
  it('one org id on production and on trial holds a permit on each at once; /status names the upstream', async () => {
    // POST /accounts/search allows 1 in progress: shared keys would queue the second request.
    const onProduction = send(stack.proxy.url, '/v2/accounts/search', search('p'))
    const onTrial = send(stack.proxy.url, '/trial/v2/accounts/search', search('t'))
    await until(
      () =>
        keyStats(stack.production, '1001', 'POST /accounts/search')?.inProgress === 1 &&
        keyStats(stack.trial, '1001', 'POST /accounts/search')?.inProgress === 1,
      'both to be in progress',
    )

    const { keys } = await adminJson<{ keys: Key[] }>(stack.proxy, '/status')
    const search1001 = keys
      .filter((k) => k.endpoint === 'POST /accounts/search')
      .sort((a, b) => (a.upstream ?? '').localeCompare(b.upstream ?? ''))
    expect(search1001).toMatchObject([
      { instance: '1001', inFlight: 1, queued: 0, limit: 1 },
      { upstream: 'trial', instance: '1001', inFlight: 1, queued: 0, limit: 1 },
    ])
    expect(search1001[0]).not.toHaveProperty('upstream')

    stack.production.open('p')
    stack.trial.open('t')
    const [p, t] = await Promise.all([onProduction, onTrial])
    expect(p.status).toBe(200)
    expect(t.status).toBe(200)
    // the trial host got the path below its own root, as production does
    expect(t.json()).toMatchObject({ path: '/accounts/search', instance: '1001' })
    const line = stack.proxy.logs.find((l) => l.msg === 'request' && l.upstream === 'trial')
    expect(line).toMatchObject({ instance: '1001', endpoint: 'POST /accounts/search', status: 200 })
  })

  it('the trial prefix has the CRM catalog and limits: a second search on trial waits for the first', async () => {
    const first = send(stack.proxy.url, '/trial/v2/accounts/search', search('t2'))
    await until(
      () => keyStats(stack.trial, '1001', 'POST /accounts/search')?.inProgress === 1,
      'the first to be in progress',
    )
    const second = send(stack.proxy.url, '/trial/v2/accounts/search', search('t2'))
    await until(
      async () =>
        (await adminJson<{ keys: Key[] }>(stack.proxy, '/status')).keys.some(
          (k) => k.upstream === 'trial' && k.queued === 1,
        ),
      'the second to queue',
    )
    stack.trial.open('t2')
    expect((await first).status).toBe(200)
    expect((await second).status).toBe(200)
    expect(keyStats(stack.trial, '1001', 'POST /accounts/search')).toMatchObject({ maxInProgress: 1, rejected429: 0 })
  })
})

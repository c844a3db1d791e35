import { describe, expect, it } from 'vitest'
import { throttleRule } from '../../src/upstreams/throttle.js'
import { resolveUpstreams } from '../../src/upstreams/index.js'
import { settingsSchema } from '../../src/config/schema.js'

/** "Is this answer a throttle?" is one function per upstream (docs/upstreams.md, "Over the limit"). */
describe('an upstream throttle rule', () => {
  it('takes a 429 always, and a status of retryWithRetryAfter only with Retry-After', () => {
    const github = throttleRule([403])
    expect(github(429, {})).toBe(true)
    expect(github(403, { 'retry-after': '1' })).toBe(true)
    // a 403 without Retry-After refuses the token: the API's answer, passed on
    expect(github(403, {})).toBe(false)
    expect(github(503, { 'retry-after': '1' })).toBe(false)
    const crm = throttleRule([])
    expect([crm(429, {}), crm(403, { 'retry-after': '1' }), crm(200, {})]).toEqual([true, false, false])
  })

  it("is the neon-v2 profile's for the CRM's own upstream, as for any upstream of that profile", () => {
    const settings = settingsSchema.parse({
      upstreams: [
        { name: 'trial', prefix: '/trial/v2', url: 'https://trial.neoncrm.com/v2', profile: 'neon-v2' },
        { name: 'github', prefix: '/github', url: 'https://api.github.com', profile: 'github-rest' },
      ],
    })
    const [own, trial, github] = resolveUpstreams(settings)
    const answers: [number, Record<string, string>][] = [
      [429, {}],
      [403, { 'retry-after': '1' }],
      [403, {}],
    ]
    const verdicts = (p: typeof own | undefined) => answers.map(([status, headers]) => p?.throttled(status, headers))
    expect(verdicts(own)).toEqual([true, false, false])
    expect(verdicts(trial)).toEqual(verdicts(own))
    expect(verdicts(github)).toEqual([true, true, false])
    const { throttled: _a, name: _b, prefix: _c, url: _d, ...ownRest } = own
    const { throttled: _e, name: _f, prefix: _g, url: _h, ...trialRest } = trial!
    expect(trialRest).toEqual(ownRest)
  })
})

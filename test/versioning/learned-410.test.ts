import { describe, expect, it } from 'vitest'
import { answerOf, PLAIN, versioningAt } from './helpers.js'

const DAY = '2026-10-01T10:00:00Z' // 2.10 and 2.11 are alive by the calendar

describe('an upstream 410 for a version the calendar thinks alive', () => {
  it('retires it from then on: the next request meets the policy (reject), and it is logged loudly and counted', async () => {
    const { versioning, logs, registry } = versioningAt(DAY)
    const first = versioning.decide('2.10', PLAIN)
    expect(first.upstream).toBe('2.10')
    versioning.observeUpstream(first, 410)

    expect(answerOf(() => versioning.decide('2.10', PLAIN))).toEqual({
      code: 'SLUICE_VERSION_RETIRED',
      statusCode: 410,
      message: 'API version 2.10 is retired (the API answered 410 for it on 2026-10-01); move to 2.11 or later (the latest is 2.12)',
    })
    const error = logs.find((l) => l.level === 'error')
    expect(error?.msg).toBe(
      'the upstream answered 410 for API version 2.10, which the calendar says is supported: treating it as retired from now on (on this replica, until restart); add "retired: 2026-10-01" for it to the calendar',
    )
    expect(error?.obj).toMatchObject({ version: '2.10', calendarState: 'supported' })
    expect(versioning.snapshot().versions.find((v) => v.version === '2.10')).toMatchObject({
      state: 'retired',
      retiresOn: '2026-10-01',
      retirementSource: 'learned',
      action: 'reject',
    })
    const learned = await registry.getSingleMetric('sluice_version_retirements_learned_total')!.get()
    expect(learned.values).toEqual([{ labels: { version: '2.10' }, value: 1 }])
  })

  it('under rewrite, the next request goes to the next version; a 410 for that one moves on again', () => {
    const { versioning } = versioningAt(DAY, { retired: 'rewrite' })
    versioning.observeUpstream(versioning.decide('2.10', PLAIN), 410)
    const rewritten = versioning.decide('2.10', PLAIN)
    expect(rewritten).toMatchObject({ upstream: '2.11', rewrittenFrom: '2.10' })
    expect(rewritten.responseHeaders['x-sluice-version-notice']).toBe(
      'API version 2.10 is retired (the API answered 410 for it on 2026-10-01); this request was sent as 2.11',
    )
    versioning.observeUpstream(rewritten, 410)
    expect(versioning.decide('2.10', PLAIN).upstream).toBe('2.12')
    expect(versioning.decide('2.11', PLAIN).upstream).toBe('2.12')
  })

  it('a version retiring early (410 before its calendar date) is learned too', () => {
    const { versioning } = versioningAt('2026-09-01T10:00:00Z')
    versioning.observeUpstream(versioning.decide('2.9', PLAIN), 410)
    expect(answerOf(() => versioning.decide('2.9', PLAIN)).statusCode).toBe(410)
  })

  it('an unknown version is learned as well (2.2 is not in the calendar)', () => {
    const { versioning } = versioningAt(DAY)
    versioning.observeUpstream(versioning.decide('2.2', PLAIN), 410)
    expect(answerOf(() => versioning.decide('2.2', PLAIN)).message).toBe(
      'API version 2.2 is retired (the API answered 410 for it on 2026-10-01); move to 2.5 or later (the latest is 2.12)',
    )
  })

  it('other statuses, requests without a version, and learnRetirements: false change nothing', () => {
    const { versioning, logs } = versioningAt(DAY)
    versioning.observeUpstream(versioning.decide('2.11', PLAIN), 404)
    versioning.observeUpstream(versioning.decide('2.11', PLAIN), 400)
    versioning.observeUpstream(versioning.decide(undefined, PLAIN), 410)
    expect(versioning.decide('2.11', PLAIN).upstream).toBe('2.11')
    expect(logs.filter((l) => l.level === 'error')).toEqual([])

    const off = versioningAt(DAY, { learnRetirements: false })
    off.versioning.observeUpstream(off.versioning.decide('2.11', PLAIN), 410)
    expect(off.versioning.decide('2.11', PLAIN).upstream).toBe('2.11')
  })

  it('a second 410 for an already learned version is not counted again', async () => {
    const { versioning, registry } = versioningAt(DAY, { retired: 'rewrite' })
    const d = versioning.decide('2.11', PLAIN)
    versioning.observeUpstream(d, 410)
    versioning.observeUpstream(d, 410) // a request that was in flight at the same time
    const learned = await registry.getSingleMetric('sluice_version_retirements_learned_total')!.get()
    expect(learned.values).toEqual([{ labels: { version: '2.11' }, value: 1 }])
  })
})

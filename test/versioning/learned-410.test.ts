import { describe, expect, it } from 'vitest'
import { versionSettingsSchema } from '../../src/versioning/settings.js'
import type { Versioning } from '../../src/versioning/index.js'
import { answerOf, PLAIN, versioningAt } from './helpers.js'

const DAY = '2026-10-01T10:00:00Z' // 2.10 and 2.11 are alive by the calendar, 2.12 is the newest

const CONTACTS = 'GET /accounts/{id}/contacts'
const ACCOUNT = 'PUT /accounts/{id}'
const DONATIONS = 'GET /donations/{id}'

/** A request for `version` (as decided today) answered `status` by the upstream, for `instance` on `endpoint`. */
function answered(v: Versioning, version: string, status: number, instance: string, endpoint = CONTACTS): void {
  v.observeUpstream(v.decide(version, { id: endpoint }), status, { instance, endpoint })
}

/** The evidence the defaults ask for: three 410s, two instances, two endpoints. */
function enoughEvidence(v: Versioning, version: string): void {
  answered(v, version, 410, 'org1', CONTACTS)
  answered(v, version, 410, 'org2', ACCOUNT)
  answered(v, version, 410, 'org1', DONATIONS)
}

const forwardedAs = (v: Versioning, version: string): string | undefined => v.decide(version, PLAIN).upstream

describe('a retired version is learned from upstream 410s only on evidence that it is the version, not the resource', () => {
  it('the poisoning: one organisation deleting records (410 Gone) on one endpoint retires nothing, however often', () => {
    const { versioning, logs } = versioningAt(DAY, { retired: 'rewrite' })
    for (let i = 0; i < 20; i++) answered(versioning, '2.10', 410, 'anyorg', ACCOUNT)
    expect(forwardedAs(versioning, '2.10')).toBe('2.10')
    expect(logs.filter((l) => l.level === 'error')).toEqual([])
    expect(versioning.snapshot().versions.find((v) => v.version === '2.10')).toMatchObject({
      state: 'supported',
      recent410s: 20,
    })
  })

  it('the curl pair: 410s for the newest version never retire it, so another organisation is not answered 410', () => {
    const { versioning } = versioningAt(DAY, { retired: 'rewrite' })
    // `curl -X PUT …/accounts/9 -u anyorg:x -H 'NEON-API-VERSION: 2.12' -H 'x-sim-status: 410'`, from many organisations
    for (const org of ['anyorg', 'org2', 'org3', 'org4']) {
      answered(versioning, '2.12', 410, org, ACCOUNT)
      answered(versioning, '2.12', 410, org, DONATIONS)
    }
    // `curl …/accounts/1/contacts -u otherorg:y -H 'NEON-API-VERSION: 2.12'`
    expect(forwardedAs(versioning, '2.12')).toBe('2.12')
    expect(versioning.snapshot().versions.find((v) => v.version === '2.12')).toMatchObject({
      state: 'supported',
      action: 'pass',
    })
  })

  it('the cascade seen before (410s for 2.12, 2.11, 2.10 under rewrite → everything told to "move to 2.6") cannot happen', () => {
    const { versioning } = versioningAt(DAY, { retired: 'rewrite' })
    for (const version of ['2.12', '2.11', '2.10']) answered(versioning, version, 410, 'anyorg', ACCOUNT)
    for (const version of ['2.10', '2.11', '2.12']) expect(forwardedAs(versioning, version)).toBe(version)
    // Even with full evidence against 2.11 and 2.10, requests only ever move up, to 2.12.
    enoughEvidence(versioning, '2.11')
    enoughEvidence(versioning, '2.10')
    expect(forwardedAs(versioning, '2.10')).toBe('2.12')
    expect(forwardedAs(versioning, '2.11')).toBe('2.12')
    expect(forwardedAs(versioning, '2.12')).toBe('2.12')
  })

  it('three 410s from two instances on two endpoints are enough: logged with the evidence, counted, shown on /status', async () => {
    const { versioning, logs, registry } = versioningAt(DAY)
    enoughEvidence(versioning, '2.10')
    expect(answerOf(() => versioning.decide('2.10', PLAIN))).toEqual({
      code: 'SLUICE_VERSION_RETIRED',
      statusCode: 410,
      message:
        'API version 2.10 is retired (the API answered 410 for it on 2026-10-01); move to 2.11 or later (the latest is 2.12)',
    })
    const error = logs.find((l) => l.level === 'error')
    expect(error?.msg).toBe(
      'the upstream answered 410 for API version 2.10, which the calendar says is supported, 3 times from 2 instances on 3 endpoints with no success in between: treating it as retired (on this replica) until 2026-10-02T10:00:00.000Z unless confirmed; add "retired: 2026-10-01" for it to the calendar',
    )
    expect(error?.obj).toEqual({
      version: '2.10',
      calendarState: 'supported',
      calendarRetires: undefined,
      evidence: {
        answers: 3,
        instances: ['org1', 'org2'],
        endpoints: [CONTACTS, ACCOUNT, DONATIONS],
        first: '2026-10-01T10:00:00.000Z',
        last: '2026-10-01T10:00:00.000Z',
      },
      expires: '2026-10-02T10:00:00.000Z',
    })
    expect(versioning.snapshot().versions.find((v) => v.version === '2.10')).toMatchObject({
      state: 'retired',
      retiresOn: '2026-10-01',
      retirementSource: 'learned',
      action: 'reject',
      learned: {
        answers: 3,
        instances: 2,
        endpoints: [CONTACTS, ACCOUNT, DONATIONS],
        expires: '2026-10-02T10:00:00.000Z',
        confirmations: 0,
      },
    })
    const learned = await registry.getSingleMetric('sluice_version_retirements_learned_total')!.get()
    expect(learned.values).toEqual([{ labels: { version: '2.10' }, value: 1 }])
  })

  it.each([
    [
      'two 410s',
      [
        ['org1', CONTACTS],
        ['org2', ACCOUNT],
      ],
    ],
    [
      'one instance',
      [
        ['org1', CONTACTS],
        ['org1', ACCOUNT],
        ['org1', DONATIONS],
      ],
    ],
    [
      'one endpoint',
      [
        ['org1', CONTACTS],
        ['org2', CONTACTS],
        ['org3', CONTACTS],
      ],
    ],
  ])('%s are not enough', (_what, answers) => {
    const { versioning } = versioningAt(DAY)
    for (const [org, endpoint] of answers as [string, string][]) answered(versioning, '2.10', 410, org, endpoint)
    expect(forwardedAs(versioning, '2.10')).toBe('2.10')
  })

  it('a 2xx for the version in between starts the count again (the 410s were about resources)', () => {
    const { versioning } = versioningAt(DAY)
    answered(versioning, '2.10', 410, 'org1', CONTACTS)
    answered(versioning, '2.10', 410, 'org2', ACCOUNT)
    answered(versioning, '2.10', 200, 'org3', CONTACTS)
    answered(versioning, '2.10', 410, 'org1', DONATIONS)
    expect(forwardedAs(versioning, '2.10')).toBe('2.10')
    // a success for another version, or a 404, changes nothing
    answered(versioning, '2.10', 410, 'org2', CONTACTS)
    answered(versioning, '2.11', 200, 'org3', CONTACTS)
    answered(versioning, '2.10', 404, 'org3', CONTACTS)
    answered(versioning, '2.10', 410, 'org3', ACCOUNT)
    expect(answerOf(() => versioning.decide('2.10', PLAIN)).statusCode).toBe(410)
  })

  it('410s older than the window do not count', () => {
    const h = versioningAt(DAY, { learnWindowMs: 60_000 })
    answered(h.versioning, '2.10', 410, 'org1', CONTACTS)
    answered(h.versioning, '2.10', 410, 'org2', ACCOUNT)
    h.setNow('2026-10-01T10:01:00.001Z')
    answered(h.versioning, '2.10', 410, 'org3', DONATIONS)
    expect(forwardedAs(h.versioning, '2.10')).toBe('2.10')
    answered(h.versioning, '2.10', 410, 'org1', ACCOUNT)
    answered(h.versioning, '2.10', 410, 'org4', CONTACTS)
    expect(answerOf(() => h.versioning.decide('2.10', PLAIN)).statusCode).toBe(410)
  })

  it('the rules are settings', () => {
    const { versioning } = versioningAt(DAY, { learnMinAnswers: 1, learnMinInstances: 1, learnMinEndpoints: 1 })
    answered(versioning, '2.10', 410, 'org1', CONTACTS)
    expect(answerOf(() => versioning.decide('2.10', PLAIN)).statusCode).toBe(410)
  })

  it('a learned retirement lapses after learnExpiryMs (default 24 h) unless a 410 confirms it', () => {
    const h = versioningAt(DAY, { retired: 'rewrite' })
    enoughEvidence(h.versioning, '2.10')
    const sentBefore = h.versioning.decide('2.11', PLAIN) // in flight while 2.11 is learned
    enoughEvidence(h.versioning, '2.11')
    expect(forwardedAs(h.versioning, '2.10')).toBe('2.12')

    // 2.11 is confirmed 20 h later by a 410 for a request sent as 2.11; 2.10 is not.
    h.setNow('2026-10-02T06:00:00Z')
    h.versioning.observeUpstream(sentBefore, 410, { instance: 'org5', endpoint: CONTACTS })
    h.setNow('2026-10-02T10:00:00Z')
    expect(forwardedAs(h.versioning, '2.10')).toBe('2.10')
    expect(forwardedAs(h.versioning, '2.11')).toBe('2.12')
    expect(h.versioning.snapshot().versions.find((v) => v.version === '2.11')?.learned).toMatchObject({
      confirmations: 1,
      expires: '2026-10-03T06:00:00.000Z',
    })
    expect(
      h.logs.find(
        (l) =>
          l.level === 'warn' &&
          l.msg.startsWith('the retirement of API version 2.10 learned from upstream 410s has lapsed'),
      ),
    ).toBeDefined()
    h.setNow('2026-10-03T06:00:00Z')
    expect(forwardedAs(h.versioning, '2.11')).toBe('2.11')
  })

  it('never moves a request to an older version: no rewrite map back, and no "move to" an older one', () => {
    const refused = versionSettingsSchema.safeParse({
      retired: 'rewrite',
      rewriteTo: 'map',
      rewriteMap: { '2.11': '2.10' },
    })
    expect(refused.success).toBe(false)
    expect(refused.error?.issues[0]).toMatchObject({
      path: ['rewriteMap', '2.11'],
      message: 'maps 2.11 to 2.10, which is not newer; a rewrite only moves to a newer version',
    })
    // 2.6 is alive and older than 2.10: never a target, never named.
    const { versioning } = versioningAt(DAY, {
      retired: 'rewrite',
      rewriteTo: 'latest',
      learnMinAnswers: 1,
      learnMinInstances: 1,
      learnMinEndpoints: 1,
    })
    answered(versioning, '2.11', 410, 'org1')
    expect(forwardedAs(versioning, '2.11')).toBe('2.12')
    expect(forwardedAs(versioning, '2.10')).toBe('2.10')
  })

  it('other statuses, requests without a version, and learnRetirements: false change nothing', () => {
    const { versioning, logs } = versioningAt(DAY, { learnMinAnswers: 1, learnMinInstances: 1, learnMinEndpoints: 1 })
    answered(versioning, '2.11', 404, 'org1')
    answered(versioning, '2.11', 400, 'org1')
    versioning.observeUpstream(versioning.decide(undefined, PLAIN), 410, { instance: 'org1', endpoint: CONTACTS })
    expect(forwardedAs(versioning, '2.11')).toBe('2.11')
    expect(logs.filter((l) => l.level === 'error')).toEqual([])

    const off = versioningAt(DAY, { learnRetirements: false })
    enoughEvidence(off.versioning, '2.11')
    expect(forwardedAs(off.versioning, '2.11')).toBe('2.11')
  })

  it('an unknown version older than the newest is learned as well (2.2 is not in the calendar)', () => {
    const { versioning } = versioningAt(DAY)
    enoughEvidence(versioning, '2.2')
    expect(answerOf(() => versioning.decide('2.2', PLAIN)).message).toBe(
      'API version 2.2 is retired (the API answered 410 for it on 2026-10-01); move to 2.5 or later (the latest is 2.12)',
    )
  })

  it('a 410 for an already learned version is a confirmation, not a second retirement', async () => {
    const { versioning, registry } = versioningAt(DAY, { retired: 'rewrite' })
    const inFlight = versioning.decide('2.11', PLAIN)
    enoughEvidence(versioning, '2.11')
    versioning.observeUpstream(inFlight, 410, { instance: 'org9', endpoint: CONTACTS })
    const learned = await registry.getSingleMetric('sluice_version_retirements_learned_total')!.get()
    expect(learned.values).toEqual([{ labels: { version: '2.11' }, value: 1 }])
  })
})

import { describe, expect, it } from 'vitest'
import { loadSettings } from '../../src/config/load.js'

const problemsOf = (env: NodeJS.ProcessEnv): readonly string[] => {
  try {
    loadSettings(env)
  } catch (err) {
    return (err as { problems: readonly string[] }).problems
  }
  throw new Error('expected the settings to be refused')
}

describe('version settings', () => {
  it('defaults: header NEON-API-VERSION, reject retired versions, pass a missing header, warn at the gate', () => {
    expect(loadSettings({}).versions).toEqual({
      header: 'NEON-API-VERSION',
      retirements: {},
      retired: 'reject',
      rewriteTo: 'next',
      rewriteMap: {},
      missing: 'pass',
      gate: 'warn',
      learnRetirements: true,
      learnMinAnswers: 3,
      learnMinInstances: 2,
      learnMinEndpoints: 2,
      learnWindowMs: 3_600_000,
      learnExpiryMs: 86_400_000,
      deprecationHeaders: true,
    })
  })

  it('come from env vars named after their path; records as JSON', () => {
    const versions = loadSettings({
      SLUICE_VERSIONS_HEADER: 'X-Api-Version',
      SLUICE_VERSIONS_CALENDAR_FILE: '/etc/sluice/versions.yaml',
      SLUICE_VERSIONS_RETIRED: 'rewrite',
      SLUICE_VERSIONS_REWRITE_TO: 'map',
      SLUICE_VERSIONS_REWRITE_MAP: '{"2.9": "2.10"}',
      SLUICE_VERSIONS_RETIREMENTS: '{"2.10": "2027-03-13"}',
      SLUICE_VERSIONS_MISSING: 'pin',
      SLUICE_VERSIONS_PIN: '2.11',
      SLUICE_VERSIONS_GATE: 'reject',
      SLUICE_VERSIONS_LEARN_RETIREMENTS: 'false',
      SLUICE_VERSIONS_DEPRECATION_HEADERS: '0',
    }).versions
    expect(versions).toEqual({
      header: 'X-Api-Version',
      calendarFile: '/etc/sluice/versions.yaml',
      retired: 'rewrite',
      rewriteTo: 'map',
      rewriteMap: { '2.9': '2.10' },
      retirements: { '2.10': '2027-03-13' },
      missing: 'pin',
      pin: '2.11',
      gate: 'reject',
      learnRetirements: false,
      learnMinAnswers: 3,
      learnMinInstances: 2,
      learnMinEndpoints: 2,
      learnWindowMs: 3_600_000,
      learnExpiryMs: 86_400_000,
      deprecationHeaders: false,
    })
  })

  it('a bad value is refused naming the key, its env var and what is allowed', () => {
    expect(problemsOf({ SLUICE_VERSIONS_RETIRED: 'drop' })).toEqual([
      'versions.retired (env SLUICE_VERSIONS_RETIRED): Invalid option: expected one of "reject"|"rewrite"; got "drop"',
    ])
    expect(problemsOf({ SLUICE_VERSIONS_PIN: '2' })).toEqual([
      'versions.pin (env SLUICE_VERSIONS_PIN): a version <major>.<minor> such as 2.10; got "2"',
    ])
    expect(problemsOf({ SLUICE_VERSIONS_REWRITE_MAP: '{"2.9": "latest"}' })).toEqual([
      'versions.rewriteMap.2.9 (env SLUICE_VERSIONS_REWRITE_MAP): a version <major>.<minor> such as 2.10; got "latest"',
    ])
    expect(problemsOf({ SLUICE_VERSIONS_REWRITE_MAP: '{"v2.9": "2.10"}' })).toEqual([
      'versions.rewriteMap.v2.9 (env SLUICE_VERSIONS_REWRITE_MAP): the key is not a version <major>.<minor> such as 2.10; got the key "v2.9"',
    ])
    expect(problemsOf({ SLUICE_VERSIONS_RETIREMENTS: '{"2.10": "2027-02-30"}' })).toEqual([
      'versions.retirements.2.10 (env SLUICE_VERSIONS_RETIREMENTS): a date YYYY-MM-DD; got "2027-02-30"',
    ])
  })

  it('missing: pin needs a pin', () => {
    expect(problemsOf({ SLUICE_VERSIONS_MISSING: 'pin' })).toEqual([
      'versions.pin (SLUICE_VERSIONS_PIN): required when versions.missing is "pin"; it is not set',
    ])
  })
})

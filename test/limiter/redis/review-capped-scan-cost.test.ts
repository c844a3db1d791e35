import { describe, expect, it } from 'vitest'
import { loadSettings } from '../../../src/config/load.js'
import { ConfigError } from '../../../src/errors/config-error.js'

// Review (fair share between apps, maxHeld): while a capped app's backlog sits at the head and
// slots are free, EVERY script that runs grant (each acquire of any app, each release, each
// replica's sync every third of a lease) pops the capped head, puts it back, and reads the queue a
// page of 64 at a time looking for an app under its cap: work that grows with the capped app's
// queued waiters. The bound chosen (docs/redis-limiter.md, "maxHeld"): `maxHeld` requires
// `maxQueued`, so the scan covers at most maxQueued × replicas waiters per capped app, never an
// unbounded backlog.

const problemsOf = (env: NodeJS.ProcessEnv): readonly string[] => {
  try {
    loadSettings(env)
  } catch (err) {
    if (err instanceof ConfigError) return err.problems
    throw err
  }
  return []
}

describe('review: a capped app backlogged bounds what every script scans', () => {
  it('maxHeld without maxQueued is a config error naming the key and where it came from', () => {
    expect(problemsOf({ SLUICE_FAIRNESS_APPS: '{"nightly": {"class": "batch", "maxHeld": 2}}' })).toEqual([
      expect.stringMatching(/^fairness\.apps\.nightly\.maxHeld \(env SLUICE_FAIRNESS_APPS\): needs maxQueued/),
    ])
    expect(problemsOf({ SLUICE_FAIRNESS_DEFAULT_MAX_HELD: '2' })).toEqual([
      expect.stringMatching(/^fairness\.default\.maxHeld \(env SLUICE_FAIRNESS_DEFAULT_MAX_HELD\): needs maxQueued/),
    ])
    expect(problemsOf({ SLUICE_FAIRNESS_APPS: '{"nightly": {"maxHeld": 2, "maxQueued": 200}}' })).toEqual([])
  })
})

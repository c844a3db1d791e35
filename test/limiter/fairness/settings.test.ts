import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { loadSettings } from '../../../src/config/load.js'
import { FairShare } from '../../../src/limiter/fairness/policy.js'
import { problemsOf } from '../../support/config-problems.js'

describe('fairness settings (README "Fair share between apps")', () => {
  it('per app in the file, defaults for the rest; a class is a weight multiplier', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sluice-fair-'))
    const file = join(dir, 'sluice.yaml')
    writeFileSync(
      file,
      'fairness:\n  interactiveBoost: 5\n  default:\n    maxQueued: 50\n  apps:\n    nightly:\n      class: batch\n      weight: 2\n      maxHeld: 2\n      maxQueued: 20\n',
    )
    const share = new FairShare(loadSettings({ SLUICE_CONFIG: file }).fairness)
    expect(share.of('nightly')).toEqual({
      app: 'nightly',
      cost: 1 / 2,
      maxHeld: 2,
      maxQueued: 20,
      queuedByShare: false,
    })
    expect(share.of('web')).toEqual({ app: 'web', cost: 1 / 5, maxHeld: Infinity, maxQueued: 50, queuedByShare: false })
    expect(share.of(undefined)).toEqual({
      app: 'default',
      cost: 1 / 5,
      maxHeld: Infinity,
      maxQueued: 50,
      queuedByShare: false,
    })
  })

  it('a bad value names its key and where it came from', () => {
    expect(
      problemsOf({
        SLUICE_FAIRNESS_APPS: '{"web": {"weight": 0}, "batch": {"class": "bulk"}}',
        SLUICE_FAIRNESS_DEFAULT_MAX_HELD: '0',
      }),
    ).toEqual([
      'fairness.default.maxHeld (env SLUICE_FAIRNESS_DEFAULT_MAX_HELD): Too small: expected number to be >0; got 0',
      'fairness.apps.web.weight (env SLUICE_FAIRNESS_APPS): Too small: expected number to be >=0.01; got 0',
      'fairness.apps.batch.class (env SLUICE_FAIRNESS_APPS): Invalid option: expected one of "interactive"|"batch"; got "bulk"',
    ])
    const dir = mkdtempSync(join(tmpdir(), 'sluice-fair-'))
    const file = join(dir, 'sluice.yaml')
    writeFileSync(file, 'fairness:\n  apps:\n    "bad name!":\n      weight: 1\n    web:\n      wieght: 3\n')
    expect(problemsOf({ SLUICE_CONFIG: file })).toEqual([
      expect.stringMatching(
        /^fairness\.apps\.bad name! \(file .*, key fairness\.apps\.bad name!\): Invalid key in record/,
      ),
      `unknown setting in fairness.apps.web: wieght (file ${file}, key fairness.apps.web.wieght)`,
    ])
  })

  // While a capped app's backlog sits at the head and slots are free, every script that runs grant
  // (each acquire, each release, each replica's sync) reads the queue past the capped head a page of
  // 64 at a time: work that grows with the capped app's queued waiters. The bound
  // (docs/redis-limiter.md, "maxHeld"): maxHeld requires maxQueued, so the scan covers at most
  // maxQueued × replicas waiters per capped app.
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

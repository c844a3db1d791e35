import { describe, expect, it } from 'vitest'
import { loadSettings } from '../../src/config/load.js'

// redis.keepPermits (docs/configuration.md, "Redis"): on unless turned off, read from its env var, a bad value named.
describe('redis.keepPermits setting', () => {
  it('is on by default, and off from SLUICE_REDIS_KEEP_PERMITS=false', () => {
    expect(loadSettings({}).redis.keepPermits).toBe(true)
    expect(loadSettings({ SLUICE_REDIS_KEEP_PERMITS: 'false' }).redis.keepPermits).toBe(false)
    expect(loadSettings({ SLUICE_REDIS_KEEP_PERMITS: 'true' }).redis.keepPermits).toBe(true)
    expect(loadSettings({ SLUICE_REDIS_KEEP_PERMITS: '0' }).redis.keepPermits).toBe(false)
  })

  it('a value that is no boolean is refused, naming the key and its env var', () => {
    expect(() => loadSettings({ SLUICE_REDIS_KEEP_PERMITS: 'yes' })).toThrow(
      /invalid setting: redis\.keepPermits \(env SLUICE_REDIS_KEEP_PERMITS\).*got "yes"/,
    )
  })
})

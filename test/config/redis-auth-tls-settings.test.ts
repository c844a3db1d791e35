import { describe, expect, it } from 'vitest'
import { loadSettings } from '../../src/config/load.js'

/**
 * The Sentinel credentials and TLS settings (docs/configuration.md, "Redis"): read from their env vars,
 * and refused, naming the key and never showing a password, where they would be silently ignored.
 */

const error = (env: Record<string, string>): string => {
  try {
    loadSettings(env)
  } catch (err) {
    return (err as Error).message
  }
  return 'loaded'
}

const SENTINEL = { SLUICE_REDIS_URL: 'rediss://:master-pw@ignored:1/0', SLUICE_REDIS_TOPOLOGY: 'sentinel', SLUICE_REDIS_SENTINELS: 's1:26379,s2:26379' }

describe('redis Sentinel credentials and TLS settings', () => {
  it('come from their env vars; sentinelTls unset follows the url', () => {
    const { redis } = loadSettings({ ...SENTINEL, SLUICE_REDIS_SENTINEL_USERNAME: 'sluice', SLUICE_REDIS_SENTINEL_PASSWORD: 'sentinel-pw', SLUICE_REDIS_TLS_SERVERNAME: 'redis.internal' })
    expect(redis).toMatchObject({ sentinelUsername: 'sluice', sentinelPassword: 'sentinel-pw', tlsServername: 'redis.internal' })
    expect(redis.sentinelTls).toBeUndefined()
    expect(loadSettings({ ...SENTINEL, SLUICE_REDIS_SENTINEL_TLS: 'false' }).redis.sentinelTls).toBe(false)
  })

  it('are refused where they would be ignored, each naming its key and env var, a password masked', () => {
    expect(error({ SLUICE_REDIS_URL: 'redis://h:1', SLUICE_REDIS_SENTINEL_PASSWORD: 'sentinel-pw' })).toBe(
      'invalid setting: redis.sentinelPassword (env SLUICE_REDIS_SENTINEL_PASSWORD): is for topology: sentinel only (topology is standalone); got "***"',
    )
    expect(error({ ...SENTINEL, SLUICE_REDIS_SENTINEL_USERNAME: 'sluice' })).toBe(
      'invalid setting: redis.sentinelUsername (env SLUICE_REDIS_SENTINEL_USERNAME): needs redis.sentinelPassword (SLUICE_REDIS_SENTINEL_PASSWORD): an ACL user signs in with a password; got "sluice"',
    )
    expect(error({ SLUICE_REDIS_URL: 'redis://h:1', SLUICE_REDIS_TLS_SERVERNAME: 'redis.internal' })).toBe(
      'invalid setting: redis.tlsServername (env SLUICE_REDIS_TLS_SERVERNAME): is for TLS connections, but none is made: use a rediss:// url (or sentinelTls: true); got "redis.internal"',
    )
    expect(error({ SLUICE_REDIS_URL: 'redis://h:1', SLUICE_REDIS_TOPOLOGY: 'sentinel' })).toBe(
      'invalid setting: redis.sentinels (SLUICE_REDIS_SENTINELS): topology: sentinel needs the Sentinels, host:port,…; it is not set',
    )
    // TLS to the Sentinels alone (a redis:// master) is a TLS connection: the name applies to it
    expect(error({ ...SENTINEL, SLUICE_REDIS_URL: 'redis://h:1', SLUICE_REDIS_SENTINEL_TLS: 'true', SLUICE_REDIS_TLS_SERVERNAME: 'redis.internal' })).toBe('loaded')
  })
})

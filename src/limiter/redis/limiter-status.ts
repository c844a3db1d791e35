import type { KeyStatus, LimiterMode, LimiterStatus } from '../types.js'
import type { Fallback } from './fallback.js'
import type { GlobalKeys } from './keys.js'
import type { SharedPermits } from './shared.js'

/**
 * `/status` of the Redis backend: with Redis, the busy keys as Redis counts them (a key Redis refuses to
 * read is named in `details.brokenKeys`); in the `local` fallback, this replica's own keys.
 */
export async function limiterStatus(
  mode: LimiterMode,
  details: Record<string, unknown>,
  shared: SharedPermits,
  global: GlobalKeys,
  fallback: Fallback,
): Promise<LimiterStatus> {
  let keys: KeyStatus[] = []
  if (mode === 'redis') {
    try {
      const { keys: busy, learned, broken } = await shared.status(global)
      // `sluice_keys_stuck` reads it (docs/observability.md, "SluiceKeyStuck")
      const stuckKeys = busy.filter((k) => k.stuckMs !== undefined).length
      return {
        backend: 'redis',
        mode,
        keys: busy,
        learned,
        details: { ...details, stuckKeys, ...(broken ? { brokenKeys: broken } : {}) },
      }
    } catch (err) {
      details.statusError = err instanceof Error ? err.message : String(err)
    }
  }
  if (mode === 'local') keys = await fallback.localKeys()
  return { backend: 'redis', mode, keys, details }
}

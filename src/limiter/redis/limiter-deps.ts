import { BoundedMap } from '../../bounded/index.js'
import type { FairShare } from '../fairness/policy.js'
import type { LimiterObserver, PermitKey } from '../types.js'
import type { StuckHolders } from './stuck-keys.js'
import { describeKey } from './ticket.js'

export interface RedisLimiterLog {
  info(obj: object, msg: string): void
  warn(obj: object, msg: string): void
  error(obj: object, msg: string): void
}

export interface RedisLimiterDeps {
  readonly log: RedisLimiterLog
  readonly observer?: LimiterObserver
  /** a readable name for this replica (default: hostname-pid); a random suffix keeps it unique */
  readonly replicaId?: string
  /** weights and caps per app (README "Fair share between apps"); default: every app weight 1, no caps */
  readonly fairness?: FairShare
  /** how long a permit may be kept for this replica's next request (kept-permits.ts: KEEP_FOR_MS; tests: 0 keeps none) */
  readonly keepForMs?: number
}

/** What a replica logs when Redis's data was lost or older than its own, or a key is stuck (docs/redis-limiter.md, "Failure modes"). */
export const dataLossLogs = (log: RedisLimiterLog) => ({
  recounted: (key: PermitKey, { counted, heldBack }: { readonly counted: number; readonly heldBack: number }) =>
    log.warn(
      { instance: key.instance, endpoint: key.endpoint, count: counted, heldBack },
      'limiter: Redis had lost its data; the permits in flight were counted again, those not sent yet given back',
    ),
  stuck: (key: PermitKey, holders: StuckHolders) =>
    log.warn(
      { instance: key.instance, endpoint: key.endpoint, holders },
      'limiter: a key has waiters and no grant for longer than a lease; holders (replica, app, age of the request in ms) follow',
    ),
  reconciled: (key: PermitKey, removed: number) =>
    log.warn(
      { instance: key.instance, endpoint: key.endpoint, removed },
      "limiter: Redis's state was older than this replica's (a failover, a restart from old data); its entries serving no request were removed",
    ),
})

/** Semaphores Redis refused, logged once each (at most 1,000: more is a broken Redis; past it, logged again now and then). */
export function brokenKeyLog(log: RedisLimiterLog): (key: PermitKey, err: unknown) => void {
  const logged = new BoundedMap<string, true>(1_000)
  return (key, err) => {
    const name = describeKey(key)
    if (logged.has(name)) return
    logged.set(name, true)
    log.error(
      { err, instance: key.instance, endpoint: key.endpoint },
      'limiter: Redis refused this semaphore (a key of the wrong type or a corrupt entry?); its requests fail with SLUICE_UNAVAILABLE, every other key goes on',
    )
  }
}

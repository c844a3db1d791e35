import type { FairShare } from '../fairness/policy.js'
import type { LimiterObserver, PermitKey } from '../types.js'
import type { StuckHolders } from './stuck-keys.js'

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

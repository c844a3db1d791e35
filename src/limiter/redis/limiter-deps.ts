import type { FairShare } from '../fairness/policy.js'
import type { LimiterObserver } from '../types.js'

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
}

import { DEFAULT_APP } from '../../apps/gate.js'
import { BoundedMap } from '../../bounded/index.js'
import { fairnessSettingsSchema, type AppShareSettings, type FairnessSettings } from './settings.js'

/** What the limiter needs to know about an app to queue it fairly. */
export interface AppPolicy {
  readonly app: string
  /** virtual time one permit costs the app: 1 / (weight × class boost) — see docs/redis-limiter.md, "Fair share" */
  readonly cost: number
  /** most permits the app may hold on one key; Infinity: no cap */
  readonly maxHeld: number
  /** most waiters of the app per key (per replica), its followers there included; Infinity: no cap */
  readonly maxQueued: number
  /** true when `maxQueued` is the app's share of `queue.maxLength` (`queue.maxShare`), not a `maxQueued` of its own */
  readonly queuedByShare?: boolean
}

/**
 * The most waiters one app may have on a key when it has no `maxQueued` of its own: its share of
 * `queue.maxLength` (docs/configuration.md, `queue.maxShare`), so one app's burst leaves the rest of
 * the queue to the others. With app identity off the name is the client's say, and a key's queue is its
 * organisation's alone: no share (Infinity), nor with `maxShare` 1.
 */
export function queueShareOf(queue: { maxLength: number; maxShare: number }, appsEnabled: boolean): number {
  if (!appsEnabled || queue.maxShare >= 1) return Number.POSITIVE_INFINITY
  return Math.max(1, Math.floor(queue.maxLength * queue.maxShare))
}

/** The app a queue refusal names, and which bound refused it (the 503's message). */
export const queueRefusalOf = (policy: AppPolicy): string =>
  policy.queuedByShare ? `app ${policy.app} (its share, queue.maxShare)` : `app ${policy.app}`

/** Resolves an app name to its policy (`fairness.apps`, else `fairness.default`), made once per name so the hot path allocates nothing. */
export class FairShare {
  readonly #listed = new Map<string, AppPolicy>()
  /** Made once per unlisted name a request carried, at most 10,000 (apps are few; the rest are names clients send). */
  readonly #unlisted = new BoundedMap<string, AppPolicy>(10_000)
  readonly #default: AppShareSettings
  readonly #boost: number
  readonly #queueShare: number

  constructor(
    settings: FairnessSettings = fairnessSettingsSchema.parse({}),
    /** an app's share of a key's queue when it has no `maxQueued` (queueShareOf); Infinity: none */
    queueShare = Number.POSITIVE_INFINITY,
  ) {
    this.#queueShare = queueShare
    this.#default = settings.default
    this.#boost = settings.interactiveBoost
    for (const [app, share] of Object.entries(settings.apps)) this.#listed.set(app, this.#make(app, share))
  }

  #make(app: string, share: AppShareSettings): AppPolicy {
    const boost = share.class === 'interactive' ? this.#boost : 1
    return {
      app,
      cost: 1 / (share.weight * boost),
      maxHeld: share.maxHeld ?? Number.POSITIVE_INFINITY,
      maxQueued: share.maxQueued ?? this.#queueShare,
      queuedByShare: share.maxQueued === undefined && Number.isFinite(this.#queueShare),
    }
  }

  of(app: string | undefined): AppPolicy {
    const name = app ?? DEFAULT_APP
    const listed = this.#listed.get(name)
    if (listed) return listed
    return this.#unlisted.getOrMake(name, () => this.#make(name, this.#default))
  }
}

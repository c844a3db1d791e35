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
  /** most waiters of the app per key (per replica); Infinity: no cap */
  readonly maxQueued: number
}

/** Resolves an app name to its policy (`fairness.apps`, else `fairness.default`), made once per name so the hot path allocates nothing. */
export class FairShare {
  readonly #listed = new Map<string, AppPolicy>()
  /** Made once per unlisted name a request carried, at most 10,000 (apps are few; the rest are names clients send). */
  readonly #unlisted = new BoundedMap<string, AppPolicy>(10_000)
  readonly #default: AppShareSettings
  readonly #boost: number

  constructor(settings: FairnessSettings = fairnessSettingsSchema.parse({})) {
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
      maxQueued: share.maxQueued ?? Number.POSITIVE_INFINITY,
    }
  }

  of(app: string | undefined): AppPolicy {
    const name = app ?? DEFAULT_APP
    const listed = this.#listed.get(name)
    if (listed) return listed
    return this.#unlisted.getOrMake(name, () => this.#make(name, this.#default))
  }
}

import type { Endpoint } from '../catalog/types.js'
import { maskSecretText } from '../log/secret-text.js'
import type { UpstreamPlan } from './index.js'
import { DEFAULT_UPSTREAM, splitScoped } from './scope.js'

/**
 * What `/status` and the status page say per upstream (docs/observability.md, "Status page"): each
 * upstream's route, whether sluice injects its keys, and the 429s it answered since the start; and
 * where a key's limit comes from. One counter per upstream: nothing per key.
 */

/** `published` by the API (the CRM's catalog, a profile's file), `configured` by the operator, or `learned` from answers. */
export type LimitFrom = 'published' | 'configured' | 'learned'

export interface UpstreamStatus {
  readonly name: string
  readonly prefix: string
  readonly url: string
  /** `injected`: sluice sends its key (in `header`); `passed`: the app's own credentials go as sent */
  readonly credentials: 'injected' | 'passed'
  readonly header?: string
  /** upstream 429 answers since the start (this replica) */
  readonly upstream429s: number
}

export class UpstreamsStatus {
  readonly #plans: readonly UpstreamPlan[]
  readonly #count429 = new Map<string, number>()
  /** per upstream: each listed endpoint's limit and its source, by id (the name /status shows), and the default's */
  readonly #sources = new Map<string, ReadonlyMap<string, Base>>()
  readonly #defaults = new Map<string, number>()

  constructor(plans: readonly UpstreamPlan[]) {
    this.#plans = plans
    for (const plan of plans) {
      this.#count429.set(plan.name, 0)
      this.#sources.set(plan.name, new Map(plan.catalog.endpoints.map((e) => [e.id, baseOf(e)])))
      this.#defaults.set(plan.name, plan.defaultLimit)
    }
  }

  /** An upstream 429 for a key (its instance scoped: src/upstreams/scope.ts). */
  upstream429(scopedInstance: string): void {
    const { upstream } = splitScoped(scopedInstance)
    const n = this.#count429.get(upstream)
    if (n !== undefined) this.#count429.set(upstream, n + 1)
  }

  /**
   * Where the limit of a key of `upstream` (absent: the CRM's) comes from, its endpoint as /status
   * names it; a path not listed has its catalog's default, which the operator configured. A limit
   * that may be learned (`learnedValue`) but still holds its starting value is not called learned.
   */
  limitFrom(upstream: string | undefined, endpoint: string, learnedValue: number | undefined): LimitFrom {
    const name = upstream ?? DEFAULT_UPSTREAM
    const base = this.#sources.get(name)?.get(endpoint) ?? { from: 'configured', limit: this.#defaults.get(name) }
    return learnedValue === undefined || Math.floor(learnedValue) === base.limit ? base.from : 'learned'
  }

  snapshot(): UpstreamStatus[] {
    return this.#plans.map((p) => ({
      name: p.name,
      prefix: p.prefix,
      // a URL's credentials are refused at start; masked all the same, as everything /status shows
      url: maskSecretText(p.url),
      credentials: p.credentials.inject ? 'injected' : 'passed',
      ...(p.credentials.inject ? { header: p.credentials.header } : {}),
      upstream429s: this.#count429.get(p.name) ?? 0,
    }))
  }
}

interface Base {
  readonly from: LimitFrom
  readonly limit: number | undefined
}
const baseOf = (e: Endpoint): Base => ({
  from: e.limitSource === 'published' ? 'published' : 'configured',
  limit: e.limit,
})

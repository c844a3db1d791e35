import type { Injection } from '../apps/injection.js'
import type { Catalog } from '../catalog/types.js'
import type { ThrottleRule } from '../upstreams/throttle.js'
import type { VersionDecision, Versioning } from '../versioning/index.js'
import { belowPrefix } from './admission.js'
import type { InstanceReader } from './instance.js'
import type { Upstream } from './upstream.js'

/**
 * The upstreams the proxy routes to by prefix (docs/upstreams.md): the CRM's own first, which also
 * answers every path under no prefix (its 404, or the 410 of API v1).
 */

/** What the proxy uses of version handling (src/versioning). */
export type ProxyVersioning = Pick<Versioning, 'headerName' | 'decide' | 'observeUpstream' | 'rejectApiV1'>

/** What routing and the instance need of an upstream (the tracker reads them on arrival). */
export interface RouteBase {
  readonly name: string
  /** the path prefix clients call, e.g. `/trial/v2` */
  readonly prefix: string
  /** the instance of a request, from its headers and the path below the prefix; throws its 400 */
  readonly readInstance: InstanceReader
}

/**
 * One upstream as the proxy serves it, the CRM's like any other (built from its profile,
 * src/upstreams/index.ts): the handler takes nothing else that differs between upstreams.
 */
export interface UpstreamRoute extends RouteBase {
  /** its endpoints, limits and rates */
  readonly catalog: Catalog
  /** the pool its requests go through */
  readonly upstream: Upstream
  /** its version policy; NO_VERSION_POLICY when it has none */
  readonly versioning: ProxyVersioning
  /** whether an answer is its over-the-limit: the request goes back into its queue (docs/upstreams.md, "Over the limit") */
  readonly throttled: ThrottleRule
  /** whether sluice injects its key, in which header and scheme (docs/upstreams.md, "Credentials") */
  readonly credentials: Injection
}

export class Routes<R extends RouteBase = UpstreamRoute> {
  readonly default: R
  /** each route's first character after the `/`, lower-cased: most paths are told apart by it alone */
  private readonly firsts: number[]
  constructor(readonly all: readonly [R, ...R[]]) {
    this.default = all[0]
    this.firsts = all.map((r) => r.prefix.toLowerCase().charCodeAt(1))
  }

  /** The route of a request target, and the path below its prefix ('' for the CRM's, which admission works out itself). */
  of(url: string): { readonly route: R; readonly rest: string } {
    if (this.all.length === 1) return { route: this.default, rest: '' }
    const q = url.indexOf('?')
    const path = q < 0 ? url : url.slice(0, q)
    // only a cheap filter (belowPrefix decides): a letter's lower case by `| 32`; a second `/` (a doubled slash) is
    // left to belowPrefix
    const first = path.charCodeAt(1)
    for (let i = 1; i < this.all.length; i++) {
      const f = this.firsts[i]
      if (first !== 0x2f && first !== f && (first | 32) !== f) continue
      const route = this.all[i]!
      const rest = belowPrefix(path, route.prefix)
      if (rest !== undefined) return { route, rest }
    }
    return { route: this.default, rest: '' }
  }
}

const PASS: VersionDecision = Object.freeze({
  requested: undefined,
  upstream: undefined,
  action: 'pass',
  responseHeaders: Object.freeze({}),
  warnings: Object.freeze([]),
})

/** An upstream with no version policy: nothing decided, the client's headers go as sent. */
export const NO_VERSION_POLICY: ProxyVersioning = {
  // '' names no header: outgoing.ts's version header step touches nothing
  headerName: '',
  decide: () => PASS,
  observeUpstream: () => undefined,
  rejectApiV1: () => undefined,
}

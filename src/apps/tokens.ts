import { createHash, timingSafeEqual } from 'node:crypto'
import type { AppConfig, AppList } from './settings.js'

/** One configured app, with its token hashes decoded for constant-time comparison. */
export interface KnownApp {
  readonly name: string
  readonly hashes: readonly { readonly algorithm: 'sha256' | 'sha512'; readonly digest: Buffer }[]
  readonly anyOrg: boolean
  readonly orgs: ReadonlySet<string>
  readonly anyEndpoint: boolean
  /** endpoint ids and methods the app may use */
  readonly endpoints: ReadonlySet<string>
}

function compile(name: string, app: AppConfig): KnownApp {
  return {
    name,
    hashes: app.tokens.map((t) => {
      const [algorithm, hex] = t.split(':') as ['sha256' | 'sha512', string]
      return { algorithm, digest: Buffer.from(hex, 'hex') }
    }),
    anyOrg: app.orgs.includes('*'),
    orgs: new Set(app.orgs),
    anyEndpoint: app.endpoints.includes('*'),
    endpoints: new Set(app.endpoints),
  }
}

/**
 * The app tokens sluice knows, as hashes only, each compared in constant time without stopping at
 * the first match, so the answer time tells nothing of which hash matched.
 */
export class TokenTable {
  private readonly apps: readonly KnownApp[]
  private readonly algorithms: ReadonlySet<'sha256' | 'sha512'>

  constructor(list: AppList) {
    this.apps = Object.entries(list).map(([name, app]) => compile(name, app))
    this.algorithms = new Set(this.apps.flatMap((a) => a.hashes.map((h) => h.algorithm)))
  }

  get size(): number {
    return this.apps.length
  }

  /** The app whose token this is, or undefined. */
  identify(token: string): KnownApp | undefined {
    const digests = new Map<string, Buffer>()
    for (const algorithm of this.algorithms)
      digests.set(algorithm, createHash(algorithm).update(token, 'utf8').digest())
    let found: KnownApp | undefined
    for (const app of this.apps) {
      for (const h of app.hashes) {
        const presented = digests.get(h.algorithm)!
        if (timingSafeEqual(presented, h.digest) && found === undefined) found = app
      }
    }
    return found
  }
}

/**
 * What an app may do: this organisation, this endpoint (by id or by method). Another upstream's
 * organisation (`trial 1001`, src/upstreams/scope.ts) is granted by `trial 1001`, `trial.1001`, or every
 * one of that upstream by `trial *` / `trial.*` (docs/upstreams.md, "Credentials").
 */
export const mayUseOrg = (app: KnownApp, org: string): boolean =>
  app.anyOrg || app.orgs.has(org) || grantedByUpstream(app.orgs, org)

function grantedByUpstream(orgs: ReadonlySet<string>, scoped: string): boolean {
  const space = scoped.indexOf(' ')
  if (space < 0) return false
  const upstream = scoped.slice(0, space)
  return orgs.has(`${upstream} *`) || orgs.has(`${upstream}.*`) || orgs.has(`${upstream}.${scoped.slice(space + 1)}`)
}
/** A `GET` grant allows `HEAD` too: HTTP defines HEAD as GET without the body (RFC 9110 §9.3.2). */
export const mayUseEndpoint = (app: KnownApp, endpointId: string, method: string): boolean =>
  app.anyEndpoint ||
  app.endpoints.has(endpointId) ||
  app.endpoints.has(method) ||
  (method === 'HEAD' && app.endpoints.has('GET'))

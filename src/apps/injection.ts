import type { Injection } from '../upstreams/credentials.js'
import { splitScoped } from '../upstreams/scope.js'

export { crmInjection, type Injection } from '../upstreams/credentials.js'

/** The header value that carries `key`; `user` is the bare instance (the username of Basic auth). */
export function credentialValue(injection: Injection, user: string, key: string): string {
  switch (injection.scheme) {
    case 'basic':
      return 'Basic ' + Buffer.from(`${user}:${key}`, 'utf8').toString('base64')
    case 'bearer':
      return `Bearer ${key}`
    case 'none':
      return key
  }
}

/**
 * The names an instance's key may be held under, first found wins: the CRM's bare org id; another
 * upstream's `<name>.<instance>` (a valid Kubernetes Secret key: docs/deploy.md) and, still read, the
 * older `<name> <instance>`.
 */
export function keyNames(scoped: string): readonly string[] {
  if (scoped.indexOf(' ') < 0) return [scoped]
  const { upstream, instance } = splitScoped(scoped)
  return [`${upstream}.${instance}`, scoped]
}

/**
 * Whether a CRM organisation id reads as another upstream's key name (`trial.1001` with an upstream
 * `trial`): such an id gets no key and only the grant `*`, so it can never take trial's key or grant.
 */
export function shadowsUpstream(scoped: string, upstreams: ReadonlySet<string>): boolean {
  if (scoped.indexOf(' ') >= 0) return false
  const dot = scoped.indexOf('.')
  return dot > 0 && upstreams.has(scoped.slice(0, dot))
}

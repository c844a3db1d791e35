/**
 * The limiter sees one opaque instance per (upstream, instance) (docs/upstreams.md, "Keys"): the CRM's
 * own upstream keeps the bare instance, so its Redis key names are those of a sluice without
 * upstreams and a rolling upgrade shares permits with old replicas; any other upstream's is
 * `<name> <instance>`. No instance holds whitespace (src/proxy/instance.ts), so the two never meet.
 */

/** Lower-case letters, digits and `-`: a name that is safe as a label value, in a key and in a log line, and that splitScoped can tell. */
export const UPSTREAM_NAME = /^[a-z][a-z0-9-]{0,31}$/

/** The name of the CRM's own upstream (`upstream`, `basePath`), which always exists. */
export const DEFAULT_UPSTREAM = 'neon'

export const scopedInstance = (upstream: string, instance: string): string =>
  upstream === DEFAULT_UPSTREAM ? instance : `${upstream} ${instance}`

/** The upstream and the instance of a scoped instance; what no upstream could have scoped is the CRM's, as it is. */
export function splitScoped(scoped: string): { readonly upstream: string; readonly instance: string } {
  const space = scoped.indexOf(' ')
  const upstream = space < 0 ? '' : scoped.slice(0, space)
  return UPSTREAM_NAME.test(upstream)
    ? { upstream, instance: scoped.slice(space + 1) }
    : { upstream: DEFAULT_UPSTREAM, instance: scoped }
}

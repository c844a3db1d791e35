/**
 * The limiter sees one opaque instance per (upstream, instance) (docs/upstreams.md, "Keys"): the CRM's
 * own upstream keeps the bare instance, so its Redis key names are those of a sluice without
 * upstreams and a rolling upgrade shares permits with old replicas; any other upstream's is
 * `<name> <instance>`. No instance holds whitespace (src/proxy/instance.ts), so the two never meet.
 */

/** The name of the CRM's own upstream (`upstream`, `basePath`), which always exists. */
export const DEFAULT_UPSTREAM = 'neon'

export const scopedInstance = (upstream: string, instance: string): string => (upstream === DEFAULT_UPSTREAM ? instance : `${upstream} ${instance}`)

/** The upstream and the instance of a scoped instance. */
export function splitScoped(scoped: string): { readonly upstream: string; readonly instance: string } {
  const space = scoped.indexOf(' ')
  return space < 0 ? { upstream: DEFAULT_UPSTREAM, instance: scoped } : { upstream: scoped.slice(0, space), instance: scoped.slice(space + 1) }
}

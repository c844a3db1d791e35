import { basename } from 'node:path'
import { getHeapStatistics } from 'node:v8'
import type { AppsLoaded } from './apps/loaded.js'
import type { Settings } from './config/schema.js'
import { maskUrl } from './log/secret-text.js'
import type { Egress } from './proxy/forward-proxy.js'

/**
 * The fields of the one start-up line, `sluice listening` (docs/observability.md, "What was
 * loaded"): what this process runs with, so that the log alone confirms a configuration took
 * effect. Counts and names only, never a secret: the upstream and the forward proxy without
 * credentials, apps and keys counted.
 */
export function startupFields(
  settings: Settings,
  loaded: {
    readonly limiter: 'memory' | 'redis'
    readonly apps: AppsLoaded
    readonly egress: Egress
    readonly memoryBudgetBytes: number
  },
): Record<string, unknown> {
  const { fairness, versions } = settings
  const classes = { interactive: [] as string[], batch: [] as string[] }
  for (const [app, share] of Object.entries(fairness.apps))
    classes[share.class].push(share.weight === 1 ? app : `${app} (weight ${share.weight})`)
  return {
    upstream: maskUrl(settings.upstream),
    // the other upstreams (docs/upstreams.md), their URLs without credentials
    ...(settings.upstreams.length > 0
      ? { upstreams: settings.upstreams.map((u) => ({ name: u.name, prefix: u.prefix, url: maskUrl(u.url) })) }
      : {}),
    ...forwardProxyField(loaded.egress),
    limiter: loaded.limiter,
    ...(loaded.limiter === 'redis' ? { redisFallback: settings.redis.fallback } : {}),
    // docs/deploy.md, "Memory: a budget below the container's limit"; and V8's heap bound, which caps it
    // (`NODE_OPTIONS=--max-old-space-size`, docs/deploy.md "Without a memory limit")
    memoryBudgetBytes: loaded.memoryBudgetBytes,
    heapBoundBytes: getHeapStatistics().heap_size_limit,
    apps: loaded.apps,
    cachedEndpoints: settings.cache.endpoints,
    coalescing: settings.coalesce.enabled,
    fairness: { ...classes, unlisted: fairness.default.class, interactiveBoost: fairness.interactiveBoost },
    versions: {
      // the calendar by its base name, as /status names it, never its path on disk
      calendar: versions.calendarFile === undefined ? 'built-in' : basename(versions.calendarFile),
      retired: versions.retired === 'rewrite' ? `rewrite to ${versions.rewriteTo}` : versions.retired,
      missing: versions.missing === 'pin' ? `pin ${versions.pin}` : versions.missing,
      gate: versions.gate,
    },
    // what SIGHUP (and the apps.reloadIntervalMs timer) re-reads; every other setting, upstreams and
    // fairness classes included, is read once: a change needs a restart of every replica (README "Settings")
    reload: { onSighup: RELOADED_ON_SIGHUP, otherSettings: 'restart every replica' },
  }
}

export const RELOADED_ON_SIGHUP = ['apps.file', 'credentials.keysDir']

/**
 * `forwardProxy: 'host:port (HTTPS_PROXY, with credentials)'`, or `'none (NO_PROXY exempts the
 * upstream)'` when a proxy is set but not used, or nothing when no proxy variable is set.
 */
export function forwardProxyField(egress: Egress): { forwardProxy?: string } {
  if (egress.via !== undefined)
    return {
      forwardProxy: `${egress.via.name} (${egress.via.variable}${egress.via.credentials ? ', with credentials' : ''})`,
    }
  return egress.exemptedBy === undefined ? {} : { forwardProxy: `none (${egress.exemptedBy} exempts the upstream)` }
}

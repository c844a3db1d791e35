import type { AppShare, KeyStatus, LearnedLimitStatus } from '../limiter/types.js'
import { DEFAULT_UPSTREAM, splitScoped } from '../upstreams/scope.js'

/*
 * /status names endpoints as the access log and the metrics do, and sums one organisation's keys that
 * share a name into one row (docs/observability.md, "Rows that stand for several keys").
 */

/** A /status key row: one limiter key, or (`keys` > 1) several of one organisation under one name. */
export type NamedKeyStatus = KeyStatus & { readonly keys?: number }

/** The keys with their endpoint names; keys of one instance that share a name merged (limits, in flight and queued summed, oldest wait the oldest). */
export function namedKeys(keys: readonly KeyStatus[], nameOf: (endpointId: string) => string): NamedKeyStatus[] {
  const rows = new Map<string, { key: KeyStatus; merged: KeyStatus[] }>()
  for (const key of keys) {
    const endpoint = nameOf(key.endpoint)
    const id = `${key.instance}\n${endpoint}`
    const row = rows.get(id)
    const named = endpoint === key.endpoint ? key : { ...key, endpoint }
    if (row === undefined) rows.set(id, { key: named, merged: [] })
    else row.merged.push(named)
  }
  return [...rows.values()].map(({ key, merged }) => (merged.length === 0 ? key : sum([key, ...merged])))
}

function sum(keys: readonly KeyStatus[]): NamedKeyStatus {
  const first = keys[0]!
  let apps: Map<string, { held: number; queued: number }> | undefined
  for (const key of keys) {
    for (const share of key.apps ?? []) {
      apps ??= new Map()
      const app = apps.get(share.app)
      if (app === undefined) apps.set(share.app, { held: share.held, queued: share.queued })
      else {
        app.held += share.held
        app.queued += share.queued
      }
    }
  }
  const shares: AppShare[] | undefined =
    apps === undefined ? undefined : [...apps].map(([app, { held, queued }]) => ({ app, held, queued }))
  return {
    instance: first.instance,
    endpoint: first.endpoint,
    // a sum of several keys' limits: no one key's limit, learned or not (hence no `learned`)
    limit: keys.reduce((n, k) => n + k.limit, 0),
    inFlight: keys.reduce((n, k) => n + k.inFlight, 0),
    queued: keys.reduce((n, k) => n + k.queued, 0),
    oldestWaitMs: Math.max(...keys.map((k) => k.oldestWaitMs)),
    ...(shares === undefined ? {} : { apps: shares }),
    keys: keys.length,
  }
}

/** Learned limits with their endpoint names (one entry per key still: each is its own learned limit). */
export function namedLearned(
  learned: readonly LearnedLimitStatus[],
  nameOf: (endpointId: string) => string,
): LearnedLimitStatus[] {
  return learned.map((l) => {
    const endpoint = nameOf(l.endpoint)
    return endpoint === l.endpoint ? l : { ...l, endpoint }
  })
}

/** Rows per (instance, endpoint) of counts, with endpoint names: rows that share a name summed, most first. */
export function namedCounts<R extends { readonly instance: string; readonly endpoint: string }>(
  rows: readonly R[],
  nameOf: (endpointId: string) => string,
  counts: readonly (keyof R & string)[],
): R[] {
  const byName = new Map<string, R>()
  for (const row of rows) {
    const endpoint = nameOf(row.endpoint)
    const id = `${row.instance}\n${endpoint}`
    const seen = byName.get(id)
    if (seen === undefined) byName.set(id, { ...row, endpoint })
    else for (const field of counts) (seen as Record<string, unknown>)[field] = Number(seen[field]) + Number(row[field])
  }
  const total = (r: R): number => counts.reduce((n, f) => n + Number(r[f]), 0)
  return [...byName.values()].sort((a, b) => total(b) - total(a))
}

/**
 * A row of another upstream than the CRM's with its instance bare and its `upstream` named
 * (docs/upstreams.md, "Keys"); the CRM's rows as they always were.
 */
export function withUpstream<R extends { readonly instance: string }>(row: R): R | (R & { readonly upstream: string }) {
  const { upstream, instance } = splitScoped(row.instance)
  return upstream === DEFAULT_UPSTREAM ? row : { ...row, upstream, instance }
}

import { isDeepStrictEqual } from 'node:util'

/**
 * What the app gate holds, for the start-up line and the reload line (docs/observability.md,
 * "What was loaded"): counts and names only — app names and organisation ids, never a token hash
 * or an API key.
 */
export interface AppsLoaded {
  /** whether app identity is on (`apps.enabled`); off: the other counts are 0 */
  readonly identity: boolean
  /** apps known: `apps.list` and `apps.file` together */
  readonly apps: number
  /** organisations sluice holds an API key for (credential injection) */
  readonly apiKeys: number
  /** of those, the keys read from files of `credentials.keysDir` (the rest: SLUICE_ORG_KEY_*) */
  readonly keyFiles: number
}

/** One re-read (SIGHUP or the timer): the counts after it and what changed. */
export interface AppsReloaded extends AppsLoaded {
  readonly appsAdded: readonly string[]
  readonly appsRemoved: readonly string[]
  /** apps whose tokens, organisations or endpoints changed */
  readonly appsChanged: readonly string[]
  /** organisations whose key appeared, went, or changed (a rotation) */
  readonly keysAdded: readonly string[]
  readonly keysRemoved: readonly string[]
  readonly keysChanged: readonly string[]
  /** settings whose re-read failed; what was loaded before stays in force */
  readonly notReread: readonly string[]
}

export interface NameChanges {
  readonly added: string[]
  readonly removed: string[]
  readonly changed: string[]
}

/** Which names appeared, went, or hold another value now; each list sorted. */
export function nameChanges<T>(before: ReadonlyMap<string, T>, after: ReadonlyMap<string, T>): NameChanges {
  const added: string[] = []
  const changed: string[] = []
  for (const [name, value] of after) {
    if (!before.has(name)) added.push(name)
    else if (!isDeepStrictEqual(before.get(name), value)) changed.push(name)
  }
  const removed = [...before.keys()].filter((name) => !after.has(name))
  return { added: added.sort(), removed: removed.sort(), changed: changed.sort() }
}

/** Whether a reload changed anything (the timer's re-reads are logged only then). */
export const reloadChanged = (r: AppsReloaded): boolean =>
  r.appsAdded.length +
    r.appsRemoved.length +
    r.appsChanged.length +
    r.keysAdded.length +
    r.keysRemoved.length +
    r.keysChanged.length +
    r.notReread.length >
  0

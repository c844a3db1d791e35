import type { AppShare, KeyStatus, LearnedLimitStatus } from '../../types.js'
import { keyList, semaphoreKeysOf, type GlobalKeys, type SemaphoreKeys } from '../keys.js'
import { isKeyError, stringsOf, type ScriptDef, type ScriptRunner } from '../script.js'
import { ACTIVE_LUA, STATUS_LUA } from './lua.js'

export const STATUS_SCRIPT: ScriptDef = { name: 'status', numberOfKeys: 4, lua: STATUS_LUA }
export const ACTIVE_SCRIPT: ScriptDef = { name: 'active', numberOfKeys: 1, lua: ACTIVE_LUA }

/** One semaphore as `/status` shows it: the limiter interface's KeyStatus, and what changes with every grant (`progress`). */
export type SemaphoreStatus = KeyStatus & { readonly progress: string }

/** Live holders and waiters of one semaphore, across every replica. */
export async function semaphoreStatus(
  scripts: ScriptRunner,
  keys: SemaphoreKeys,
  idleMs: number,
): Promise<SemaphoreStatus> {
  const r = (await scripts.run(STATUS_SCRIPT, keyList(keys), [idleMs])) as [
    number,
    number,
    number,
    number,
    string,
    string,
    unknown,
    string | null | undefined,
    number | null | undefined,
    unknown,
    string | undefined,
  ]
  const held = Array.isArray(r[9]) ? (r[9] as unknown[]) : []
  const holders: { replica: string; app: string; ageMs: number }[] = []
  for (let i = 0; i + 2 < held.length; i += 3)
    holders.push({ replica: String(held[i]), app: String(held[i + 1]), ageMs: Number(held[i + 2]) })
  const flat = Array.isArray(r[6]) ? (r[6] as unknown[]) : []
  const apps: AppShare[] = []
  for (let i = 0; i + 2 < flat.length; i += 3)
    apps.push({ app: String(flat[i]), held: Number(flat[i + 1]), queued: Number(flat[i + 2]) })
  return {
    inFlight: Number(r[0]),
    queued: Number(r[1]),
    oldestWaitMs: Number(r[2]),
    limit: Number(r[3]),
    instance: String(r[4]),
    endpoint: String(r[5]),
    apps,
    ...(typeof r[7] === 'string' ? { learned: { value: Number(r[7]), ceiling: Number(r[8]) } } : {}),
    holders,
    progress: String(r[10] ?? ''),
  }
}

/** Tags of the semaphores any live replica is using. */
export async function activeTags(scripts: ScriptRunner, keys: GlobalKeys): Promise<string[]> {
  return stringsOf(await scripts.run(ACTIVE_SCRIPT, [keys.active], []))
}

/** How many learned limits `/status` lists at most. */
const LEARNED_SHOWN = 1_000
/**
 * How many status scripts are on their way at once: they share the connection with the requests'
 * scripts, which wait behind at most this many instead of behind every key of the scrape.
 */
const STATUS_IN_FLIGHT = 16

/** How many broken keys `/status` names at most (the count is always whole). */
const BROKEN_SHOWN = 20

/**
 * `fn` over `items`, `limit` at a time, results in the items' order. An item whose call fails with
 * a key error (Redis answered about that key: script.ts, isKeyError) is left out and named in
 * `broken`; any other failure stops every lane from taking a new item and rejects.
 */
async function mapLimited<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<R>,
): Promise<{ done: R[]; broken: T[] }> {
  const out = new Array<R | undefined>(items.length)
  const broken: T[] = []
  let next = 0
  let failed = false
  const worker = async (): Promise<void> => {
    for (let i = next++; i < items.length && !failed; i = next++) {
      try {
        out[i] = await fn(items[i]!)
      } catch (err) {
        if (!isKeyError(err)) {
          failed = true
          throw err
        }
        broken.push(items[i]!)
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker))
  return { done: out.filter((r): r is R => r !== undefined), broken }
}

/** What `/status` shows of Redis; `broken`: the keys whose status script Redis refused (left out). */
export interface SharedStatus {
  readonly keys: SemaphoreStatus[]
  readonly learned: LearnedLimitStatus[]
  readonly broken?: { readonly count: number; readonly tags: readonly string[] }
}

/**
 * What `/status` shows of Redis (docs/redis-limiter.md, "Status and metrics"): the semaphores some live
 * replica had busy at a heartbeat within the last lease (the registry's active tags) and `localTags()`,
 * this replica's busy ones, read after, with their global counts, those busy now; and the learned limits
 * among them. One script per such key: the work follows the busy keys, never the keys merely used.
 */
export async function sharedStatus(
  scripts: ScriptRunner,
  globalKeys: GlobalKeys,
  o: { readonly prefix: string; readonly idleMs: number; readonly localTags: () => readonly string[] },
): Promise<SharedStatus> {
  const tags = new Set([...(await activeTags(scripts, globalKeys)), ...o.localTags()])
  const { done: all, broken } = await mapLimited([...tags], STATUS_IN_FLIGHT, (tag) =>
    semaphoreStatus(scripts, semaphoreKeysOf(o.prefix, tag), o.idleMs),
  )
  // code-unit order: localeCompare (ICU) took 13 ms of a scrape's CPU profile (docs/benchmarks.md, "Many keys touched
  // once")
  const order = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0)
  const byKey = (a: KeyStatus, b: KeyStatus): number => order(a.instance, b.instance) || order(a.endpoint, b.endpoint)
  const keys = all.filter((s) => s.inFlight > 0 || s.queued > 0).sort(byKey)
  const learned = all
    .filter((s) => s.learned !== undefined && s.instance !== '')
    .sort(byKey)
    .slice(0, LEARNED_SHOWN)
    .map((s) => ({
      instance: s.instance,
      endpoint: s.endpoint,
      limit: s.limit,
      value: s.learned!.value,
      ceiling: s.learned!.ceiling,
    }))
  return {
    keys,
    learned,
    ...(broken.length > 0 ? { broken: { count: broken.length, tags: broken.sort().slice(0, BROKEN_SHOWN) } } : {}),
  }
}

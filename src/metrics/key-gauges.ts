import { Gauge, type Registry } from 'prom-client'
import type { KeyStatus, Limiter } from '../limiter/types.js'

/** One row of the per-key gauges: keys that share their labels (e.g. every `_other` org) summed. */
interface KeyRow {
  readonly labels: Record<string, string>
  inFlight: number
  queued: number
  limit: number
  oldestWaitSeconds: number
  /** how many limiter keys this row sums */
  keys: number
  /** of those, keys whose permits held exceed their own limit (each key compared alone, so `_other` is watched too) */
  overLimit: number
  /** of those, keys whose learned limit is at `learning.floor` */
  atFloor: number
}

/** One row of `sluice_limit`: the key's labels and where its limit comes from, limits summed. */
interface LimitRow {
  readonly labels: Record<string, string>
  limit: number
}

interface Snapshot {
  readonly rows: KeyRow[]
  readonly limits: LimitRow[]
  /** keys with waiters and no grant for longer than a lease (Redis backend: details.stuckKeys) */
  readonly stuck?: number
}

export interface KeyGaugeOptions {
  readonly registry: Registry
  readonly limiter: () => Limiter | undefined
  /** label names: `endpoint`, and `org` when the instance label is on */
  readonly labelNames: readonly string[]
  /** the labels of one key */
  readonly labelsOf: (key: KeyStatus) => Record<string, string>
  /** told the labels of every key read, once per scrape */
  readonly keySeen?: (labels: Readonly<Record<string, string>>) => void
  /** `learning.floor`: a learned limit at or below it is counted by sluice_learned_limits_at_floor */
  readonly learnedFloor?: number
}

/** Per-key gauges read from `limiter.status()` at scrape time; the four share one status() call per scrape (their `collect`s start in one tick). */
export function registerKeyGauges(options: KeyGaugeOptions): void {
  const { registry, labelNames } = options
  let pending: Promise<Snapshot> | undefined

  const snapshot = (): Promise<Snapshot> => {
    if (pending) return pending
    const current = readRows(options)
    pending = current
    // Cleared as soon as it settles: the next scrape asks the limiter again.
    void current.then(() => {
      if (pending === current) pending = undefined
    })
    return current
  }

  const gauge = (name: string, help: string, read: (row: KeyRow) => number): void =>
    rowGauge(registry, labelNames, snapshot, name, help, read, false)

  new Gauge({
    name: 'sluice_limit',
    help: "Concurrency limit in force per endpoint (and org), by source: learned from the API's answers, or fixed (published, limits.overrides, or limits.default with learning off)",
    labelNames: [...labelNames, 'source'],
    registers: [registry],
    async collect() {
      const { limits } = await snapshot()
      this.reset()
      for (const row of limits) this.set(row.labels, row.limit)
    },
  })

  gauge('sluice_queue_depth', 'Requests waiting for a permit, per endpoint (and org)', (r) => r.queued)
  gauge(
    'sluice_permits_in_flight',
    'Permits held: requests in progress upstream, per endpoint (and org)',
    (r) => r.inFlight,
  )
  gauge(
    'sluice_permit_limit',
    'Effective concurrency limit, per endpoint (and org; summed over the orgs in a series)',
    (r) => r.limit,
  )
  gauge(
    'sluice_queue_oldest_wait_seconds',
    'Age of the oldest waiter, per endpoint (and org); 0 when none waits',
    (r) => r.oldestWaitSeconds,
  )
  registerCountGauges(registry, labelNames, snapshot)
  new Gauge({
    name: 'sluice_keys_stuck',
    help: 'Keys with waiters and no grant for longer than a lease, as this replica read them (Redis backend; docs/observability.md, SluiceKeyStuck)',
    registers: [registry],
    async collect() {
      this.set((await snapshot()).stuck ?? 0)
    },
  })
  new Gauge({
    name: 'sluice_active_keys',
    help: 'Active (instance, endpoint) keys known to the limiter',
    registers: [registry],
    async collect() {
      // Same snapshot as the per-key gauges: the key count is the sum of the rows' key counts.
      const { rows } = await snapshot()
      this.set(rows.reduce((n, r) => n + r.keys, 0))
    },
  })
}

// Series only while a row has such a key: nothing per idle or healthy key (docs/observability.md, "Alerts").
/** A gauge with a series per key row of the snapshot; `onlyAbove0`: a series only while its value is above 0. */
function rowGauge(
  registry: Registry,
  labelNames: readonly string[],
  snapshot: () => Promise<Snapshot>,
  name: string,
  help: string,
  read: (row: KeyRow) => number,
  onlyAbove0: boolean,
): void {
  new Gauge({
    name,
    help,
    labelNames,
    registers: [registry],
    async collect() {
      const { rows } = await snapshot()
      this.reset()
      for (const row of rows) {
        const value = read(row)
        if (!onlyAbove0 || value > 0) this.set(row.labels, value)
      }
    },
  })
}

function registerCountGauges(
  registry: Registry,
  labelNames: readonly string[],
  snapshot: () => Promise<Snapshot>,
): void {
  const countGauge = (name: string, help: string, read: (row: KeyRow) => number): void =>
    rowGauge(registry, labelNames, snapshot, name, help, read, true)
  countGauge(
    'sluice_keys_over_limit',
    'Limiter keys whose permits held exceed their own limit, each key compared alone (so org "_other" and endpoint "unknown" are watched too); a series only while one does',
    (r) => r.overLimit,
  )
  countGauge(
    'sluice_learned_limits_at_floor',
    'Limiter keys whose learned limit is at learning.floor; a series only while one is',
    (r) => r.atFloor,
  )
}

async function readRows(options: KeyGaugeOptions): Promise<Snapshot> {
  const limiter = options.limiter()
  if (!limiter) return { rows: [], limits: [] }
  let keys: readonly KeyStatus[]
  let stuck: number
  try {
    const status = await limiter.status()
    keys = status.keys
    stuck = Number(status.details?.stuckKeys ?? 0)
  } catch {
    // A limiter that cannot say (Redis away) must not break the whole scrape: the gauges go empty.
    return { rows: [], limits: [] }
  }
  const rows = new Map<string, KeyRow>()
  const limits = new Map<string, LimitRow>()
  for (const key of keys) {
    const labels = options.labelsOf(key)
    const source = key.learned === undefined ? 'fixed' : 'learned'
    const limitId = options.labelNames.map((n) => labels[n]).join('\n') + '\n' + source
    const limitRow = limits.get(limitId)
    if (limitRow === undefined) limits.set(limitId, { labels: { ...labels, source }, limit: key.limit })
    else limitRow.limit += key.limit
    const id = options.labelNames.map((n) => labels[n]).join('\n')
    const over = key.inFlight > key.limit ? 1 : 0
    const floor = key.learned !== undefined && key.limit <= (options.learnedFloor ?? 1) ? 1 : 0
    const row = rows.get(id)
    if (row === undefined) {
      options.keySeen?.(labels)
      rows.set(id, {
        labels,
        inFlight: key.inFlight,
        queued: key.queued,
        limit: key.limit,
        oldestWaitSeconds: key.oldestWaitMs / 1000,
        keys: 1,
        overLimit: over,
        atFloor: floor,
      })
    } else {
      row.inFlight += key.inFlight
      row.queued += key.queued
      row.limit += key.limit
      row.oldestWaitSeconds = Math.max(row.oldestWaitSeconds, key.oldestWaitMs / 1000)
      row.keys++
      row.overLimit += over
      row.atFloor += floor
    }
  }
  return { rows: [...rows.values()], limits: [...limits.values()], stuck }
}

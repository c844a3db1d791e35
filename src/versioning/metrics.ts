import { Counter, Gauge, type Registry } from 'prom-client'

const SECONDS_PER_DAY = 86_400

/**
 * Version metrics. The hot path only bumps plain integers (`cell.n++`, cells bound once a day per
 * version); prom-client reads them when /metrics is scraped. prom-client's own `inc(labels)` hashes
 * and validates the label set on every call, which decide() should not pay per request.
 */
export interface Cell {
  n: number
}

/** Most instance names a RequestCell remembers the org cell of (clients can invent names). */
const MAX_REMEMBERED_INSTANCES = 1000

/**
 * A request count that is also split by organisation (the metrics' `org` label, bounded by
 * metrics.maxInstances): `n` is the total, `byOrg` the same requests per org label.
 */
export class RequestCell implements Cell {
  n = 0
  readonly byOrg = new Map<string, Cell>()
  /** the org cell of each instance seen, so a request costs one lookup; cleared when orgs are re-ranked */
  readonly byInstance = new Map<string, Cell>()

  /** one request of `instance`; counted by org only when `orgs` is given */
  count(instance: string, orgs: OrgLabels | undefined): void {
    this.n++
    if (orgs === undefined) return
    let cell = this.byInstance.get(instance)
    if (cell === undefined) {
      const org = orgs.label(instance)
      cell = this.byOrg.get(org)
      if (cell === undefined) this.byOrg.set(org, (cell = { n: 0 }))
      if (this.byInstance.size < MAX_REMEMBERED_INSTANCES) this.byInstance.set(instance, cell)
    }
    cell.n++
  }

  /** an organisation lost its own series: its count goes, and which instance maps to which org is asked anew */
  dropOrg(org: string): void {
    this.byOrg.delete(org)
    this.byInstance.clear()
  }
}

/** One counter's cells, one per label set; label values come only from validated versions and enums. */
export class CellFamily<L extends string, C extends Cell = Cell> {
  private readonly cells = new Map<string, { readonly labels: Record<L, string>; readonly cell: C }>()
  constructor(
    private readonly labelNames: readonly L[],
    private readonly newCell: () => C = () => ({ n: 0 }) as C,
  ) {}

  cell(labels: Record<L, string>): C {
    const key = this.labelNames.map((l) => labels[l]).join('\u0000')
    let found = this.cells.get(key)
    if (!found) this.cells.set(key, (found = { labels: { ...labels }, cell: this.newCell() }))
    return found.cell
  }

  /** The count for one label set (0 when never seen). */
  value(labels: Record<L, string>): number {
    return this.cells.get(this.labelNames.map((l) => labels[l]).join('\u0000'))?.cell.n ?? 0
  }

  entries(): IterableIterator<{ readonly labels: Record<L, string>; readonly cell: C }> {
    return this.cells.values()
  }
}

export interface VersionMetrics {
  /** every decided request by the version it asked for and that version's state today (and org) */
  readonly requests: CellFamily<'version' | 'state', RequestCell>
  /** requests sent upstream with another version than asked (from `none` when pinned) */
  readonly rewrites: CellFamily<'from' | 'to'>
  /** requests answered locally: `malformed` header (400), `retired` (410), `gate` (400) */
  readonly rejections: CellFamily<'version' | 'reason'>
  readonly gateWarnings: CellFamily<'version' | 'endpoint'>
  readonly learned: CellFamily<'version'>
}

function counter<L extends string>(
  registers: Registry[],
  name: string,
  help: string,
  labelNames: readonly L[],
): CellFamily<L> {
  const family = new CellFamily(labelNames)
  new Counter<L>({
    name,
    help,
    labelNames,
    registers,
    collect() {
      this.reset()
      for (const { labels, cell } of family.entries()) if (cell.n > 0) this.inc(labels, cell.n)
    },
  })
  return family
}

/** The organisation labels of the metrics (src/metrics), when series carry one. */
export interface OrgLabels {
  /** the org label of an instance name (bounded: metrics.maxInstances, `_other`, `_invalid`) */
  label(instance: string): string
  /** called with each organisation that lost its own series (they are dropped at that scrape) */
  onDropped(listener: (org: string) => void): void
}

/** sluice_version_requests_total: by version and state, and by org when `orgs` is given. */
function requestCounter(registers: Registry[], orgs: OrgLabels | undefined): CellFamily<'version' | 'state', RequestCell> {
  const family = new CellFamily<'version' | 'state', RequestCell>(['version', 'state'], () => new RequestCell())
  orgs?.onDropped((org) => {
    for (const { cell } of family.entries()) cell.dropOrg(org)
  })
  new Counter({
    name: 'sluice_version_requests_total',
    help: 'Requests by the API version they asked for (none: no header, invalid: malformed header, other: untracked unknown versions), its state that day, and the organisation',
    labelNames: orgs ? ['version', 'state', 'org'] : ['version', 'state'],
    registers,
    collect() {
      this.reset()
      for (const { labels, cell } of family.entries()) {
        if (!orgs) {
          if (cell.n > 0) this.inc(labels, cell.n)
          continue
        }
        for (const [org, { n }] of cell.byOrg) this.inc({ ...labels, org }, n)
      }
    },
  })
  return family
}

/**
 * Creates the version metrics, registered on `registry` when given (else counted but not exported).
 * `retirementDays` yields, at scrape time, (version, retirement day) for each version seen that has a
 * retirement date; the day is days since 1970-01-01 (UTC), exported as Unix time in seconds.
 */
export function createVersionMetrics(
  registry: Registry | undefined,
  retirementDays: () => Iterable<readonly [string, number]>,
  orgs?: OrgLabels,
): VersionMetrics {
  const registers = registry ? [registry] : []
  new Gauge<'version'>({
    name: 'sluice_version_retirement_timestamp_seconds',
    help: 'When each API version in use retires (or retired), as Unix time in seconds (00:00 UTC of the day); only versions with a retirement date',
    labelNames: ['version'],
    registers,
    collect() {
      this.reset()
      for (const [version, day] of retirementDays()) this.set({ version }, day * SECONDS_PER_DAY)
    },
  })
  return {
    requests: requestCounter(registers, orgs),
    rewrites: counter(
      registers,
      'sluice_version_rewrites_total',
      'Requests sent upstream with another API version than they asked for (from="none": pinned, no header)',
      ['from', 'to'],
    ),
    rejections: counter(
      registers,
      'sluice_version_rejections_total',
      'Requests answered by sluice because of their API version: malformed header (400), retired (410), gate (400)',
      ['version', 'reason'],
    ),
    gateWarnings: counter(
      registers,
      'sluice_version_gate_warnings_total',
      'Requests for an endpoint newer than the API version they use, forwarded with a warning header',
      ['version', 'endpoint'],
    ),
    learned: counter(
      registers,
      'sluice_version_retirements_learned_total',
      'API versions treated as retired because the upstream answered 410 while the calendar said they were alive',
      ['version'],
    ),
  }
}

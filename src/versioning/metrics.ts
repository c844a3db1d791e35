import { Counter, Gauge, type Registry } from 'prom-client'
import { BoundedMap } from '../bounded/index.js'
import { CellCounter, type CounterCell } from '../metrics/cells.js'

const SECONDS_PER_DAY = 86_400

/**
 * Version metrics. The hot path only bumps plain integers (`cell.n++`, cells bound once a day per
 * version), through the metrics area's fast counters (src/metrics/cells.ts).
 */
export type Cell = CounterCell

/**
 * Most instance names a RequestCell remembers the org cell of: clients can invent names, and the org
 * labels are bounded by `metrics.maxInstances` anyway; past it, a forgotten name's label is asked again.
 */
const MAX_REMEMBERED_INSTANCES = 1000

/**
 * A request count that is also split by organisation (the metrics' `org` label, bounded by
 * metrics.maxInstances): `n` is the total, `byOrg` the same requests per org label.
 */
export class RequestCell implements Cell {
  n = 0
  readonly byOrg = new Map<string, Cell>()
  /** the org cell of each instance seen, so a request costs one lookup; cleared when orgs are re-ranked */
  readonly byInstance = new BoundedMap<string, Cell>(MAX_REMEMBERED_INSTANCES)

  /** one request of `instance`; counted by org only when `orgs` is given */
  count(instance: string, orgs: OrgLabels | undefined): void {
    this.n++
    if (orgs === undefined) return
    let cell = this.byInstance.get(instance)
    if (cell === undefined) {
      const org = orgs.label(instance)
      cell = this.byOrg.get(org)
      if (cell === undefined) this.byOrg.set(org, (cell = { n: 0 }))
      this.byInstance.set(instance, cell)
    }
    cell.n++
  }

  /** an organisation lost its own series: its count goes, and which instance maps to which org is asked anew */
  dropOrg(org: string): void {
    this.byOrg.delete(org)
    this.byInstance.clear()
  }
}

/** sluice_version_requests_total's cells, one per (version, state); each splits its count by org. */
export class RequestCounter {
  private readonly cells = new Map<
    string,
    { readonly labels: Readonly<Record<'version' | 'state', string>>; readonly cell: RequestCell }
  >()

  cell(labels: Readonly<Record<'version' | 'state', string>>): RequestCell {
    const key = `${labels.version}\u0000${labels.state}`
    let found = this.cells.get(key)
    if (!found) this.cells.set(key, (found = { labels: { ...labels }, cell: new RequestCell() }))
    return found.cell
  }

  entries(): IterableIterator<{
    readonly labels: Readonly<Record<'version' | 'state', string>>
    readonly cell: RequestCell
  }> {
    return this.cells.values()
  }
}

export interface VersionMetrics {
  /** every decided request by the version it asked for and that version's state today (and org) */
  readonly requests: RequestCounter
  /** requests sent upstream with another version than asked (from `none` when pinned) */
  readonly rewrites: CellCounter<'from' | 'to'>
  /** requests answered locally: `malformed` header (400), `retired` (410), `gate` (400) */
  readonly rejections: CellCounter<'version' | 'reason'>
  readonly gateWarnings: CellCounter<'version' | 'endpoint'>
  readonly learned: CellCounter<'version'>
}

function counter<L extends string>(
  registers: Registry[],
  name: string,
  help: string,
  labelNames: readonly L[],
): CellCounter<L> {
  return new CellCounter(name, help, labelNames, registers[0])
}

/** The organisation labels of the metrics (src/metrics), when series carry one. */
export interface OrgLabels {
  /** the org label of an instance name (bounded: metrics.maxInstances, `_other`, `_invalid`) */
  label(instance: string): string
  /** called with each organisation that lost its own series (they are dropped at that scrape) */
  onDropped(listener: (org: string) => void): void
}

/** sluice_version_requests_total: by version and state, and by org when `orgs` is given. */
function requestCounter(registers: Registry[], orgs: OrgLabels | undefined): RequestCounter {
  const family = new RequestCounter()
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
 * Creates the version metrics, registered on `registry` when given. `retirementDays` yields at scrape
 * time each used version's retirement day (days since 1970-01-01, UTC).
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

import { Gauge, type Registry } from 'prom-client'
import { CellCounter, type CounterCell } from '../metrics/cells.js'

/**
 * Version metrics. The hot path only bumps plain integers (`cell.n++`, cells bound once a day per
 * version), through the metrics area's fast counters (src/metrics/cells.ts).
 */
export type Cell = CounterCell

export interface VersionMetrics {
  /** every decided request by the version it asked for and that version's state today */
  readonly requests: CellCounter<'version' | 'state'>
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

/**
 * Creates the version metrics, registered on `registry` when given (else counted but not exported).
 * `daysUntilRetirement` yields, at scrape time, (version, days) for each version seen that has a
 * retirement date.
 */
export function createVersionMetrics(
  registry: Registry | undefined,
  daysUntilRetirement: () => Iterable<readonly [string, number]>,
): VersionMetrics {
  const registers = registry ? [registry] : []
  new Gauge<'version'>({
    name: 'sluice_version_days_until_retirement',
    help: 'Days until each API version in use retires (negative: retired that many days ago); only versions with a retirement date',
    labelNames: ['version'],
    registers,
    collect() {
      this.reset()
      for (const [version, days] of daysUntilRetirement()) this.set({ version }, days)
    },
  })
  return {
    requests: counter(
      registers,
      'sluice_version_requests_total',
      'Requests by the API version they asked for (none: no header, invalid: malformed header, other: untracked unknown versions) and its state that day',
      ['version', 'state'],
    ),
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

/** Figures of one benchmark run, from every process's [grant, release] times. */

export interface RunFigures {
  readonly requests: number
  /** busy time / (limit × wall time) */
  readonly utilisation: number
  /** release → next grant on another process, ms */
  readonly handoffP50: number
  readonly handoffP99: number
  readonly handoffs: number
  /**
   * Share of the grants that went back to the process that had just released (no handoff): a fair
   * queue with every process waiting keeps it near 1 / processes; a library that lets a releasing
   * process take the permit straight back shows more.
   */
  readonly regrantShare: number
}

export function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))
  return sorted[i]!
}

/**
 * `holds[p]` are process p's [grant, release] pairs. Utilisation counts the time permits were held
 * (the simulated upstream was busy) over the limit times the wall time from the first grant to the
 * last release. Handoffs pair each grant with the oldest release not yet paired that happened
 * before it (releases and grants in time order, first in first out): when the release and the
 * grant are in different processes, their distance is one handoff latency.
 */
export function analyse(holds: readonly (readonly [number, number][])[], limit: number): RunFigures {
  const events: { t: number; kind: 'grant' | 'release'; proc: number }[] = []
  let busy = 0
  let first = Infinity
  let last = -Infinity
  holds.forEach((list, proc) => {
    for (const [grant, release] of list) {
      events.push({ t: grant, kind: 'grant', proc }, { t: release, kind: 'release', proc })
      busy += release - grant
      first = Math.min(first, grant)
      last = Math.max(last, release)
    }
  })
  // a release and a grant at the same instant: the release came first
  events.sort((a, b) => a.t - b.t || (a.kind === 'release' ? -1 : 1))
  const pending: { t: number; proc: number }[] = []
  let head = 0
  const latencies: number[] = []
  let regrants = 0
  for (const e of events) {
    if (e.kind === 'release') pending.push(e)
    else if (head < pending.length) {
      const release = pending[head++]!
      if (release.proc !== e.proc) latencies.push(e.t - release.t)
      else regrants++
    }
  }
  latencies.sort((a, b) => a - b)
  const requests = holds.reduce((n, list) => n + list.length, 0)
  return {
    requests,
    utilisation: requests ? busy / (limit * (last - first)) : 0,
    handoffP50: quantile(latencies, 0.5),
    handoffP99: quantile(latencies, 0.99),
    handoffs: latencies.length,
    regrantShare: head ? regrants / head : 0,
  }
}

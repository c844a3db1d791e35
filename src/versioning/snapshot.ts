/**
 * What /status, the status page and `npm run versions` show of the versioning (render.ts prints it):
 * today's table of versions, the policy, and the counts since start on this replica.
 */
import type { Calendar } from './calendar.js'
import type { VersionCounting } from './counting.js'
import { isoOfDay } from './days.js'
import type { GoneAnswers } from './evidence.js'
import type { VersionSettings } from './settings.js'
import type { VersionsSnapshot, VersionState } from './types.js'
import { compareVersions } from './version.js'
import type { Learned, VersionRecord, VersionTable } from './version-table.js'

export interface SnapshotSources {
  readonly settings: VersionSettings
  readonly calendar: Calendar
  readonly table: VersionTable
  readonly counting: Pick<VersionCounting, 'requestsByVersion'>
  /** 410s on record, not (yet) enough to learn a retirement */
  readonly gone: Pick<GoneAnswers, 'count'>
}

export function versionsSnapshot({ settings: s, calendar, table, counting, gone }: SnapshotSources): VersionsSnapshot {
  const recs = [...table.records()].sort((a, b) => compareVersions(a.v, b.v))
  const nh = table.noHeader.ruling
  const requests = counting.requestsByVersion()
  const requestsOf = (version: string): number => requests.get(version) ?? 0
  return {
    today: isoOfDay(table.today),
    header: s.header,
    calendar: calendar.source,
    policy: {
      retired: s.retired,
      rewriteTo: s.rewriteTo,
      missing: s.missing,
      ...(s.pin ? { pin: s.pin } : {}),
      gate: s.gate,
    },
    ...(table.latest ? { latest: table.latest.v.text } : {}),
    versions: recs.map((r) => stateOf(r, table.today, requestsOf(r.v.text), gone.count(r.v.text))),
    noHeader: {
      action: nh.kind === 'reject' ? 'reject' : nh.decision.action === 'pin' ? 'pin' : 'pass',
      ...(nh.kind === 'forward' && nh.decision.upstream ? { upstream: nh.decision.upstream } : {}),
      requests: requestsOf('none'),
    },
    malformed: requestsOf('invalid'),
    ...(calendar.apiV1 ? { apiV1: { retired: calendar.apiV1.retired, isRetired: table.apiV1Retired } } : {}),
  }
}

function stateOf(r: VersionRecord, today: number, requests: number, recent410s: number): VersionState {
  const ruling = r.route.ruling
  const source =
    r.retires === undefined ? undefined : r.retires === r.learnedOn ? 'learned' : (r.entry?.retiredBy ?? 'calendar')
  return {
    version: r.v.text,
    state: r.state,
    inCalendar: r.entry !== undefined,
    ...(r.entry?.released ? { released: r.entry.released } : {}),
    ...(r.retires !== undefined
      ? { retiresOn: isoOfDay(r.retires), retirementSource: source, daysUntilRetirement: r.retires - today }
      : {}),
    ...(r.deprecation !== undefined ? { deprecation: isoOfDay(r.deprecation) } : {}),
    action: ruling.kind === 'reject' ? 'reject' : ruling.decision.action === 'rewrite' ? 'rewrite' : 'pass',
    ...(ruling.kind === 'forward' && ruling.decision.upstream ? { upstream: ruling.decision.upstream } : {}),
    ...(r.learned !== undefined ? { learned: learnedState(r.learned) } : {}),
    ...(recent410s > 0 ? { recent410s } : {}),
    added: r.entry?.added ?? [],
    requests,
  }
}

/** A learned retirement as /status shows it: counts and endpoint ids, not the instances (they are other organisations). */
function learnedState(l: Learned): NonNullable<VersionState['learned']> {
  return {
    answers: l.evidence.answers,
    instances: l.evidence.instances.length,
    endpoints: l.evidence.endpoints,
    first: new Date(l.evidence.firstAtMs).toISOString(),
    last: new Date(l.evidence.lastAtMs).toISOString(),
    expires: new Date(l.untilMs).toISOString(),
    confirmations: l.confirmations,
  }
}

/** The versioning's log lines, all here so the policy and the version table stay silent. */
import { isoOfDay, type Day } from './days.js'
import type { Evidence } from './evidence.js'
import { isAlive, retiredPhrase } from './policy.js'
import type { VersionSettings } from './settings.js'
import type { VersioningLog, VersionStateName } from './types.js'
import type { Learned, VersionRecord, VersionTable } from './version-table.js'

/** A pinned version retiring within this many days is warned about in the log, once a day. */
const PIN_WARNING_DAYS = 30

export class VersionLogs {
  constructor(
    private readonly log: VersioningLog,
    private readonly settings: VersionSettings,
  ) {}

  /** Once, at start: today's view of the calendar and the policy. */
  calendarLoaded(table: VersionTable, source: string): void {
    const s = this.settings
    const by = (state: VersionStateName) => table.calendar.filter((r) => r.state === state).map((r) => r.v.text)
    this.log.info(
      {
        today: isoOfDay(table.today),
        calendar: source,
        latest: table.latest?.v.text,
        deprecated: table.calendar
          .filter((r) => r.state === 'deprecated')
          .map((r) => `${r.v.text} retires ${isoOfDay(r.retires!)}`),
        retired: by('retired'),
        unreleased: by('unreleased'),
        policy: { retired: s.retired, rewriteTo: s.rewriteTo, missing: s.missing, gate: s.gate },
      },
      'API version calendar loaded',
    )
  }

  /** A version's state changed at a rebuild; a retirement says what its requests get from now on. */
  stateChanged(rec: VersionRecord, was: VersionStateName, today: Day): void {
    const fields = { version: rec.v.text, was, now: rec.state, today: isoOfDay(today) }
    if (rec.state === 'retired') {
      const ruling = rec.route.ruling
      const what =
        ruling.kind === 'reject' ? 'answered 410 by sluice' : `rewritten to ${ruling.decision.upstream ?? '(none)'}`
      this.log.warn(fields, `API version ${rec.v.text} ${retiredPhrase(rec)}: requests for it are now ${what}`)
    } else {
      this.log.info(fields, `API version ${rec.v.text} is now ${rec.state}`)
    }
  }

  /** Once a day: a pin retiring soon or retired, and rewriteMap targets that are not alive. */
  settingsTargets(table: VersionTable): void {
    const s = this.settings
    const pin = s.missing === 'pin' && s.pin ? table.get(s.pin) : undefined
    if (pin?.retires !== undefined) {
      const days = pin.retires - table.today
      if (days <= 0) {
        this.log.error(
          { pin: pin.v.text, retired: isoOfDay(pin.retires) },
          `versions.pin ${pin.v.text} is retired; update versions.pin`,
        )
      } else if (days <= PIN_WARNING_DAYS) {
        this.log.warn(
          { pin: pin.v.text, retires: isoOfDay(pin.retires), days },
          `versions.pin ${pin.v.text} retires in ${days} days; update versions.pin`,
        )
      }
    }
    if (s.retired !== 'rewrite' || s.rewriteTo !== 'map') return
    for (const [from, to] of Object.entries(s.rewriteMap)) {
      const target = table.get(to)!
      if (!isAlive(target) && target.state !== 'unknown') {
        this.log.error(
          { from, to, state: target.state },
          `versions.rewriteMap sends ${from} to ${to}, which is ${target.state}: requests for ${from} are answered 410 once it is retired`,
        )
      }
    }
  }

  /** A retirement learned from 410s, logged before the rebuild: `rec.state` is still the calendar's. */
  learned(rec: VersionRecord, evidence: Evidence, untilMs: number, today: Day): void {
    const until = new Date(untilMs).toISOString()
    this.log.error(
      {
        version: rec.v.text,
        calendarState: rec.state,
        calendarRetires: rec.retires === undefined ? undefined : isoOfDay(rec.retires),
        evidence: {
          answers: evidence.answers,
          instances: evidence.instances,
          endpoints: evidence.endpoints,
          first: new Date(evidence.firstAtMs).toISOString(),
          last: new Date(evidence.lastAtMs).toISOString(),
        },
        expires: until,
      },
      `the upstream answered 410 for API version ${rec.v.text}, which the calendar says is ${rec.state}, ${evidence.answers} times from ${evidence.instances.length} instances on ${evidence.endpoints.length} endpoints with no success in between: treating it as retired (on this replica) until ${until} unless confirmed; add "retired: ${isoOfDay(today)}" for it to the calendar`,
    )
  }

  /** A learned retirement no 410 confirmed in time: the version follows the calendar again. */
  lapsed(rec: VersionRecord, learned: Learned): void {
    this.log.warn(
      { version: rec.v.text, learnedFrom: learned.evidence.answers, confirmations: learned.confirmations },
      `the retirement of API version ${rec.v.text} learned from upstream 410s has lapsed: requests for it follow the calendar again`,
    )
  }
}

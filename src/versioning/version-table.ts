/**
 * The versions sluice knows, each with its route today (the policy's ruling, counters bound), rebuilt
 * once a day and when a learned retirement changes, so a request costs one map lookup.
 */
import type { Calendar, CalendarEntry } from './calendar.js'
import type { Cell } from './metrics.js'
import type { RouteCounts, VersionCounting } from './counting.js'
import { dayOfIso, type Day } from './days.js'
import type { Evidence } from './evidence.js'
import {
  dayFacts,
  isAlive,
  VersionPolicy,
  type GateRuling,
  type Ruling,
  type VersionFacts,
  type VersionsToday,
} from './policy.js'
import type { VersionSettings } from './settings.js'
import type { VersionStateName } from './types.js'
import { parseVersion, type Version } from './version.js'

/** Distinct versions outside the calendar tracked one by one (own metrics label, learnable); the rest share `other`. */
export const MAX_UNKNOWN_VERSIONS = 32

/** A retirement learned from 410s: what it rests on, and when it lapses unless a 410 confirms it. */
export interface Learned {
  untilMs: number
  readonly evidence: Evidence
  confirmations: number
}

/** A request's way through the versioning today: what the policy rules, and what it counts. */
export interface Route {
  readonly ruling: Ruling<VersionRecord>
  readonly counts: RouteCounts
  /** gate outcomes per endpoint id, filled lazily, dropped with the route at the next rebuild */
  readonly gated: Map<string, Gated>
}

export interface Gated {
  readonly ruling: GateRuling
  readonly counted: Cell
}

/** One version the versioning knows. Its label in the metrics is its text (bounded: see MAX_UNKNOWN_VERSIONS). */
export interface VersionRecord extends VersionFacts {
  learnedOn: Day | undefined
  learned: Learned | undefined
  // Recomputed at each rebuild:
  state: VersionStateName
  retires: Day | undefined
  deprecation: Day | undefined
  route: Route
}

/** What a rebuild changed, for the log lines. */
export interface Rebuilt {
  /** the first build, at start */
  readonly first: boolean
  readonly dayChanged: boolean
  /** records whose state changed, with the state before */
  readonly changed: readonly { readonly rec: VersionRecord; readonly was: VersionStateName }[]
}

export class VersionTable implements VersionsToday<VersionRecord> {
  private readonly byText = new Map<string, VersionRecord>()
  readonly calendar: readonly VersionRecord[]
  private readonly policy: VersionPolicy<VersionRecord>
  private readonly apiV1RetiresOn: Day | undefined
  private unknownCount = 0
  #today: Day = Number.NaN
  #latest: VersionRecord | undefined
  #newestReleased: VersionRecord | undefined
  #noHeader: Route | undefined
  #apiV1Retired = false
  #exampleVersion = '2.11'
  #nextLapseMs = Number.POSITIVE_INFINITY

  constructor(
    settings: VersionSettings,
    calendar: Calendar,
    private readonly counting: VersionCounting,
  ) {
    this.policy = new VersionPolicy(settings, this)
    this.apiV1RetiresOn = calendar.apiV1 === undefined ? undefined : dayOfIso(calendar.apiV1.retired)
    this.calendar = calendar.versions.map((entry) => this.add(parseVersion(entry.version)!, entry))
    // Versions named by the settings get records too, so that routes can point at them.
    const named = [
      ...Object.keys(settings.rewriteMap),
      ...Object.values(settings.rewriteMap),
      ...(settings.pin ? [settings.pin] : []),
    ]
    for (const text of named) if (!this.byText.has(text)) this.add(parseVersion(text)!, undefined)
  }

  /** The day the routes are for (UTC; NaN before the first rebuild). */
  get today(): Day {
    return this.#today
  }
  /** the newest supported version today */
  get latest(): VersionRecord | undefined {
    return this.#latest
  }
  /** the newest calendar version released by today: never learned as retired, nor anything newer */
  get newestReleased(): VersionRecord | undefined {
    return this.#newestReleased
  }
  /** the route of requests without the header */
  get noHeader(): Route {
    return this.#noHeader!
  }
  get apiV1Retired(): boolean {
    return this.#apiV1Retired
  }
  /** the version the 400 for a malformed header suggests: the latest, once there is one */
  get exampleVersion(): string {
    return this.#exampleVersion
  }
  /** the earliest moment a learned retirement lapses (Infinity: none learned) */
  get nextLapseMs(): number {
    return this.#nextLapseMs
  }

  get(text: string): VersionRecord | undefined {
    return this.byText.get(text)
  }

  records(): IterableIterator<VersionRecord> {
    return this.byText.values()
  }

  /** A version seen in a request for the first time: a record and a route while there is room, else undefined. */
  addUnknown(v: Version): VersionRecord | undefined {
    if (this.unknownCount >= MAX_UNKNOWN_VERSIONS) return undefined
    this.unknownCount++
    const rec = this.add(v, undefined)
    Object.assign(rec, dayFacts(rec, this.#today, this.calendar))
    rec.route = this.routeFor(rec)
    return rec
  }

  /** Recomputes every version's state and route for `today` (a new day, or learned retirements changed). */
  rebuild(today: Day): Rebuilt {
    const first = Number.isNaN(this.#today)
    const dayChanged = today !== this.#today
    const recs = [...this.byText.values()]
    const before = recs.map((r) => r.state)
    this.#today = today
    for (const rec of recs) Object.assign(rec, dayFacts(rec, today, this.calendar))
    this.#latest = this.calendar.findLast(isAlive)
    this.#newestReleased = this.calendar.findLast((r) => r.released === undefined || today >= r.released)
    this.#exampleVersion = this.#latest?.v.text ?? this.#exampleVersion
    for (const rec of recs) rec.route = this.routeFor(rec)
    this.#noHeader = this.bind('none', 'absent', this.policy.ruleNoHeader())
    this.#apiV1Retired = this.apiV1RetiresOn !== undefined && today >= this.apiV1RetiresOn
    const changed = recs.flatMap((rec, i) => (rec.state === before[i] ? [] : [{ rec, was: before[i]! }]))
    return { first, dayChanged, changed }
  }

  /** Treats `rec` as retired from today until `untilMs` (the caller rebuilds). */
  learn(rec: VersionRecord, evidence: Evidence, untilMs: number): void {
    rec.learnedOn = this.#today
    rec.learned = { untilMs, evidence, confirmations: 0 }
    this.#nextLapseMs = Math.min(this.#nextLapseMs, untilMs)
  }

  /** Another 410 for `rec`: when its retirement was learned, that now holds until `untilMs` (returns whether it was). */
  confirm(rec: VersionRecord, untilMs: number): boolean {
    const learned = rec.learned
    if (learned === undefined) return false
    learned.untilMs = untilMs
    learned.confirmations++
    this.#nextLapseMs = Math.min(this.#nextLapseMs, untilMs)
    return true
  }

  /** Drops the learned retirements whose time is up (none confirmed them) and returns them; the caller rebuilds when any. */
  lapse(nowMs: number): { readonly rec: VersionRecord; readonly learned: Learned }[] {
    let next = Number.POSITIVE_INFINITY
    const lapsed: { readonly rec: VersionRecord; readonly learned: Learned }[] = []
    for (const rec of this.byText.values()) {
      const learned = rec.learned
      if (learned === undefined) continue
      if (learned.untilMs > nowMs) {
        next = Math.min(next, learned.untilMs)
        continue
      }
      rec.learned = undefined
      rec.learnedOn = undefined
      lapsed.push({ rec, learned })
    }
    this.#nextLapseMs = next
    return lapsed
  }

  private routeFor(rec: VersionRecord): Route {
    return this.bind(rec.v.text, rec.state, this.policy.rule(rec))
  }

  private bind(asked: string, state: string, ruling: Ruling<VersionRecord>): Route {
    return { ruling, counts: this.counting.route(asked, state, ruling), gated: new Map() }
  }

  private add(v: Version, entry: CalendarEntry | undefined): VersionRecord {
    const rec: VersionRecord = {
      v,
      entry,
      released: entry?.released ? dayOfIso(entry.released) : undefined,
      retired: entry?.retired ? dayOfIso(entry.retired) : undefined,
      learnedOn: undefined,
      learned: undefined,
      state: 'unknown',
      retires: undefined,
      deprecation: undefined,
      route: undefined as unknown as Route, // set by rebuild()/addUnknown() before any use
    }
    this.byText.set(v.text, rec)
    return rec
  }
}

/**
 * The Versioning the proxy calls: per request, the route of its version in today's table; per upstream
 * answer, 410s gathered into learned retirements (docs/development.md, "Layout", names its modules).
 */
import { loadCalendar, withRetirements, type Calendar } from './calendar.js'
import { VersionCounting } from './counting.js'
import { DAY_MS, dayOfMs, type Day } from './days.js'
import { ApiV1RetiredError, BadVersionHeaderError, VersionRetiredError, VersionTooOldError } from './errors.js'
import { GoneAnswers } from './evidence.js'
import { VersionLogs } from './logs.js'
import { gateRuling, passDecision, problemText, type Ruling } from './policy.js'
import type { VersionSettings } from './settings.js'
import { versionsSnapshot } from './snapshot.js'
import type {
  VersionDecision,
  VersionedEndpoint,
  Versioning,
  VersioningDeps,
  UpstreamSource,
  VersionsSnapshot,
} from './types.js'
import { compareVersions, parseVersion, readVersionHeader, type Version } from './version.js'
import { VersionTable, type Route, type VersionRecord } from './version-table.js'

export class VersionEngine implements Versioning {
  readonly headerName: string
  private readonly settings: VersionSettings
  private readonly calendar: Calendar
  private readonly now: () => Date
  private readonly counting: VersionCounting
  private readonly table: VersionTable
  private readonly logs: VersionLogs
  private readonly gone: GoneAnswers
  private readonly sinceCache = new Map<string, Version | null>()
  // While the clock reads within [heldFromMs, heldUntilMs), today's table needs no work (see hold()).
  private heldFromMs = 0
  private heldUntilMs = -1

  constructor(settings: VersionSettings, deps: VersioningDeps) {
    this.settings = settings
    this.headerName = settings.header.toLowerCase()
    this.now = deps.now ?? (() => new Date())
    this.calendar = withRetirements(deps.calendar ?? loadCalendar(settings.calendarFile), settings.retirements)
    this.logs = new VersionLogs(deps.log, settings)
    this.counting = new VersionCounting(deps.registry, deps.orgs, () => this.retirements())
    this.gone = new GoneAnswers({
      minAnswers: settings.learnMinAnswers,
      minInstances: settings.learnMinInstances,
      minEndpoints: settings.learnMinEndpoints,
      windowMs: settings.learnWindowMs,
    })
    this.table = new VersionTable(settings, this.calendar, this.counting)
    this.tick()
  }

  decide(
    headerValue: string | readonly string[] | undefined,
    endpoint: VersionedEndpoint,
    instance = '-',
  ): VersionDecision {
    this.tick()
    let route: Route
    if (headerValue === undefined) {
      route = this.table.noHeader
    } else {
      let rec = typeof headerValue === 'string' ? this.table.get(headerValue) : undefined
      if (rec === undefined) {
        rec = this.lookUp(headerValue, instance)
        if (rec === undefined) return this.decideOther(headerValue, endpoint, instance)
      }
      route = rec.route
    }
    route.counts.request(instance)
    const ruling = route.ruling
    if (ruling.kind === 'reject') throw new VersionRetiredError(ruling.message)
    const upstream = ruling.upstream
    if (upstream === undefined || endpoint.since === undefined || this.settings.gate === 'off') return ruling.decision
    const since = this.sinceOf(endpoint.since)
    if (since === null || compareVersions(upstream.v, since) >= 0) return ruling.decision
    return this.gate(route, ruling, upstream, endpoint)
  }

  observeUpstream(decision: VersionDecision, status: number, source: UpstreamSource): void {
    const version = decision.upstream
    if (version === undefined || !this.settings.learnRetirements) return
    if (status < 300) {
      // Nearly every answer: one comparison unless a version has 410s on record.
      if (status >= 200 && this.gone.pending) this.gone.succeeded(version)
      return
    }
    if (status !== 410) return
    this.tick()
    const rec = this.table.get(version)
    if (rec === undefined || rec.state === 'unreleased') return
    const nowMs = this.now().getTime()
    const untilMs = nowMs + this.settings.learnExpiryMs
    // A request sent before the retirement was learned (or a rewrite's target) confirms it.
    if (this.table.confirm(rec, untilMs)) {
      this.hold()
      return
    }
    if (rec.state === 'retired') return
    // The newest released version cannot be retired: a 410 for it is about the resource.
    const newest = this.table.newestReleased
    if (newest !== undefined && compareVersions(rec.v, newest.v) >= 0) return
    const evidence = this.gone.gone(rec.v.text, { atMs: nowMs, instance: source.instance, endpoint: source.endpoint })
    if (evidence === undefined) return
    this.table.learn(rec, evidence, untilMs)
    this.counting.learned(rec.v.text)
    this.logs.learned(rec, evidence, untilMs, this.table.today)
    this.rebuild(this.table.today)
    this.hold()
  }

  rejectApiV1(): void {
    this.tick()
    if (this.table.apiV1Retired) throw new ApiV1RetiredError(this.calendar.apiV1!.retired)
  }

  snapshot(): VersionsSnapshot {
    this.tick()
    return versionsSnapshot({
      settings: this.settings,
      calendar: this.calendar,
      table: this.table,
      counting: this.counting,
      gone: this.gone,
    })
  }

  // --- per request, off the common path ---------------------------------------------------------

  /** A header value not found as is: validate it; unknown well-formed versions get a record while there is room. */
  private lookUp(value: string | readonly string[], instance: string): VersionRecord | undefined {
    const read = readVersionHeader(value)
    if (!read.ok) {
      this.counting.malformed.request(instance)
      throw new BadVersionHeaderError(
        this.settings.header,
        this.table.exampleVersion,
        problemText(read.problem, read.text),
      )
    }
    return this.table.get(read.version.text) ?? this.table.addUnknown(read.version)
  }

  /** A well-formed unknown version past MAX_UNKNOWN_VERSIONS: passed through, counted as `other`. */
  private decideOther(
    value: string | readonly string[],
    endpoint: VersionedEndpoint,
    instance: string,
  ): VersionDecision {
    const read = readVersionHeader(value)
    if (!read.ok) throw new Error('unreachable: lookUp validated the header')
    this.counting.other.request(instance)
    const text = read.version.text
    const decision = passDecision(text)
    const since = endpoint.since === undefined || this.settings.gate === 'off' ? null : this.sinceOf(endpoint.since)
    if (since === null || compareVersions(read.version, since) >= 0) return decision
    const mode = this.settings.gate === 'reject' ? 'reject' : 'warn'
    const gated = gateRuling(mode, decision, endpoint.id, since.text, text)
    this.counting.gate('other', endpoint.id, mode).n++
    if (gated.kind === 'reject') throw new VersionTooOldError(endpoint.id, since.text, text)
    return gated.decision
  }

  /** The request's version is older than its endpoint: warn (a decision cached per endpoint) or reject. */
  private gate(
    route: Route,
    ruling: Extract<Ruling<VersionRecord>, { kind: 'forward' }>,
    upstream: VersionRecord,
    endpoint: VersionedEndpoint,
  ): VersionDecision {
    let gated = route.gated.get(endpoint.id)
    if (gated === undefined) {
      const mode = this.settings.gate === 'reject' ? 'reject' : 'warn'
      gated = {
        ruling: gateRuling(mode, ruling.decision, endpoint.id, endpoint.since!, upstream.v.text),
        counted: this.counting.gate(upstream.v.text, endpoint.id, mode),
      }
      route.gated.set(endpoint.id, gated)
    }
    gated.counted.n++
    if (gated.ruling.kind === 'reject') throw new VersionTooOldError(endpoint.id, gated.ruling.since, upstream.v.text)
    return gated.ruling.decision
  }

  private sinceOf(text: string): Version | null {
    let v = this.sinceCache.get(text)
    if (v === undefined) this.sinceCache.set(text, (v = parseVersion(text) ?? null))
    return v
  }

  // --- once a day, and when learned retirements change ------------------------------------------

  /** Per call: one clock read and two comparisons while today's table holds. */
  private tick(): void {
    const ms = this.now().getTime()
    if (ms < this.heldFromMs || ms >= this.heldUntilMs) this.refresh(ms)
  }

  /** A new day (or the clock went back), or a learned retirement is due to lapse. */
  private refresh(ms: number): void {
    const day = dayOfMs(ms)
    if (day !== this.table.today) this.rebuild(day)
    if (ms >= this.table.nextLapseMs) this.lapse(ms)
    this.hold()
  }

  /** Today's table holds from the day's start until its end or the next lapse, whichever comes first. */
  private hold(): void {
    this.heldFromMs = this.table.today * DAY_MS
    this.heldUntilMs = Math.min(this.heldFromMs + DAY_MS, this.table.nextLapseMs)
  }

  private rebuild(today: Day): void {
    const rebuilt = this.table.rebuild(today)
    if (rebuilt.first) this.logs.calendarLoaded(this.table, this.calendar.source)
    else for (const { rec, was } of rebuilt.changed) this.logs.stateChanged(rec, was, today)
    if (rebuilt.dayChanged) this.logs.settingsTargets(this.table)
  }

  /** Learned retirements whose time is up and that no 410 confirmed: the version is back to what the calendar says. */
  private lapse(nowMs: number): void {
    const lapsed = this.table.lapse(nowMs)
    for (const { rec, learned } of lapsed) this.logs.lapsed(rec, learned)
    if (lapsed.length > 0) this.rebuild(this.table.today)
  }

  /** For the retirement gauge, at scrape time: every version with a retirement day. */
  private *retirements(): Iterable<readonly [string, Day]> {
    this.tick()
    for (const rec of this.table.records()) if (rec.retires !== undefined) yield [rec.v.text, rec.retires]
  }
}

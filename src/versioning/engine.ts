import { loadCalendar, withRetirements, type Calendar, type CalendarEntry } from './calendar.js'
import { DAY_MS, dayOfIso, dayOfMs, httpDate, isoOfDay, structuredDate, type Day } from './days.js'
import { GoneAnswers, type Evidence } from './evidence.js'
import { ApiV1RetiredError, BadVersionHeaderError, VersionRetiredError, VersionTooOldError } from './errors.js'
import { VERSION_RESPONSE_HEADERS as H } from './headers.js'
import { createVersionMetrics, type Cell, type OrgLabels, type RequestCell, type VersionMetrics } from './metrics.js'
import type { VersionSettings } from './settings.js'
import type {
  VersionDecision,
  VersionedEndpoint,
  Versioning,
  VersioningDeps,
  VersioningLog,
  UpstreamSource,
  VersionState,
  VersionStateName,
  VersionsSnapshot,
} from './types.js'
import { compareVersions, MAX_VERSION_LENGTH, parseVersion, readVersionHeader, type HeaderProblem, type Version } from './version.js'

/** Distinct versions outside the calendar tracked one by one (own metrics label, learnable); the rest share `other`. */
export const MAX_UNKNOWN_VERSIONS = 32
/** A pinned version retiring within this many days is warned about in the log, once a day. */
const PIN_WARNING_DAYS = 30

const NO_HEADERS: Readonly<Record<string, string>> = Object.freeze({})
const NO_WARNINGS: readonly string[] = Object.freeze([])

/** What happens today to a request naming one version (or to requests without the header). */
type Route =
  | {
      readonly kind: 'forward'
      readonly decision: VersionDecision
      /** the version sent upstream (undefined: no header, `pass`) */
      readonly upstream: Rec | undefined
      readonly requests: RequestCell
      readonly rewrites: Cell | undefined
      /** gate outcomes per endpoint id, filled lazily, dropped with the route at the next day */
      readonly gated: Map<string, GateOutcome>
    }
  | { readonly kind: 'reject'; readonly message: string; readonly requests: RequestCell; readonly rejections: Cell }

type GateOutcome =
  | { readonly kind: 'warn'; readonly decision: VersionDecision; readonly warnings: Cell }
  | { readonly kind: 'reject'; readonly since: string; readonly rejections: Cell }

/** One version the versioning knows: from the calendar, a rewrite map or pin, or seen in a request. */
interface Rec {
  readonly v: Version
  /** its metrics label: the version itself (bounded: calendar + settings + MAX_UNKNOWN_VERSIONS) */
  readonly label: string
  readonly entry: CalendarEntry | undefined
  readonly released: Day | undefined
  readonly retired: Day | undefined
  learnedOn: Day | undefined
  /** a retirement learned from 410s: what it rests on and when it lapses unless confirmed */
  learned: { untilMs: number; readonly evidence: Evidence; confirmations: number } | undefined
  seen: boolean
  requests: number
  // Recomputed each day:
  state: VersionStateName
  retires: Day | undefined
  deprecation: Day | undefined
  route: Route
}

export class VersionEngine implements Versioning {
  readonly headerName: string
  private readonly settings: VersionSettings
  private readonly calendar: Calendar
  private readonly now: () => Date
  private readonly log: VersioningLog
  private readonly metrics: VersionMetrics
  private readonly byText = new Map<string, Rec>()
  /** calendar versions ascending: the candidates for `next` and `latest` */
  private readonly calendarRecs: Rec[] = []
  private unknownCount = 0
  private readonly sinceCache = new Map<string, Version | null>()

  // The day the tables below were computed for, as [start, end) in ms.
  private today: Day = Number.NaN
  private dayStartMs = 0
  private dayEndMs = -1
  private latest: Rec | undefined
  /** the newest calendar version released by today: never learned as retired, nor anything newer */
  private newestReleased: Rec | undefined
  private readonly gone: GoneAnswers
  /** the earliest moment a learned retirement lapses (Infinity: none learned) */
  private nextLapseMs = Number.POSITIVE_INFINITY
  private noHeader!: Route
  private noHeaderRequests = 0
  private malformed = 0
  private exampleVersion = '2.11'
  private apiV1Retired = false
  private readonly malformedCells: { readonly requests: RequestCell; readonly rejections: Cell }
  private readonly otherCell: RequestCell
  private readonly orgs: OrgLabels | undefined

  constructor(settings: VersionSettings, deps: VersioningDeps) {
    this.settings = settings
    this.headerName = settings.header.toLowerCase()
    this.now = deps.now ?? (() => new Date())
    this.log = deps.log
    this.calendar = withRetirements(deps.calendar ?? loadCalendar(settings.calendarFile), settings.retirements)
    this.orgs = deps.orgs
    this.metrics = createVersionMetrics(deps.registry, () => this.retirementDays(), deps.orgs)
    this.malformedCells = {
      requests: this.metrics.requests.cell({ version: 'invalid', state: 'invalid' }),
      rejections: this.metrics.rejections.cell({ version: 'invalid', reason: 'malformed' }),
    }
    this.otherCell = this.metrics.requests.cell({ version: 'other', state: 'unknown' })
    this.gone = new GoneAnswers({
      minAnswers: settings.learnMinAnswers,
      minInstances: settings.learnMinInstances,
      minEndpoints: settings.learnMinEndpoints,
      windowMs: settings.learnWindowMs,
    })

    for (const entry of this.calendar.versions) this.calendarRecs.push(this.addRec(parseVersion(entry.version)!, entry))
    // Versions named by the settings get records too, so that routes can point at them.
    const named = [...Object.keys(settings.rewriteMap), ...Object.values(settings.rewriteMap), ...(settings.pin ? [settings.pin] : [])]
    for (const text of named) if (!this.byText.has(text)) this.addRec(parseVersion(text)!, undefined)
    this.tick()
  }

  decide(headerValue: string | readonly string[] | undefined, endpoint: VersionedEndpoint, instance = '-'): VersionDecision {
    this.tick()
    let rec: Rec | undefined
    let route: Route
    if (headerValue === undefined) {
      route = this.noHeader
      this.noHeaderRequests++
    } else {
      rec = typeof headerValue === 'string' ? this.byText.get(headerValue) : undefined
      if (rec === undefined) {
        rec = this.lookUp(headerValue, instance)
        if (rec === undefined) return this.decideOther(headerValue, endpoint, instance)
      }
      route = rec.route
      rec.requests++
      if (!rec.seen) rec.seen = true
    }
    route.requests.count(instance, this.orgs)
    if (route.kind === 'reject') {
      route.rejections.n++
      throw new VersionRetiredError(route.message)
    }
    const upstream = route.upstream
    if (route.rewrites !== undefined) {
      route.rewrites.n++
      if (upstream !== undefined && !upstream.seen) upstream.seen = true
    }
    if (upstream === undefined || endpoint.since === undefined || this.settings.gate === 'off') return route.decision
    const since = this.sinceOf(endpoint.since)
    if (since === null || compareVersions(upstream.v, since) >= 0) return route.decision
    return this.gate(route, upstream, endpoint)
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
    const rec = this.byText.get(version)
    if (rec === undefined || rec.state === 'unreleased') return
    const nowMs = this.now().getTime()
    if (rec.learned !== undefined) {
      // A request sent before the retirement was learned (or a rewrite's target) confirms it.
      rec.learned.untilMs = nowMs + this.settings.learnExpiryMs
      rec.learned.confirmations++
      this.nextLapseMs = Math.min(this.nextLapseMs, rec.learned.untilMs)
      return
    }
    if (rec.state === 'retired') return
    // The newest released version cannot be retired: a 410 for it is about the resource.
    if (this.newestReleased !== undefined && compareVersions(rec.v, this.newestReleased.v) >= 0) return
    const evidence = this.gone.gone(rec.v.text, { atMs: nowMs, instance: source.instance, endpoint: source.endpoint })
    if (evidence === undefined) return
    this.learn(rec, evidence, nowMs)
  }

  private learn(rec: Rec, evidence: Evidence, nowMs: number): void {
    rec.learnedOn = this.today
    rec.learned = { untilMs: nowMs + this.settings.learnExpiryMs, evidence, confirmations: 0 }
    this.nextLapseMs = Math.min(this.nextLapseMs, rec.learned.untilMs)
    this.metrics.learned.cell({ version: rec.label }).n++
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
        expires: new Date(rec.learned.untilMs).toISOString(),
      },
      `the upstream answered 410 for API version ${rec.v.text}, which the calendar says is ${rec.state}, ${evidence.answers} times from ${evidence.instances.length} instances on ${evidence.endpoints.length} endpoints with no success in between: treating it as retired (on this replica) until ${new Date(rec.learned.untilMs).toISOString()} unless confirmed; add "retired: ${isoOfDay(this.today)}" for it to the calendar`,
    )
    this.rebuild(this.today)
  }

  /** Learned retirements whose time is up and that no 410 confirmed: the version is back to what the calendar says. */
  private lapse(nowMs: number): void {
    let next = Number.POSITIVE_INFINITY
    let changed = false
    for (const rec of this.byText.values()) {
      const learned = rec.learned
      if (learned === undefined) continue
      if (learned.untilMs > nowMs) {
        next = Math.min(next, learned.untilMs)
        continue
      }
      rec.learned = undefined
      rec.learnedOn = undefined
      changed = true
      this.log.warn(
        { version: rec.v.text, learnedFrom: learned.evidence.answers, confirmations: learned.confirmations },
        `the retirement of API version ${rec.v.text} learned from upstream 410s has lapsed: requests for it follow the calendar again`,
      )
    }
    this.nextLapseMs = next
    if (changed) this.rebuild(this.today)
  }

  rejectApiV1(): void {
    this.tick()
    if (this.apiV1Retired) throw new ApiV1RetiredError(this.calendar.apiV1!.retired)
  }

  snapshot(): VersionsSnapshot {
    this.tick()
    const s = this.settings
    const recs = [...this.byText.values()].sort((a, b) => compareVersions(a.v, b.v))
    const nh = this.noHeader
    return {
      today: isoOfDay(this.today),
      header: s.header,
      calendar: this.calendar.source,
      policy: { retired: s.retired, rewriteTo: s.rewriteTo, missing: s.missing, ...(s.pin ? { pin: s.pin } : {}), gate: s.gate },
      ...(this.latest ? { latest: this.latest.v.text } : {}),
      versions: recs.map((r) => this.stateOf(r)),
      noHeader: {
        action: nh.kind === 'reject' ? 'reject' : nh.decision.action === 'pin' ? 'pin' : 'pass',
        ...(nh.kind === 'forward' && nh.decision.upstream ? { upstream: nh.decision.upstream } : {}),
        requests: this.noHeaderRequests,
      },
      malformed: this.malformed,
      ...(this.calendar.apiV1 ? { apiV1: { retired: this.calendar.apiV1.retired, isRetired: this.apiV1Retired } } : {}),
    }
  }

  // --- per request, off the common path ---------------------------------------------------------

  /** A header value not found as is: validate it; unknown well-formed versions get a record while there is room. */
  private lookUp(value: string | readonly string[], instance: string): Rec | undefined {
    const read = readVersionHeader(value)
    if (!read.ok) {
      this.malformed++
      this.malformedCells.requests.count(instance, this.orgs)
      this.malformedCells.rejections.n++
      throw new BadVersionHeaderError(this.settings.header, this.exampleVersion, problemText(read.problem, read.text))
    }
    const known = this.byText.get(read.version.text)
    if (known !== undefined) return known
    if (this.unknownCount >= MAX_UNKNOWN_VERSIONS) return undefined
    this.unknownCount++
    const rec = this.addRec(read.version, undefined)
    this.computeDay(rec)
    rec.route = this.routeFor(rec)
    return rec
  }

  /** A well-formed unknown version past MAX_UNKNOWN_VERSIONS: passed through, counted as `other`. */
  private decideOther(value: string | readonly string[], endpoint: VersionedEndpoint, instance: string): VersionDecision {
    const read = readVersionHeader(value)
    if (!read.ok) throw new Error('unreachable: lookUp validated the header')
    this.otherCell.count(instance, this.orgs)
    const text = read.version.text
    const decision: VersionDecision = { requested: text, upstream: text, action: 'pass', responseHeaders: NO_HEADERS, warnings: NO_WARNINGS }
    const since = endpoint.since === undefined || this.settings.gate === 'off' ? null : this.sinceOf(endpoint.since)
    if (since === null || compareVersions(read.version, since) >= 0) return decision
    const message = gateMessage(endpoint.id, since.text, text)
    if (this.settings.gate === 'reject') {
      this.metrics.rejections.cell({ version: 'other', reason: 'gate' }).n++
      throw new VersionTooOldError(endpoint.id, since.text, text)
    }
    this.metrics.gateWarnings.cell({ version: 'other', endpoint: endpoint.id }).n++
    return { ...decision, responseHeaders: { [H.warning]: message }, warnings: [message] }
  }

  /** The request's version is older than its endpoint: warn (a cached decision per endpoint) or reject. */
  private gate(route: Extract<Route, { kind: 'forward' }>, upstream: Rec, endpoint: VersionedEndpoint): VersionDecision {
    let outcome = route.gated.get(endpoint.id)
    if (outcome === undefined) {
      const since = endpoint.since!
      if (this.settings.gate === 'reject') {
        outcome = { kind: 'reject', since, rejections: this.metrics.rejections.cell({ version: upstream.label, reason: 'gate' }) }
      } else {
        const message = gateMessage(endpoint.id, since, upstream.v.text)
        const d = route.decision
        outcome = {
          kind: 'warn',
          decision: Object.freeze({
            ...d,
            responseHeaders: Object.freeze({ ...d.responseHeaders, [H.warning]: message }),
            warnings: Object.freeze([...d.warnings, message]),
          }),
          warnings: this.metrics.gateWarnings.cell({ version: upstream.label, endpoint: endpoint.id }),
        }
      }
      route.gated.set(endpoint.id, outcome)
    }
    if (outcome.kind === 'reject') {
      outcome.rejections.n++
      throw new VersionTooOldError(endpoint.id, outcome.since, upstream.v.text)
    }
    outcome.warnings.n++
    return outcome.decision
  }

  private sinceOf(text: string): Version | null {
    let v = this.sinceCache.get(text)
    if (v === undefined) this.sinceCache.set(text, (v = parseVersion(text) ?? null))
    return v
  }

  // --- once a day (and after a learned retirement) ----------------------------------------------

  private tick(): void {
    const ms = this.now().getTime()
    if (ms >= this.dayEndMs || ms < this.dayStartMs) this.rebuild(dayOfMs(ms))
    if (ms >= this.nextLapseMs) this.lapse(ms)
  }

  private rebuild(today: Day): void {
    const first = Number.isNaN(this.today)
    const dayChanged = today !== this.today
    const before = new Map([...this.byText.values()].map((r) => [r, r.state]))
    this.today = today
    this.dayStartMs = today * DAY_MS
    this.dayEndMs = this.dayStartMs + DAY_MS
    for (const rec of this.byText.values()) this.computeDay(rec)
    this.latest = this.calendarRecs.findLast(isAlive)
    this.newestReleased = this.calendarRecs.findLast((r) => r.released === undefined || today >= r.released)
    this.exampleVersion = this.latest?.v.text ?? this.exampleVersion
    for (const rec of this.byText.values()) rec.route = this.routeFor(rec)
    this.noHeader = this.noHeaderRoute()
    const v1 = this.calendar.apiV1
    this.apiV1Retired = v1 !== undefined && today >= dayOfIso(v1.retired)
    if (first) this.logCalendar()
    else this.logChanges(before)
    if (dayChanged) this.checkSettingsTargets()
  }

  private computeDay(rec: Rec): void {
    const today = this.today
    const retires = minDay(rec.retired, rec.learnedOn)
    rec.retires = retires
    rec.state =
      retires !== undefined && today >= retires
        ? 'retired'
        : rec.released !== undefined && today < rec.released
          ? 'unreleased'
          : rec.entry === undefined
            ? 'unknown'
            : retires !== undefined
              ? 'deprecated'
              : 'supported'
    rec.deprecation = rec.state === 'deprecated' ? this.deprecationDay(rec, retires!) : undefined
  }

  /** The `Deprecation` date: the calendar's, else the release of the next version, never after the retirement. */
  private deprecationDay(rec: Rec, retires: Day): Day {
    if (rec.entry?.deprecated) return dayOfIso(rec.entry.deprecated)
    const successor = this.calendarRecs.find((r) => compareVersions(r.v, rec.v) > 0 && r.released !== undefined)
    return successor?.released !== undefined ? Math.min(successor.released, retires) : retires
  }

  private routeFor(rec: Rec): Route {
    const requests = this.metrics.requests.cell({ version: rec.label, state: rec.state })
    if (rec.state !== 'retired') return this.forward(requests, rec.v.text, rec, 'pass')
    const target = this.settings.retired === 'rewrite' ? this.rewriteTarget(rec) : undefined
    if (target === undefined) {
      return { kind: 'reject', message: this.retiredMessage(rec), requests, rejections: this.metrics.rejections.cell({ version: rec.label, reason: 'retired' }) }
    }
    const notice = `API version ${rec.v.text} ${this.retiredPhrase(rec)}; this request was sent as ${target.v.text}`
    return this.forward(requests, rec.v.text, target, 'rewrite', rec, notice)
  }

  private noHeaderRoute(): Route {
    const requests = this.metrics.requests.cell({ version: 'none', state: 'absent' })
    const pinText = this.settings.missing === 'pin' ? this.settings.pin : undefined
    if (pinText === undefined) {
      return {
        kind: 'forward',
        decision: Object.freeze({ requested: undefined, upstream: undefined, action: 'pass', responseHeaders: NO_HEADERS, warnings: NO_WARNINGS }),
        upstream: undefined,
        requests,
        rewrites: undefined,
        gated: new Map(),
      }
    }
    const pin = this.byText.get(pinText)!
    const header = this.settings.header
    if (pin.state !== 'retired') {
      return this.forward(requests, undefined, pin, 'pin', undefined, `no ${header} header: sent as ${pin.v.text} (versions.pin)`)
    }
    const target = this.settings.retired === 'rewrite' ? this.rewriteTarget(pin) : undefined
    if (target === undefined) {
      return {
        kind: 'reject',
        message: `Requests without the ${header} header are sent as ${pin.v.text} (setting versions.pin), and API version ${pin.v.text} ${this.retiredPhrase(pin)}; send the header with ${this.moveTo(pin)}`,
        requests,
        rejections: this.metrics.rejections.cell({ version: 'none', reason: 'retired' }),
      }
    }
    const notice = `no ${header} header: the pinned version ${pin.v.text} ${this.retiredPhrase(pin)}; this request was sent as ${target.v.text}`
    return this.forward(requests, undefined, target, 'pin', pin, notice)
  }

  private forward(
    requests: RequestCell,
    requested: string | undefined,
    upstream: Rec,
    action: VersionDecision['action'],
    rewrittenFrom?: Rec,
    notice?: string,
  ): Route {
    const headers: Record<string, string> = {}
    if (action !== 'pass') headers[H.used] = upstream.v.text
    if (notice !== undefined) headers[H.notice] = notice
    if (upstream.state === 'deprecated' && this.settings.deprecationHeaders) {
      headers[H.deprecation] = structuredDate(upstream.deprecation!)
      headers[H.sunset] = httpDate(upstream.retires!)
    }
    const decision: VersionDecision = Object.freeze({
      requested,
      upstream: upstream.v.text,
      action,
      ...(rewrittenFrom ? { rewrittenFrom: rewrittenFrom.v.text } : {}),
      responseHeaders: Object.keys(headers).length > 0 ? Object.freeze(headers) : NO_HEADERS,
      warnings: notice !== undefined ? Object.freeze([notice]) : NO_WARNINGS,
    })
    const from = requested === undefined ? 'none' : (this.byText.get(requested)?.label ?? 'other')
    const rewrites = action === 'pass' ? undefined : this.metrics.rewrites.cell({ from, to: upstream.label })
    return { kind: 'forward', decision, upstream, requests, rewrites, gated: new Map() }
  }

  /** Where `rewrite` sends a retired version today; undefined → it is answered 410. Never to an older version than asked for (the settings refuse a map that would). */
  private rewriteTarget(rec: Rec): Rec | undefined {
    switch (this.settings.rewriteTo) {
      case 'next':
        return this.nextAlive(rec)
      case 'latest':
        return this.latest !== undefined && compareVersions(this.latest.v, rec.v) > 0 ? this.latest : undefined
      case 'map': {
        const to = this.settings.rewriteMap[rec.v.text]
        const target = to === undefined ? undefined : this.byText.get(to)
        return target !== undefined && compareVersions(target.v, rec.v) > 0 && (isAlive(target) || target.state === 'unknown') ? target : undefined
      }
    }
  }

  private nextAlive(rec: Rec): Rec | undefined {
    return this.calendarRecs.find((r) => isAlive(r) && compareVersions(r.v, rec.v) > 0)
  }

  /** Where a client should move: only ever to a newer version than it named. */
  private moveTo(rec: Rec): string {
    const next = this.nextAlive(rec)
    if (next === undefined) return `a version newer than ${rec.v.text} (the calendar lists none that is supported today)`
    return next === this.latest ? next.v.text : `${next.v.text} or later (the latest is ${this.latest!.v.text})`
  }

  private retiredPhrase(rec: Rec): string {
    return rec.learnedOn !== undefined && (rec.retired === undefined || rec.learnedOn < rec.retired)
      ? `is retired (the API answered 410 for it on ${isoOfDay(rec.learnedOn)})`
      : `was retired on ${isoOfDay(rec.retires!)}`
  }

  private retiredMessage(rec: Rec): string {
    return `API version ${rec.v.text} ${this.retiredPhrase(rec)}; move to ${this.moveTo(rec)}`
  }

  private addRec(v: Version, entry: CalendarEntry | undefined): Rec {
    const rec: Rec = {
      v,
      label: v.text,
      entry,
      released: entry?.released ? dayOfIso(entry.released) : undefined,
      retired: entry?.retired ? dayOfIso(entry.retired) : undefined,
      learnedOn: undefined,
      learned: undefined,
      seen: false,
      requests: 0,
      state: 'unknown',
      retires: undefined,
      deprecation: undefined,
      route: undefined as unknown as Route, // set by rebuild()/lookUp() before any use
    }
    this.byText.set(v.text, rec)
    return rec
  }

  private *retirementDays(): Iterable<readonly [string, number]> {
    this.tick()
    for (const rec of this.byText.values()) if (rec.seen && rec.retires !== undefined) yield [rec.label, rec.retires]
  }

  private stateOf(r: Rec): VersionState {
    const route = r.route
    const source = r.retires === undefined ? undefined : r.retires === r.learnedOn ? 'learned' : (r.entry?.retiredBy ?? 'calendar')
    return {
      version: r.v.text,
      state: r.state,
      inCalendar: r.entry !== undefined,
      ...(r.entry?.released ? { released: r.entry.released } : {}),
      ...(r.retires !== undefined ? { retiresOn: isoOfDay(r.retires), retirementSource: source, daysUntilRetirement: r.retires - this.today } : {}),
      ...(r.deprecation !== undefined ? { deprecation: isoOfDay(r.deprecation) } : {}),
      action: route.kind === 'reject' ? 'reject' : route.decision.action === 'rewrite' ? 'rewrite' : 'pass',
      ...(route.kind === 'forward' && route.decision.upstream ? { upstream: route.decision.upstream } : {}),
      ...(r.learned !== undefined ? { learned: learnedState(r.learned) } : {}),
      ...(this.gone.count(r.v.text) > 0 ? { recent410s: this.gone.count(r.v.text) } : {}),
      added: r.entry?.added ?? [],
      requests: r.requests,
    }
  }

  // --- logs: once at start, on state changes, and settings that point at retired versions --------

  private logCalendar(): void {
    const by = (state: VersionStateName) => this.calendarRecs.filter((r) => r.state === state).map((r) => r.v.text)
    this.log.info(
      {
        today: isoOfDay(this.today),
        calendar: this.calendar.source,
        latest: this.latest?.v.text,
        deprecated: this.calendarRecs.filter((r) => r.state === 'deprecated').map((r) => `${r.v.text} retires ${isoOfDay(r.retires!)}`),
        retired: by('retired'),
        unreleased: by('unreleased'),
        policy: { retired: this.settings.retired, rewriteTo: this.settings.rewriteTo, missing: this.settings.missing, gate: this.settings.gate },
      },
      'API version calendar loaded',
    )
  }

  private logChanges(before: ReadonlyMap<Rec, VersionStateName>): void {
    for (const [rec, was] of before) {
      if (rec.state === was) continue
      const fields = { version: rec.v.text, was, now: rec.state, today: isoOfDay(this.today) }
      if (rec.state === 'retired') {
        const route = rec.route
        const what =
          route.kind === 'reject' ? 'answered 410 by sluice' : `rewritten to ${route.decision.upstream ?? '(none)'}`
        this.log.warn(fields, `API version ${rec.v.text} ${this.retiredPhrase(rec)}: requests for it are now ${what}`)
      } else {
        this.log.info(fields, `API version ${rec.v.text} is now ${rec.state}`)
      }
    }
  }

  private checkSettingsTargets(): void {
    const pin = this.settings.missing === 'pin' && this.settings.pin ? this.byText.get(this.settings.pin) : undefined
    if (pin?.retires !== undefined) {
      const days = pin.retires - this.today
      if (days <= 0) {
        this.log.error({ pin: pin.v.text, retired: isoOfDay(pin.retires) }, `versions.pin ${pin.v.text} is retired; update versions.pin`)
      } else if (days <= PIN_WARNING_DAYS) {
        this.log.warn({ pin: pin.v.text, retires: isoOfDay(pin.retires), days }, `versions.pin ${pin.v.text} retires in ${days} days; update versions.pin`)
      }
    }
    if (this.settings.retired !== 'rewrite' || this.settings.rewriteTo !== 'map') return
    for (const [from, to] of Object.entries(this.settings.rewriteMap)) {
      const target = this.byText.get(to)!
      if (!isAlive(target) && target.state !== 'unknown') {
        this.log.error({ from, to, state: target.state }, `versions.rewriteMap sends ${from} to ${to}, which is ${target.state}: requests for ${from} are answered 410 once it is retired`)
      }
    }
  }
}

/** A learned retirement as /status shows it: counts and endpoint ids, not the instances (they are other organisations). */
function learnedState(l: NonNullable<Rec['learned']>): NonNullable<VersionState['learned']> {
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

const isAlive = (r: Rec): boolean => r.state === 'supported' || r.state === 'deprecated'

const minDay = (a: Day | undefined, b: Day | undefined): Day | undefined =>
  a === undefined ? b : b === undefined ? a : Math.min(a, b)

function gateMessage(endpointId: string, since: string, version: string): string {
  return `${endpointId} was added in API version ${since}; this request uses ${version}`
}

function problemText(problem: HeaderProblem, text: string): string {
  switch (problem) {
    case 'empty':
      return 'it is empty'
    case 'several':
      return 'it holds several values'
    case 'too_long':
      return `it is ${text.length} characters long (at most ${MAX_VERSION_LENGTH})`
    case 'format':
      // At most 16 characters that Node accepted in a header value: safe to quote back.
      return `got ${JSON.stringify(text)}`
  }
}

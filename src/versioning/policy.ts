/**
 * The version policy (docs/versioning.md): what a request naming a version gets on a given day, as
 * plain rules with no cells and no logging, so a rule is read and changed in one place.
 */
import type { CalendarEntry } from './calendar.js'
import { dayOfIso, httpDate, isoOfDay, structuredDate, type Day } from './days.js'
import { VERSION_RESPONSE_HEADERS as H } from './headers.js'
import type { VersionSettings } from './settings.js'
import type { VersionDecision, VersionStateName } from './types.js'
import { compareVersions, MAX_VERSION_LENGTH, type HeaderProblem, type Version } from './version.js'

const NO_HEADERS: Readonly<Record<string, string>> = Object.freeze({})
const NO_WARNINGS: readonly string[] = Object.freeze([])

/** What the policy reads of a version: its dates, and its state today (the version table keeps them). */
export interface VersionFacts {
  readonly v: Version
  readonly entry: CalendarEntry | undefined
  readonly released: Day | undefined
  readonly retired: Day | undefined
  /** the day a retirement was learned from upstream 410s */
  readonly learnedOn: Day | undefined
  readonly state: VersionStateName
  /** the retirement day in force: the calendar's or the learned one, whichever comes first */
  readonly retires: Day | undefined
  /** the `Deprecation` day, set only while `deprecated` */
  readonly deprecation: Day | undefined
}

/** The part of a version's facts that depends on the day. */
export type DayFacts = Pick<VersionFacts, 'state' | 'retires' | 'deprecation'>

/** The versions as they stand today, as the rules below need them. */
export interface VersionsToday<R extends VersionFacts> {
  /** calendar versions, ascending: the candidates for `next` and `latest` */
  readonly calendar: readonly R[]
  /** the newest supported (or deprecated) calendar version today */
  readonly latest: R | undefined
  /** a version by its text; every version the settings name (rewriteMap, pin) is there */
  get(text: string): R | undefined
}

/** What happens today to a request naming one version (or to requests without the header). */
export type Ruling<R> =
  | {
      readonly kind: 'forward'
      readonly decision: VersionDecision
      /** the version sent upstream (undefined: no header, `pass`) */
      readonly upstream: R | undefined
    }
  | { readonly kind: 'reject'; readonly message: string }

/** A request whose version is older than its endpoint, by `versions.gate`: warned about, or refused. */
export type GateRuling =
  { readonly kind: 'warn'; readonly decision: VersionDecision } | { readonly kind: 'reject'; readonly since: string }

export const isAlive = (r: Pick<VersionFacts, 'state'>): boolean => r.state === 'supported' || r.state === 'deprecated'

const minDay = (a: Day | undefined, b: Day | undefined): Day | undefined =>
  a === undefined ? b : b === undefined ? a : Math.min(a, b)

/**
 * A version's state on `today`. A learned retirement counts like a calendar one from the day it was
 * learned; `calendar` (ascending) gives the successor whose release is the default `Deprecation` day.
 */
export function dayFacts(
  rec: Omit<VersionFacts, keyof DayFacts>,
  today: Day,
  calendar: readonly Pick<VersionFacts, 'v' | 'released'>[],
): DayFacts {
  const retires = minDay(rec.retired, rec.learnedOn)
  const state: VersionStateName =
    retires !== undefined && today >= retires
      ? 'retired'
      : rec.released !== undefined && today < rec.released
        ? 'unreleased'
        : rec.entry === undefined
          ? 'unknown'
          : retires !== undefined
            ? 'deprecated'
            : 'supported'
  return { state, retires, deprecation: state === 'deprecated' ? deprecationDay(rec, retires!, calendar) : undefined }
}

/** The `Deprecation` date: the calendar's, else the release of the next version, never after the retirement. */
function deprecationDay(
  rec: Pick<VersionFacts, 'v' | 'entry'>,
  retires: Day,
  calendar: readonly Pick<VersionFacts, 'v' | 'released'>[],
): Day {
  if (rec.entry?.deprecated) return dayOfIso(rec.entry.deprecated)
  const successor = calendar.find((r) => compareVersions(r.v, rec.v) > 0 && r.released !== undefined)
  return successor?.released !== undefined ? Math.min(successor.released, retires) : retires
}

/** How a retired version is described: by its calendar date, or by the day the API's 410s taught it. */
export function retiredPhrase(rec: Pick<VersionFacts, 'learnedOn' | 'retired' | 'retires'>): string {
  return rec.learnedOn !== undefined && (rec.retired === undefined || rec.learnedOn < rec.retired)
    ? `is retired (the API answered 410 for it on ${isoOfDay(rec.learnedOn)})`
    : `was retired on ${isoOfDay(rec.retires!)}`
}

/** The rulings for each version today, from the settings and today's versions. */
export class VersionPolicy<R extends VersionFacts> {
  constructor(
    private readonly settings: VersionSettings,
    private readonly versions: VersionsToday<R>,
  ) {}

  /** A request naming `rec`: passed as is unless retired; a retired one is rewritten (`retired: rewrite` with a target) or answered 410. */
  rule(rec: R): Ruling<R> {
    if (rec.state !== 'retired') return this.forward(rec.v.text, rec, 'pass')
    const target = this.settings.retired === 'rewrite' ? this.rewriteTarget(rec) : undefined
    if (target === undefined)
      return { kind: 'reject', message: `API version ${rec.v.text} ${retiredPhrase(rec)}; move to ${this.moveTo(rec)}` }
    const notice = `API version ${rec.v.text} ${retiredPhrase(rec)}; this request was sent as ${target.v.text}`
    return this.forward(rec.v.text, target, 'rewrite', rec, notice)
  }

  /** A request without the header: passed without one, or sent as `versions.pin` (itself rewritten or refused once retired). */
  ruleNoHeader(): Ruling<R> {
    const pinText = this.settings.missing === 'pin' ? this.settings.pin : undefined
    if (pinText === undefined) {
      return {
        kind: 'forward',
        decision: Object.freeze({
          requested: undefined,
          upstream: undefined,
          action: 'pass',
          responseHeaders: NO_HEADERS,
          warnings: NO_WARNINGS,
        }),
        upstream: undefined,
      }
    }
    const pin = this.versions.get(pinText)!
    const header = this.settings.header
    if (pin.state !== 'retired')
      return this.forward(undefined, pin, 'pin', undefined, `no ${header} header: sent as ${pin.v.text} (versions.pin)`)
    const target = this.settings.retired === 'rewrite' ? this.rewriteTarget(pin) : undefined
    if (target === undefined) {
      return {
        kind: 'reject',
        message: `Requests without the ${header} header are sent as ${pin.v.text} (setting versions.pin), and API version ${pin.v.text} ${retiredPhrase(pin)}; send the header with ${this.moveTo(pin)}`,
      }
    }
    const notice = `no ${header} header: the pinned version ${pin.v.text} ${retiredPhrase(pin)}; this request was sent as ${target.v.text}`
    return this.forward(undefined, target, 'pin', pin, notice)
  }

  /** Where `rewrite` sends a retired version today; undefined → it is answered 410. Never to an older version than asked for (the settings refuse a map that would). */
  rewriteTarget(rec: R): R | undefined {
    const latest = this.versions.latest
    switch (this.settings.rewriteTo) {
      case 'next':
        return this.nextAlive(rec)
      case 'latest':
        return latest !== undefined && compareVersions(latest.v, rec.v) > 0 ? latest : undefined
      case 'map': {
        const to = this.settings.rewriteMap[rec.v.text]
        const target = to === undefined ? undefined : this.versions.get(to)
        return target !== undefined &&
          compareVersions(target.v, rec.v) > 0 &&
          (isAlive(target) || target.state === 'unknown')
          ? target
          : undefined
      }
    }
  }

  private nextAlive(rec: R): R | undefined {
    return this.versions.calendar.find((r) => isAlive(r) && compareVersions(r.v, rec.v) > 0)
  }

  /** Where a client should move: only ever to a newer version than it named. */
  private moveTo(rec: R): string {
    const next = this.nextAlive(rec)
    if (next === undefined)
      return `a version newer than ${rec.v.text} (the calendar lists none that is supported today)`
    const latest = this.versions.latest!
    return next === latest ? next.v.text : `${next.v.text} or later (the latest is ${latest.v.text})`
  }

  /** One decision, frozen: it is shared by every request of the route until the next rebuild. */
  private forward(
    requested: string | undefined,
    upstream: R,
    action: VersionDecision['action'],
    rewrittenFrom?: R,
    notice?: string,
  ): Ruling<R> {
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
    return { kind: 'forward', decision, upstream }
  }
}

/** A well-formed version the versioning does not track: passed as is, with no headers. */
export function passDecision(text: string): VersionDecision {
  return { requested: text, upstream: text, action: 'pass', responseHeaders: NO_HEADERS, warnings: NO_WARNINGS }
}

/**
 * `decision` for a request that uses `version` on an endpoint added in `since`: under `gate: reject`
 * it is refused; otherwise the same decision plus a warning header and log note (frozen: routes cache it).
 */
export function gateRuling(
  mode: 'warn' | 'reject',
  decision: VersionDecision,
  endpointId: string,
  since: string,
  version: string,
): GateRuling {
  if (mode === 'reject') return { kind: 'reject', since }
  const message = `${endpointId} was added in API version ${since}; this request uses ${version}`
  return {
    kind: 'warn',
    decision: Object.freeze({
      ...decision,
      responseHeaders: Object.freeze({ ...decision.responseHeaders, [H.warning]: message }),
      warnings: Object.freeze([...decision.warnings, message]),
    }),
  }
}

/** Why a version header was refused, in the words of the 400's message. */
export function problemText(problem: HeaderProblem, text: string): string {
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

/**
 * API versions (docs/versioning.md): the calendar, the policy for retired and missing versions, deprecation
 * headers, the endpoint gate, learned retirements and metrics. A plain module with no Fastify in
 * it: the proxy calls `decide()` per request before taking a permit, sends `decision.upstream` in
 * the version header, adds `decision.responseHeaders` to the answer and reports the upstream's
 * status to `observeUpstream()`.
 */
import { VersionEngine } from './engine.js'
import type { VersionSettings } from './settings.js'
import type { Versioning, VersioningDeps } from './types.js'

export type {
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
export type { VersionSettings } from './settings.js'
export { ApiV1RetiredError, BadVersionHeaderError, VersionRetiredError, VersionTooOldError } from './errors.js'
export { VERSION_RESPONSE_HEADERS } from './headers.js'
export {
  calendarStatusOn,
  DEFAULT_CALENDAR_FILE,
  loadCalendar,
  parseCalendar,
  retiredByCalendar,
  withRetirements,
  type Calendar,
  type CalendarEntry,
  type CalendarStatus,
} from './calendar.js'

/**
 * Builds the versioning from validated settings. Reads the calendar (unless `deps.calendar` is
 * given) and throws ConfigError naming the bad entry. Everything per version is precomputed here
 * and again only when the injected clock reaches a new (UTC) day or a 410 is learned.
 */
export function createVersioning(settings: VersionSettings, deps: VersioningDeps): Versioning {
  return new VersionEngine(settings, deps)
}

/**
 * API versions (docs/versioning.md), a plain module with no Fastify in it: the proxy calls `decide()`
 * before a permit and reports each upstream status to `observeUpstream()`.
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
 * Builds the versioning, or throws ConfigError naming a bad calendar entry. Everything per version is
 * precomputed, and again only on a new UTC day or a learned retirement.
 */
export function createVersioning(settings: VersionSettings, deps: VersioningDeps): Versioning {
  return new VersionEngine(settings, deps)
}

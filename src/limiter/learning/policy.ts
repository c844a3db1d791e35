import type { LearnOptions } from '../types.js'
import type { LearningSettings } from './settings.js'

/** What the policy reads of an endpoint (the catalog's Endpoint has it). */
export interface LimitOrigin {
  readonly limit: number
  /** `published`, `unlisted` ("–"), `unknown` (not in the catalog) or `override` (`limits.overrides`) */
  readonly limitSource: string
}

/**
 * Which limits are learned and within what bounds (docs/learned-limits.md, "What it does"); undefined:
 * the limit is fixed. Made once per endpoint.
 */
export function learnOptionsOf(endpoint: LimitOrigin, settings: LearningSettings): LearnOptions | undefined {
  if (!settings.enabled) return undefined
  const { floor, idleMs } = settings
  switch (endpoint.limitSource) {
    case 'unlisted':
    case 'unknown':
      return { ceiling: settings.ceiling, floor, idleMs }
    case 'published':
      return settings.lowerPublished && endpoint.limit > floor ? { ceiling: endpoint.limit, floor, idleMs } : undefined
    default:
      return undefined
  }
}

import type { LearnOptions } from '../types.js'
import type { LearningSettings } from './settings.js'

/** What the policy reads of an endpoint (the catalog's Endpoint has it). */
export interface LimitOrigin {
  readonly limit: number
  /** `published`, `unlisted` ("–"), `unknown` (not in the catalog) or `override` (`limits.overrides`) */
  readonly limitSource: string
}

/**
 * Which limits are learned (README "Learned limits"): those the API does not publish ("–" endpoints and
 * unknown paths: from `limits.default`, up to `learning.ceiling`) and, with `learning.lowerPublished`,
 * the published ones (from the published limit, never above it). An operator's `limits.overrides` is
 * taken as given. Undefined: the limit is fixed. Made once per endpoint (the proxy keeps the answer).
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

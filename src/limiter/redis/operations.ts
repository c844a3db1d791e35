import { ACQUIRE_SCRIPT } from './acquire/index.js'
import { ADOPT_SCRIPT } from './adopt/index.js'
import { HEARTBEAT_SCRIPT } from './heartbeat/index.js'
import { RATE_SCRIPT } from './rate/index.js'
import { RELEASE_SCRIPT } from './release/index.js'
import { RENEW_SCRIPT } from './renew/index.js'
import { REUSE_SCRIPT } from './reuse/index.js'
import { ACTIVE_SCRIPT, STATUS_SCRIPT } from './status/index.js'
import { SYNC_SCRIPT } from './sync/index.js'

/** The `operation` label values (one per script), so error counters start at 0 (test/limiter/redis/operations.test.ts checks the list). */
export const REDIS_OPERATIONS: readonly string[] = [
  ACQUIRE_SCRIPT,
  ADOPT_SCRIPT,
  HEARTBEAT_SCRIPT,
  RATE_SCRIPT,
  RELEASE_SCRIPT,
  RENEW_SCRIPT,
  REUSE_SCRIPT,
  STATUS_SCRIPT,
  ACTIVE_SCRIPT,
  SYNC_SCRIPT,
].map((script) => script.name)

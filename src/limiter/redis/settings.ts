import { z } from 'zod'

/** Settings of the Redis backend (docs/redis-limiter.md). `url` unset → the in-process backend. */
export const redisSettingsSchema = z.strictObject({
  /** `redis://[:password@]host:port[/db]` or `rediss://…`; unset → in-process limiter */
  url: z
    .string()
    .regex(/^rediss?:\/\//, 'a redis:// or rediss:// URL')
    .refine((u) => URL.canParse(u), 'not a valid URL (a password with @ : / [ or ] must be percent-encoded)')
    .refine((u) => !URL.canParse(u) || /^\/?\d*$/.test(new URL(u).pathname), 'the database after the port must be a number, e.g. redis://host:6379/0')
    .optional(),
  /** how to reach Redis: one server, Sentinel, or Cluster */
  topology: z.enum(['standalone', 'sentinel', 'cluster']).default('standalone'),
  /** Sentinel: comma-separated host:port list (the url's host is ignored) */
  sentinels: z.string().default(''),
  /** Sentinel: the master group name */
  sentinelName: z.string().default('mymaster'),
  /** Cluster: comma-separated host:port seed nodes (default: the url's host) */
  clusterNodes: z.string().default(''),
  /** prefix of every key */
  keyPrefix: z.string().regex(/^[A-Za-z0-9:_-]+$/).default('sluice'),
  /** a permit's lease; renewed while the upstream works; a dead replica's permits come back within it */
  leaseMs: z.number().int().min(500).default(5_000),
  /** what a replica does while Redis is unreachable */
  fallback: z.enum(['local', 'open', 'closed']).default('local'),
  /** a Redis command that takes longer fails, and the replica switches to its fallback until Redis answers */
  commandTimeoutMs: z.number().int().min(50).default(2_000),
})
export type RedisSettings = z.output<typeof redisSettingsSchema>

import { z } from 'zod'

/** Settings of the Redis backend (docs/redis-limiter.md). `url` unset → the in-process backend. */
export const redisSettingsSchema = z
  .strictObject({
    /** `redis://[[user]:password@]host:port[/db]` or `rediss://…` (TLS); unset → in-process limiter */
    url: z
      .string()
      .regex(/^rediss?:\/\//, 'a redis:// or rediss:// URL')
      .refine((u) => URL.canParse(u), 'not a valid URL (a password with @ : / [ or ] must be percent-encoded)')
      .refine(
        (u) => !URL.canParse(u) || /^\/?\d*$/.test(new URL(u).pathname),
        'the database after the port must be a number, e.g. redis://host:6379/0',
      )
      .optional(),
    /** how to reach Redis: one server, Sentinel, or Cluster */
    topology: z.enum(['standalone', 'sentinel', 'cluster']).default('standalone'),
    /** Sentinel: comma-separated host:port list (the url's host is ignored) */
    sentinels: z.string().default(''),
    /** Sentinel: the master group name */
    sentinelName: z.string().default('mymaster'),
    /** Sentinel: the Sentinels' own ACL user (the master's comes from the url) */
    sentinelUsername: z.string().default(''),
    /** Sentinel: the Sentinels' own password (`requirepass` in sentinel.conf; the master's comes from the url) */
    sentinelPassword: z.string().default(''),
    /** Sentinel: TLS to the Sentinels; unset → as the url (`rediss://` → TLS) */
    sentinelTls: z.boolean().optional(),
    /** TLS: the name the servers' certificates are checked against (and sent as SNI); empty → the host connected to */
    tlsServername: z.string().default(''),
    /** Cluster: comma-separated host:port seed nodes (default: the url's host) */
    clusterNodes: z.string().default(''),
    /** prefix of every key */
    keyPrefix: z
      .string()
      .regex(/^[A-Za-z0-9:_-]+$/)
      .default('sluice'),
    /** a permit's lease; renewed while the upstream works; a dead replica's permits come back within it */
    leaseMs: z.number().int().min(500).default(5_000),
    /** what a replica does while Redis is unreachable */
    fallback: z.enum(['local', 'open', 'closed']).default('local'),
    /** a Redis command that takes longer fails, and the replica switches to its fallback until Redis answers */
    commandTimeoutMs: z.number().int().min(50).default(2_000),
    /** keep a permit for this replica's next request while nobody waits (docs/redis-limiter.md, "The request path on Redis") */
    keepPermits: z.boolean().default(true),
  })
  .superRefine((s, ctx) => {
    // Settings that would be silently ignored are refused, each naming its key (docs/configuration.md, "Redis").
    const sentinelOnly = ['sentinelUsername', 'sentinelPassword', 'sentinelTls'] as const
    if (s.topology !== 'sentinel') {
      for (const key of sentinelOnly) {
        if (s[key] !== undefined && s[key] !== '')
          ctx.addIssue({
            code: 'custom',
            path: [key],
            message: `is for topology: sentinel only (topology is ${s.topology})`,
          })
      }
    }
    // The rest weighs settings against each other and the url, which may come from another source
    // (a Secret's env var beside a settings file): checked once Redis is in use.
    if (s.url === undefined) return
    if (s.sentinelUsername !== '' && s.sentinelPassword === '') {
      ctx.addIssue({
        code: 'custom',
        path: ['sentinelUsername'],
        message: 'needs redis.sentinelPassword (SLUICE_REDIS_SENTINEL_PASSWORD): an ACL user signs in with a password',
      })
    }
    if (s.topology === 'sentinel' && s.sentinels.trim() === '') {
      ctx.addIssue({
        code: 'custom',
        path: ['sentinels'],
        message: 'topology: sentinel needs the Sentinels, host:port,…',
      })
    }
    if (s.tlsServername !== '' && !s.url.startsWith('rediss://') && s.sentinelTls !== true) {
      ctx.addIssue({
        code: 'custom',
        path: ['tlsServername'],
        message: 'is for TLS connections, but none is made: use a rediss:// url (or sentinelTls: true)',
      })
    }
  })
export type RedisSettings = z.output<typeof redisSettingsSchema>

import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis'
import type { RedisSettings } from './settings.js'
import type { RedisClient } from './script.js'

/** The two connections a replica keeps, whatever the number of semaphores: scripts, and its grant channel. */
export interface Connections {
  readonly command: RedisClient
  readonly subscriber: RedisClient
}

const retryStrategy = (times: number): number => Math.min(50 * times, 1_000)

interface Endpoint {
  host: string
  port: number
}

function parseHostList(list: string): Endpoint[] {
  return list
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((s) => {
      const at = s.lastIndexOf(':')
      return at > 0 ? { host: s.slice(0, at), port: Number(s.slice(at + 1)) } : { host: s, port: 6379 }
    })
}

/** What the URL says beyond host and port: credentials, database, TLS. */
function urlOptions(url: URL): RedisOptions {
  const options: RedisOptions = {}
  if (url.username) options.username = decodeURIComponent(url.username)
  if (url.password) options.password = decodeURIComponent(url.password)
  const db = url.pathname.replace(/^\//, '')
  if (db) options.db = Number(db)
  if (url.protocol === 'rediss:') options.tls = {}
  return options
}

export function connect(settings: RedisSettings): Connections {
  const url = new URL(settings.url ?? 'redis://127.0.0.1:6379')
  // Commands fail fast while disconnected (the limiter switches to its fallback instead of piling
  // up work), and a command cut off by a disconnect is not re-sent later: the limiter withdraws its
  // ids itself once Redis is back, so a stale acquire can never reappear behind its back.
  const common: RedisOptions = {
    ...urlOptions(url),
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
    // (the limiter times its scripts itself, see Scripts)
    connectTimeout: Math.max(1_000, settings.commandTimeoutMs),
    retryStrategy,
  }
  // The subscriber only ever sends SUBSCRIBE; it may wait for a connection and resubscribes by itself.
  const subscriberOverrides: RedisOptions = {
    enableOfflineQueue: true,
    maxRetriesPerRequest: null,
    autoResendUnfulfilledCommands: true,
  }

  if (settings.topology === 'cluster') {
    const nodes = settings.clusterNodes ? parseHostList(settings.clusterNodes) : [{ host: url.hostname, port: Number(url.port || 6379) }]
    const { enableOfflineQueue: _q, retryStrategy: _r, ...redisOptions } = common
    const clusterOptions = (offlineQueue: boolean, redis: RedisOptions): ClusterOptions => ({
      enableOfflineQueue: offlineQueue,
      clusterRetryStrategy: retryStrategy,
      redisOptions: redis,
    })
    const { enableOfflineQueue: _sq, ...subscriberRedis } = { ...redisOptions, ...subscriberOverrides }
    return {
      command: new Cluster(nodes, clusterOptions(false, redisOptions)),
      subscriber: new Cluster(nodes, clusterOptions(true, subscriberRedis)),
    }
  }

  const base: RedisOptions =
    settings.topology === 'sentinel'
      ? { ...common, sentinels: parseHostList(settings.sentinels), name: settings.sentinelName, sentinelRetryStrategy: retryStrategy }
      : { ...common, host: url.hostname, port: Number(url.port || 6379) }
  return { command: new Redis(base), subscriber: new Redis({ ...base, ...subscriberOverrides }) }
}

import type { ConnectionOptions } from 'node:tls'
import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis'
import type { RedisSettings } from './settings.js'
import type { RedisClient } from './script.js'

/** The two connections a replica keeps, whatever the number of semaphores: scripts, and its grant channel. */
export interface Connections {
  readonly command: RedisClient
  readonly subscriber: RedisClient
}

/**
 * Reconnect attempts at most 250 ms apart (the fallback's probe): replicas that come back to Redis far
 * apart are over the limit meanwhile — one grants through Redis slots another still fills from its
 * `local` share (docs/redis-limiter.md, "Failure modes"; the soak's 429s after Redis is back).
 */
const retryStrategy = (times: number): number => Math.min(50 * times, 250)

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

/** TLS options for every TLS connection: the CAs are Node's (plus NODE_EXTRA_CA_CERTS), the name checked is tlsServername when set. */
function tlsOptions(settings: RedisSettings): ConnectionOptions {
  return settings.tlsServername ? { servername: settings.tlsServername } : {}
}

/** What the URL says beyond host and port: credentials, database, TLS. */
function urlOptions(url: URL, settings: RedisSettings): RedisOptions {
  const options: RedisOptions = {}
  if (url.username) options.username = decodeURIComponent(url.username)
  if (url.password) options.password = decodeURIComponent(url.password)
  const db = url.pathname.replace(/^\//, '')
  if (db) options.db = Number(db)
  if (url.protocol === 'rediss:') options.tls = tlsOptions(settings)
  return options
}

/**
 * Sentinel: the master's credentials and TLS come from the URL as for one server; the Sentinels have
 * their own (docs/deploy.md, "Sentinel, Cluster and TLS"). ioredis speaks TLS to the master it
 * found only with enableTLSForSentinelMode, and to the Sentinels only with sentinelTLS.
 */
function sentinelOptions(settings: RedisSettings, urlTls: boolean): RedisOptions {
  const options: RedisOptions = {
    sentinels: parseHostList(settings.sentinels),
    name: settings.sentinelName,
    sentinelRetryStrategy: retryStrategy,
    enableTLSForSentinelMode: urlTls,
  }
  if (settings.sentinelUsername) options.sentinelUsername = settings.sentinelUsername
  if (settings.sentinelPassword) options.sentinelPassword = settings.sentinelPassword
  if (settings.sentinelTls ?? urlTls) options.sentinelTLS = tlsOptions(settings)
  return options
}

const keepName: NonNullable<ClusterOptions['dnsLookup']> = (address, callback) => callback(null, address)

export function connect(settings: RedisSettings): Connections {
  const url = new URL(settings.url ?? 'redis://127.0.0.1:6379')
  // Commands fail fast while disconnected (the limiter switches to its fallback instead of piling
  // up work), and a command cut off by a disconnect is not re-sent later: the limiter withdraws its
  // ids itself once Redis is back, so a stale acquire can never reappear behind its back.
  const common: RedisOptions = {
    ...urlOptions(url, settings),
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
    const nodes = settings.clusterNodes
      ? parseHostList(settings.clusterNodes)
      : [{ host: url.hostname, port: Number(url.port || 6379) }]
    const { enableOfflineQueue: _q, retryStrategy: _r, ...redisOptions } = common
    const clusterOptions = (offlineQueue: boolean, redis: RedisOptions): ClusterOptions => ({
      enableOfflineQueue: offlineQueue,
      clusterRetryStrategy: retryStrategy,
      redisOptions: redis,
      // With TLS the startup nodes are reached by the names given, not by the addresses they resolve
      // to, so their certificates are checked against those names (docs/deploy.md, "Sentinel, Cluster and TLS").
      ...(redisOptions.tls ? { dnsLookup: keepName } : {}),
    })
    const { enableOfflineQueue: _sq, ...subscriberRedis } = { ...redisOptions, ...subscriberOverrides }
    return {
      command: new Cluster(nodes, clusterOptions(false, redisOptions)),
      subscriber: new Cluster(nodes, clusterOptions(true, subscriberRedis)),
    }
  }

  const base: RedisOptions =
    settings.topology === 'sentinel'
      ? { ...common, ...sentinelOptions(settings, url.protocol === 'rediss:') }
      : { ...common, host: url.hostname, port: Number(url.port || 6379) }
  return { command: new Redis(base), subscriber: new Redis({ ...base, ...subscriberOverrides }) }
}

/** Resolves once the connection is ready, has failed once, or after `ms`, whichever comes first. */
export function firstReady(command: RedisClient, ms: number): Promise<void> {
  return new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms)
    timer.unref()
    const done = (): void => {
      clearTimeout(timer)
      command.off('ready', done)
      command.off('error', done)
      resolve()
    }
    command.once('ready', done)
    command.once('error', done)
  })
}

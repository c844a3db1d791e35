import { Writable } from 'node:stream'
import { afterAll, beforeAll } from 'vitest'
import { buildApp, type App, type AppDeps } from '../../src/app.js'
import { loadSettings } from '../../src/config/load.js'
import { startSim, type Sim, type SimOptions } from '../../src/sim/index.js'

export interface RunningProxy {
  readonly app: App
  /** e.g. http://127.0.0.1:PORT — requests go to `${url}/v2/...` */
  readonly url: string
  readonly adminUrl: string
  /** every log line written so far, parsed */
  readonly logs: Record<string, unknown>[]
  close(): Promise<void>
}

/**
 * The real proxy, in this process, on free ports. `settings` are the YAML file's shape (nested,
 * camelCase); they are validated exactly as at a real start.
 */
export async function startProxy(
  settings: Record<string, unknown>,
  deps: Omit<AppDeps, 'logStream'> = {},
): Promise<RunningProxy> {
  const logs: Record<string, unknown>[] = []
  const logStream = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString('utf8').split('\n'))
        if (line.trim() !== '') logs.push(JSON.parse(line) as Record<string, unknown>)
      done()
    },
  })
  // A test closes its proxy with its own requests left hanging: no drain and the former 25 s grace unless it asks
  // (the drain of a real process is tested by test/proxy/drain-*.test.ts).
  const shutdown = { drainMs: 0, graceMs: 25_000, ...(settings.shutdown as Record<string, unknown> | undefined) }
  const resolved = loadSettings(
    {},
    { host: '127.0.0.1', adminHost: '127.0.0.1', port: 0, adminPort: 0, ...settings, shutdown },
  )
  // No forward proxy unless a test gives one: a contributor's own HTTPS_PROXY must not reach the local sims.
  const app = await buildApp(resolved, { env: {}, ...deps, logStream })
  const { proxyUrl, adminUrl } = await app.listen()
  return { app, url: proxyUrl, adminUrl, logs, close: () => app.close() }
}

/** GET an admin endpoint as JSON. */
export async function adminJson<T = Record<string, unknown>>(proxy: { adminUrl: string }, path: string): Promise<T> {
  const res = await fetch(proxy.adminUrl + path)
  return (await res.json()) as T
}

export const basic = (org: string, key = 'secret-api-key'): string =>
  `Basic ${Buffer.from(`${org}:${key}`).toString('base64')}`

export interface StatusKey {
  instance: string
  endpoint: string
  limit: number
  inFlight: number
  queued: number
  oldestWaitMs: number
}

/** The proxy's `/status` entry for one key, or undefined when the key is idle (no permit, no waiter). */
export async function statusOf(
  proxy: { adminUrl: string },
  instance: string,
  endpoint: string,
): Promise<StatusKey | undefined> {
  const status = await adminJson<{ keys: StatusKey[] }>(proxy, '/status')
  return status.keys.find((k) => k.instance === instance && k.endpoint === endpoint)
}

export interface SimAndProxy {
  readonly sim: Sim
  readonly proxy: RunningProxy
}

/**
 * A simulated API and the real proxy in front of it, started before the file's tests and closed
 * after them. Read `stack.sim` and `stack.proxy` inside tests (they exist once `beforeAll` ran).
 */
export function useSimAndProxy(
  simOptions: Partial<SimOptions> = {},
  settings: Record<string, unknown> = {},
): SimAndProxy {
  let sim: Sim | undefined
  let proxy: RunningProxy | undefined
  beforeAll(async () => {
    sim = await startSim(simOptions)
    proxy = await startProxy({ upstream: sim.apiUrl, ...settings })
  })
  afterAll(async () => {
    await proxy?.close()
    await sim?.close()
  })
  return {
    get sim() {
      return sim!
    },
    get proxy() {
      return proxy!
    },
  }
}

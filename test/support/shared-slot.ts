import { expect } from 'vitest'
import { send, until } from './http.js'
import type { ProxyProcess } from './process.js'
import { adminJson, statusOf } from './proxy.js'
import { basicAuth, keyStats, waitForSim, type Sim } from './sim.js'

const ENDPOINT = 'POST /accounts/search' // limit 1

/** Waits (bounded) for the replica's limiter to be in `mode`; false when it never gets there. */
export async function modeBecomes(replica: ProxyProcess, mode: string, timeoutMs = 15_000): Promise<boolean> {
  try {
    await until(
      async () => (await adminJson<{ mode: string }>(replica, '/status')).mode === mode,
      `limiter mode ${mode}`,
      timeoutMs,
    )
    return true
  } catch {
    return false
  }
}

/**
 * Two replicas share the one permit of a limit-1 key through Redis: the first request is held at the
 * API, the second, sent to the other replica, waits in Redis's queue (the first replica's /status
 * reads it from there), and the API never has both at once. With each replica on its own in-process
 * limiter (the fallback) both would be upstream.
 */
export async function expectOneSlotShared(
  sim: Sim,
  [a, b]: readonly [ProxyProcess, ProxyProcess],
  org: string,
): Promise<void> {
  expect(await modeBecomes(a, 'redis'), a.output()).toBe(true)
  expect(await modeBecomes(b, 'redis'), b.output()).toBe(true)
  const gate = `shared-${org}`
  const post = (replica: ProxyProcess) =>
    send(replica.url, '/v2/accounts/search', {
      method: 'POST',
      headers: { authorization: basicAuth(org), 'content-type': 'application/json', 'x-sim-hold': gate },
      body: '{}',
    })
  const first = post(a)
  await waitForSim(sim, (s) => keyStats(s, org, ENDPOINT)?.inProgress === 1, 'the first request upstream')
  const second = post(b)
  await until(async () => (await statusOf(a, org, ENDPOINT))?.queued === 1, 'the second request queued in Redis')
  expect(keyStats(sim, org, ENDPOINT)?.inProgress).toBe(1)
  sim.open(gate)
  expect((await Promise.all([first, second])).map((r) => r.status)).toEqual([200, 200])
  expect(keyStats(sim, org, ENDPOINT)).toMatchObject({ maxInProgress: 1, rejected429: 0 })
}

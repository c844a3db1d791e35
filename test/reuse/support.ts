import { adminJson, type RunningProxy } from '../support/proxy.js'
import { send, until, type Answer } from '../support/http.js'
import { basicAuth, keyStats, type Sim } from '../support/sim.js'

export const COUNTRIES = '/v2/properties/countries'
export const COUNTRIES_ID = 'GET /properties/countries'

/** /status's reuse section */
export interface ReuseStatus {
  coalescing: { calls: number; followers: number }
  cache: { entries: number; bytes: number } | null
  permitsSaved: { instance: string; endpoint: string; coalesced: number; cacheHits: number }[]
}
export const reuseStatus = async (proxy: RunningProxy): Promise<ReuseStatus> =>
  (await adminJson<{ reuse: ReuseStatus }>(proxy, '/status')).reuse

/** Upstream calls the sim has seen for one (org, endpoint). */
export const simCalls = (sim: Sim, org: string, endpoint = COUNTRIES_ID): number =>
  keyStats(sim, org, endpoint)?.requests ?? 0

/**
 * Takes the key's only permit (the proxy runs it at limit 1) with a request of another API key, which
 * the sim holds for `holdMs`: the requests sent meanwhile queue, so a test can see them all join one
 * call before any answer starts, however slowly the machine sends them. Resolves once the permit is
 * held, with the blocker's answer to come (in an object: an async function would wait for a promise it returned).
 */
export async function holdPermit(
  proxy: RunningProxy,
  sim: Sim,
  org: string,
  holdMs = 2_000,
): Promise<{ answer: Promise<Answer> }> {
  const before = keyStats(sim, org, COUNTRIES_ID)?.inProgress ?? 0
  const held = send(proxy.url, COUNTRIES, {
    headers: { authorization: basicAuth(org, 'blocker-key'), 'x-sim-delay-ms': String(holdMs) },
  })
  await until(() => (keyStats(sim, org, COUNTRIES_ID)?.inProgress ?? 0) > before, 'the blocker reaches the sim')
  return { answer: held }
}

/** Waits until `n` requests wait on open calls. */
export async function followersWaiting(proxy: RunningProxy, n: number): Promise<void> {
  await until(async () => (await reuseStatus(proxy)).coalescing.followers >= n, `${n} requests following a call`)
}

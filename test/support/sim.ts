import { onTestFinished } from 'vitest'
import { startSim, type Sim, type SimKeyStats, type SimOptions } from '../../src/sim/index.js'

export { startSim, statsKey, type Sim, type SimOptions, type SimStats } from '../../src/sim/index.js'

/**
 * A simulated upstream on a free port for the current test, closed when the test finishes.
 * Call it inside a test; in `beforeAll`, use `startSim` and close it in `afterAll`.
 * The proxy's upstream setting is `sim.apiUrl` (`${sim.url}/v2`).
 */
export async function withSim(options: Partial<SimOptions> = {}): Promise<Sim> {
  const sim = await startSim(options)
  onTestFinished(() => sim.close())
  return sim
}

/** `Authorization` value for instance `org` (the sim and the proxy read the Basic-auth username). */
export const basicAuth = (org: string, key = 'test-api-key'): string =>
  `Basic ${Buffer.from(`${org}:${key}`).toString('base64')}`

/** The sim's figures for one (instance, endpoint), or undefined when it saw none of its requests. */
export function keyStats(sim: Sim, instance: string, endpoint: string): SimKeyStats | undefined {
  return sim.stats().keys[`${instance} ${endpoint}`]
}

/**
 * Waits until `condition(sim)` holds, checking every few ms (not a timing assertion: it only bounds how
 * long a broken test hangs). Throws with `what` after `timeoutMs`.
 */
export async function waitForSim(
  sim: Sim,
  condition: (sim: Sim) => boolean,
  what: string,
  timeoutMs = 10_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!condition(sim)) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for the sim: ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
}

import { afterAll, beforeAll } from 'vitest'
import { startProxy, type RunningProxy } from '../support/proxy.js'
import { startSim, type Sim } from '../support/sim.js'

/** The CRM's production and trial, each a sim of its own, behind one proxy with the trial upstream (docs/upstreams.md). */
export interface TrialStack {
  readonly production: Sim
  readonly trial: Sim
  readonly proxy: RunningProxy
}

/**
 * Starts the stack before the file's tests and closes it after; `settings` (read in `beforeAll`, so it
 * may use what other hooks started, e.g. a Redis URL) adds to the proxy's.
 */
export function useTrialStack(settings: () => Record<string, unknown> = () => ({})): TrialStack {
  const stack = {} as { production: Sim; trial: Sim; proxy: RunningProxy }
  beforeAll(async () => {
    stack.production = await startSim()
    stack.trial = await startSim()
    stack.proxy = await startProxy({
      upstream: stack.production.apiUrl,
      requestLog: false,
      ...settings(),
      upstreams: [{ name: 'trial', prefix: '/trial/v2', url: stack.trial.apiUrl, profile: 'neon-v2' }],
    })
  })
  afterAll(async () => {
    await stack.proxy?.close()
    await stack.production?.close()
    await stack.trial?.close()
  })
  return stack
}

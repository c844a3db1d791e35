import { EnvHttpProxyAgent, type Dispatcher } from 'undici'
import { describe, expect, it } from 'vitest'
import { egressFor } from '../../src/proxy/forward-proxy.js'

/**
 * sluice decides once at start whether the upstream goes through the forward proxy
 * (src/proxy/forward-proxy.ts); undici's EnvHttpProxyAgent decides per request. One rule, two
 * places: the same NO_PROXY values and upstreams through both must agree. Which agent undici picked
 * is read by replacing the dispatch of its inner agents (found by their symbols' names): nothing is sent.
 */
function undiciProxies(upstream: string, noProxy: string): boolean {
  const agent = new EnvHttpProxyAgent({
    httpProxy: 'http://proxy.invalid:3128',
    httpsProxy: 'http://proxy.invalid:3129',
    noProxy,
  })
  const inner = (name: string): Dispatcher => {
    const symbol = Object.getOwnPropertySymbols(agent).find((s) => s.description === name)
    if (symbol === undefined) throw new Error(`undici's EnvHttpProxyAgent has no ${name} any more: update this test`)
    return (agent as unknown as Record<symbol, Dispatcher>)[symbol]!
  }
  let proxied: boolean | undefined
  inner('no proxy agent').dispatch = () => ((proxied = false), true)
  inner('https proxy agent').dispatch = () => ((proxied = true), true)
  inner('http proxy agent').dispatch = () => ((proxied = true), true)
  agent.dispatch({ origin: new URL(upstream).origin, path: '/', method: 'GET' }, {})
  if (proxied === undefined) throw new Error('undici dispatched to none of its agents')
  return proxied
}

const UPSTREAMS = [
  'https://api.neoncrm.com/v2',
  'https://API.NeonCRM.com:443/v2',
  'https://api.neoncrm.com:8443/v2',
  'http://api.neoncrm.com/v2',
  'https://trial.z2systems.com/neonws/v2',
  'https://127.0.0.1:9443/v2',
  'https://[::1]:9443/v2',
  'http://localhost:8081/v2',
]
const NO_PROXY = [
  '',
  '*',
  'neoncrm.com',
  '.neoncrm.com',
  '*.neoncrm.com',
  'api.neoncrm.com:443',
  'api.neoncrm.com:8443',
  'eoncrm.com',
  'localhost, 127.0.0.1',
  '127.0.0.1:9443',
  '[::1]:9443',
  'example.com api.neoncrm.com',
  'z2systems.com,,example.com',
  'API.NEONCRM.COM',
  ' ',
]

describe('NO_PROXY: sluice and undici agree on whether the upstream is proxied', () => {
  for (const upstream of UPSTREAMS) {
    it(upstream, () => {
      for (const noProxy of NO_PROXY) {
        const ours =
          egressFor(new URL(upstream), {
            HTTPS_PROXY: 'http://proxy.invalid:3129',
            HTTP_PROXY: 'http://proxy.invalid:3128',
            NO_PROXY: noProxy,
          }).via !== undefined
        expect({ noProxy, proxied: ours }).toEqual({ noProxy, proxied: undiciProxies(upstream, noProxy) })
      }
    })
  }
})

import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { adminJson, startProxy, type RunningProxy } from '../support/proxy.js'
import { startSim, type Sim } from '../support/sim.js'
import type { SimKeyStats } from '../../src/sim/index.js'
import { send, until } from '../support/http.js'

/*
 * The GitHub REST profile (docs/upstreams.md, "github-rest"): 100 requests in progress at once per
 * token across every path; the secondary limit's 403 with Retry-After goes back into the queue.
 * The sim's stand-in under /github enforces the same (docs/development.md, "The simulated API").
 */

interface Key {
  upstream?: string
  instance: string
  endpoint: string
  inFlight: number
  queued: number
  limit: number
}

/** The sim's figures of one token (its instance is a digest the test does not know). */
const tokenKeys = (sim: Sim): SimKeyStats[] => Object.values(sim.stats().keys).filter((k) => k.endpoint === 'ALL /*')

async function githubStack(simOptions: Parameters<typeof startSim>[0]): Promise<{ sim: Sim; proxy: RunningProxy }> {
  const sim = await startSim(simOptions)
  const proxy = await startProxy({
    upstream: sim.apiUrl,
    requestLog: true,
    upstreams: [{ name: 'github', prefix: '/github', url: sim.githubUrl, profile: 'github-rest' }],
  })
  return { sim, proxy }
}

describe('github-rest: 100 in progress per token, never more', () => {
  let stack: { sim: Sim; proxy: RunningProxy }
  beforeAll(async () => (stack = await githubStack({})))
  afterAll(async () => {
    await stack.proxy.close()
    await stack.sim.close()
  })

  it('130 requests of one token over many paths: 100 upstream, 30 queued; another token goes straight through', async () => {
    const { sim, proxy } = stack
    // distinct reads (identical ones would share one call: docs/reuse.md), over several paths
    const paths = ['/github/repos/o/r/issues/', '/github/repos/o/r/pulls/', '/github/orgs/o/teams/', '/github/users/']
    const held = Array.from({ length: 130 }, (_, i) =>
      send(proxy.url, `${paths[i % paths.length]!}${i}`, {
        headers: { authorization: 'Bearer token-a', 'x-sim-hold': 'a' },
      }),
    )
    await until(
      async () =>
        (await adminJson<{ keys: Key[] }>(proxy, '/status')).keys.some(
          (k) => k.upstream === 'github' && k.inFlight === 100 && k.queued === 30,
        ),
      '100 in flight and 30 queued',
    )
    const { keys } = await adminJson<{ keys: Key[] }>(proxy, '/status')
    const github = keys.filter((k) => k.upstream === 'github')
    expect(github).toHaveLength(1)
    // one key for every path of the token, named by a digest of it, never the token
    expect(github[0]).toMatchObject({ endpoint: 'ALL /*', limit: 100 })
    expect(github[0]!.instance).toMatch(/^cred-[0-9a-f]{16}$/)
    expect(JSON.stringify(keys)).not.toContain('token-a')

    const other = await send(proxy.url, '/github/user', { headers: { authorization: 'Bearer token-b' } })
    expect(other.status).toBe(200)

    sim.open('a')
    const answers = await Promise.all(held)
    expect(answers.map((a) => a.status)).toEqual(Array(130).fill(200))
    const [a] = tokenKeys(sim).filter((k) => k.requests === 130)
    expect(a).toMatchObject({ maxInProgress: 100, maxAttempted: 100, rejected429: 0 })
  })
})

describe('github-rest: the secondary limit answers 403 with Retry-After; the client never sees it', () => {
  let stack: { sim: Sim; proxy: RunningProxy } | undefined
  afterEach(async () => {
    await stack?.proxy.close()
    await stack?.sim.close()
  })

  it('a GitHub that allows 2 at once: every request answered 200 after 403s sent back into the queue', async () => {
    stack = await githubStack({ githubConcurrency: 2 })
    const { sim, proxy } = stack
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        send(proxy.url, `/github/repos/o/r/issues/${i}`, {
          headers: { authorization: 'Bearer token-a', 'x-sim-delay-ms': '100', 'x-sim-retry-after': '0' },
        }),
      ),
    )
    expect(answers.map((a) => a.status)).toEqual(Array(6).fill(200))
    const [key] = tokenKeys(sim)
    expect(key!.rejected429).toBeGreaterThan(0) // the sim counts its 403s there
    expect(key!.maxInProgress).toBe(2)
    const lines = proxy.logs.filter((l) => l.msg === 'request' && l.upstream === 'github')
    expect(lines.reduce((n, l) => n + (l.retries as number), 0)).toBe(key!.rejected429)
    // the 403s taught the token's learned limit, as 429s would (learning.lowerPublished, on by default)
    const { learned } = await adminJson<{ learned: { upstream?: string; endpoint: string; limit: number }[] }>(
      proxy,
      '/status',
    )
    expect(learned.find((l) => l.upstream === 'github' && l.endpoint === 'ALL /*')?.limit).toBeLessThan(100)
  })

  it("a 403 without Retry-After is the API's answer: passed on", async () => {
    stack = await githubStack({})
    const answer = await send(stack.proxy.url, '/github/repos/o/r', {
      headers: { authorization: 'Bearer token-a', 'x-sim-status': '403' },
    })
    expect(answer.status).toBe(403)
  })
})

import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { adminJson, startProxy, type RunningProxy } from '../support/proxy.js'
import { startSim, type Sim } from '../support/sim.js'
import { send, until } from '../support/http.js'

/*
 * One real instance counts as one key (docs/upstreams.md, "Instance"): a path instance is read from the
 * path as forwarded (its escapes decoded as the forwarded path's are), a credential instance from the
 * Authorization's canonical form. Spelled and encoded variants of one mailbox or one token must never
 * put more than the limit in progress at the API.
 */

interface Key {
  upstream?: string
  instance: string
  queued: number
}

let sim: Sim
let proxy: RunningProxy
beforeAll(async () => {
  sim = await startSim()
  proxy = await startProxy({
    upstream: sim.apiUrl,
    requestLog: false,
    upstreams: [
      {
        name: 'mail',
        prefix: '/mail',
        url: sim.apiUrl,
        catalog: { default: 1, per: 'upstream' },
        instance: { from: 'path', segment: 2 },
      },
      // GitHub's profile with a limit of 2 per token
      {
        name: 'gh',
        prefix: '/gh',
        url: sim.githubUrl,
        profile: 'github-rest',
        catalog: { default: 2, per: 'upstream' },
      },
    ],
  })
})
afterAll(async () => {
  await proxy.close()
  await sim.close()
})

const queuedAt = async (upstream: string): Promise<number> =>
  (await adminJson<{ keys: Key[] }>(proxy, '/status')).keys
    .filter((k) => k.upstream === upstream)
    .reduce((n, k) => n + k.queued, 0)

/** requests in progress at the sim now, over every key */
const inProgress = (): number => Object.values(sim.stats().keys).reduce((n, k) => n + k.inProgress, 0)
const mostInProgress = (): number => Math.max(...Object.values(sim.stats().keys).map((k) => k.maxInProgress))

/** Sends every request held at the sim, waits until each is either in progress there or queued in sluice, then lets them go. */
async function heldTogether(upstream: string, requests: readonly { path: string; headers?: Record<string, string> }[]) {
  sim.reset()
  const gate = `g-${upstream}`
  const answers = requests.map(({ path, headers }) =>
    send(proxy.url, path, { method: 'POST', headers: { ...headers, 'x-sim-hold': gate }, body: '{}' }),
  )
  await until(
    async () => inProgress() + (await queuedAt(upstream)) === requests.length,
    'every request in progress at the API or queued in sluice',
  )
  const most = mostInProgress()
  sim.open(gate)
  expect((await Promise.all(answers)).map((a) => a.status)).toEqual(requests.map(() => 200))
  return most
}

describe('one real instance, one key', () => {
  it('a path instance: alice, %61lice and al%69ce are one mailbox at limit 1', async () => {
    const most = await heldTogether('mail', [
      { path: '/mail/users/alice/messages' },
      { path: '/mail/users/%61lice/messages' },
      { path: '/mail/users/al%69ce/messages' },
    ])
    expect(most).toBe(1)
    // the key is named as forwarded
    const answer = await send(proxy.url, '/mail/users/%61l%69ce/messages', { method: 'POST', body: '{}' })
    expect(answer.json<{ path: string }>().path).toBe('/users/alice/messages')
  })

  it('a credential instance (github-rest): token T, Bearer T, bearer T, spaced, are one token at limit 2', async () => {
    const T = 'ghp_one-token-of-one-user'
    const spellings = [
      `token ${T}`,
      `Bearer ${T}`,
      `bearer ${T}`,
      `BEARER ${T}`,
      ` token ${T} `,
      `Token   ${T}`,
      `bearer\t${T}`,
      `TOKEN ${T}`,
    ]
    const most = await heldTogether(
      'gh',
      spellings.map((authorization) => ({ path: '/gh/repos/o/r/issues', headers: { authorization } })),
    )
    expect(most).toBe(2)
  })
})

import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { adminJson, startProxy, type RunningProxy } from '../support/proxy.js'
import { startSim, type Sim } from '../support/sim.js'
import { send, until } from '../support/http.js'

/*
 * How an upstream finds the instance (docs/upstreams.md, "Instance"): a header, a path segment, or
 * one key for the whole upstream. Every upstream here allows one request at once per instance.
 */

interface Key {
  upstream?: string
  instance: string
  endpoint: string
  inFlight: number
  queued: number
}

const oneAtOnce = { default: 1, per: 'upstream' }
let sim: Sim
let proxy: RunningProxy
beforeAll(async () => {
  sim = await startSim()
  proxy = await startProxy({
    upstream: sim.apiUrl,
    requestLog: false,
    upstreams: [
      {
        name: 'hdr',
        prefix: '/hdr',
        url: sim.apiUrl,
        catalog: oneAtOnce,
        instance: { from: 'header', header: 'X-Account' },
      },
      { name: 'seg', prefix: '/seg', url: sim.apiUrl, catalog: oneAtOnce, instance: { from: 'path', segment: 2 } },
      { name: 'one', prefix: '/one', url: sim.apiUrl, catalog: oneAtOnce },
    ],
  })
})
afterAll(async () => {
  await proxy.close()
  await sim.close()
})

const keysOf = async (upstream: string): Promise<Omit<Key, 'upstream' | 'endpoint'>[]> =>
  (await adminJson<{ keys: Key[] }>(proxy, '/status')).keys
    .filter((k) => k.upstream === upstream)
    .map(({ instance, inFlight, queued }) => ({ instance, inFlight, queued }))
    .sort((a, b) => a.instance.localeCompare(b.instance))

/** POSTs (never shared: docs/reuse.md) held at the sim until the gate opens. */
const held = (path: string, gate: string, headers: Record<string, string> = {}) =>
  send(proxy.url, path, { method: 'POST', headers: { ...headers, 'x-sim-hold': gate }, body: '{}' })

describe('instance rules', () => {
  it('from a header: one key per value', async () => {
    const answers = [
      held('/hdr/things', 'h', { 'x-account': 'a' }),
      held('/hdr/other/1', 'h', { 'x-account': 'a' }),
      held('/hdr/things', 'h', { 'x-account': 'b' }),
    ]
    await until(
      async () =>
        JSON.stringify(await keysOf('hdr')) ===
        JSON.stringify([
          { instance: 'a', inFlight: 1, queued: 1 },
          { instance: 'b', inFlight: 1, queued: 0 },
        ]),
      'a: one held, one queued; b: one held',
    )
    sim.open('h')
    expect((await Promise.all(answers)).map((a) => a.status)).toEqual([200, 200, 200])
  })

  it('from a path segment: one key per mailbox; a path without it is refused', async () => {
    const answers = [
      held('/seg/users/m1/messages', 's'),
      held('/seg/users/m1/events', 's'),
      held('/seg/users/m2/messages', 's'),
    ]
    await until(
      async () =>
        JSON.stringify(await keysOf('seg')) ===
        JSON.stringify([
          { instance: 'm1', inFlight: 1, queued: 1 },
          { instance: 'm2', inFlight: 1, queued: 0 },
        ]),
      'm1: one held, one queued; m2: one held',
    )
    sim.open('s')
    expect((await Promise.all(answers)).map((a) => a.status)).toEqual([200, 200, 200])
    const refused = await send(proxy.url, '/seg/users', { method: 'POST', body: '{}' })
    expect(refused.status).toBe(400)
    expect(refused.json()).toEqual([
      {
        code: 'SLUICE_BAD_INSTANCE',
        message: 'The instance (organisation id) from path segment 2 must be 1-128 printable characters',
      },
    ])
  })

  it('one key for the whole upstream, whatever the credentials', async () => {
    const answers = [held('/one/a', 'o', { 'x-account': 'a' }), held('/one/b', 'o', { authorization: 'Bearer x' })]
    await until(
      async () =>
        JSON.stringify(await keysOf('one')) === JSON.stringify([{ instance: 'default', inFlight: 1, queued: 1 }]),
      'one held, one queued',
    )
    sim.open('o')
    expect((await Promise.all(answers)).map((a) => a.status)).toEqual([200, 200])
  })
})

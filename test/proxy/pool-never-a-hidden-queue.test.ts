import { afterEach, describe, expect, it } from 'vitest'
import { send, until } from '../support/http.js'
import { startProxy, type RunningProxy } from '../support/proxy.js'
import { basicAuth, withSim, type Sim } from '../support/sim.js'
import { parsePromText, select } from '../metrics/prom-text.js'

// docs/deploy.md "Sizing": the upstream pool is a sizing input, never a hidden queue. By default it has
// no cap, so every permit sluice grants gets a socket at once and the limits alone bound the sockets;
// a cap set below the permits a replica holds makes requests wait for a socket with their permit
// held, and that wait is measured apart from the API's time (access line `socketWaitMs`, histogram
// sluice_upstream_socket_wait_seconds).

let sim: Sim | undefined
let proxy: RunningProxy | undefined
afterEach(async () => {
  for (const gate of ['all', 'first']) sim?.open(gate)
  await proxy?.close()
  await sim?.close()
  proxy = sim = undefined
})

const inProgress = (s: Sim): number => Object.values(s.stats().keys).reduce((n, k) => n + k.inProgress, 0)
/** one GET per organisation: each its own key, so no limit binds */
const get = (org: number, hold?: string) =>
  send(proxy!.url, `/v2/accounts/${org}`, {
    headers: { authorization: basicAuth(`org${org}`), ...(hold === undefined ? {} : { 'x-sim-hold': hold }) },
  })

describe('the upstream pool', () => {
  it('by default gives every permit a socket: 140 organisations × 1 GET are all at the API at once', async () => {
    sim = await withSim()
    proxy = await startProxy({ upstream: sim.apiUrl })
    const answers = Array.from({ length: 140 }, (_, i) => get(i, 'all'))
    // the former default of 128 sockets left 12 of them holding a permit in the pool's queue
    await until(() => inProgress(sim!) === 140, '140 requests at the API', 20_000)
    sim.open('all')
    expect((await Promise.all(answers)).every((a) => a.status === 200)).toBe(true)
  }, 40_000)

  it('with a cap below the permits held, measures the wait for a socket apart from the API time', async () => {
    sim = await withSim()
    proxy = await startProxy({ upstream: sim.apiUrl, upstreamConnections: 2 })
    const first = [get(1, 'first'), get(2, 'first')]
    await until(() => inProgress(sim!) === 2, 'two requests at the API')
    const queued = [get(3), get(4)]
    // both hold their permit (the limiter granted it) but no socket: the API sees only the first two
    await until(async () => {
      const text = await (await fetch(`${proxy!.adminUrl}/metrics`)).text()
      return select(parsePromText(text), 'sluice_permits_in_flight').reduce((n, s) => n + s.value, 0) === 4
    }, 'four permits held')
    const heldFrom = performance.now()
    await new Promise((resolve) => setTimeout(resolve, 300))
    expect(inProgress(sim)).toBe(2)
    const heldMs = performance.now() - heldFrom
    sim.open('first')
    expect((await Promise.all([...first, ...queued])).map((a) => a.status)).toEqual([200, 200, 200, 200])

    const lines = proxy.logs.filter((l) => l.msg === 'request')
    const byOrg = new Map(lines.map((l) => [l.instance, l]))
    for (const org of ['org3', 'org4']) {
      const line = byOrg.get(org)!
      // they could not have a socket before the first two were answered
      expect(line.socketWaitMs as number, org).toBeGreaterThanOrEqual(Math.floor(heldMs))
      expect((line.socketWaitMs as number) + (line.upstreamMs as number), org).toBeLessThanOrEqual(
        (line.totalMs as number) + 0.2,
      )
    }
    for (const org of ['org1', 'org2']) expect(byOrg.get(org)!.socketWaitMs as number, org).toBeLessThan(heldMs)

    const samples = parsePromText(await (await fetch(`${proxy.adminUrl}/metrics`)).text())
    const count = select(samples, 'sluice_upstream_socket_wait_seconds_count')[0]!.value
    const sum = select(samples, 'sluice_upstream_socket_wait_seconds_sum')[0]!.value
    expect(count).toBe(4)
    expect(sum).toBeGreaterThanOrEqual((2 * Math.floor(heldMs)) / 1000)
  })
})

import { Pool } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import { forward } from '../../src/proxy/forward.js'
import { basicAuth, keyStats, withSim } from '../support/sim.js'
import { ServerResponse, IncomingMessage } from 'node:http'
import { Socket } from 'node:net'

// The proxy asks its permit whether it may still start a request at the last moment before the
// request is written to the upstream socket (docs/redis-limiter.md, "Leases"): undici starts a
// request once a connection is ready, which can be long after the dispatch. Here the permit turns
// unusable after the dispatch, while a new socket connects — as when the process is frozen then
// (SIGSTOP) for longer than the lease. Nothing may reach the API.

const pools: Pool[] = []
afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.close()))
})

/** A response object for `forward` to write into (nothing reads it here). */
const clientResponse = (): ServerResponse => new ServerResponse(new IncomingMessage(new Socket()))

const options = (apiUrl: string) => ({
  path: `${new URL(apiUrl).pathname}/accounts/search`,
  method: 'POST' as const,
  headers: { authorization: basicAuth('1001'), 'content-type': 'application/json' },
  body: Buffer.from('{}'),
})

// the client-side bounds on answers (README "Slow and hostile clients"), at their defaults
const ANSWER_LIMITS = { bufferBytes: 4 * 1024 * 1024, writeTimeoutMs: 30_000 }

describe('a permit checked right before the request is written upstream', () => {
  it('a permit that can no longer start when the socket is ready: the request is never sent, and its permit goes back once', async () => {
    const sim = await withSim()
    const pool = new Pool(sim.url, { connections: 1 })
    pools.push(pool)
    let usable = true
    let asked = 0
    let done = 0
    const refusal = new Error('the permit may have run out')
    const sent = forward(
      pool,
      options(sim.apiUrl),
      clientResponse(),
      {
        beforeSend: () => {
          asked++
          return usable ? undefined : refusal
        },
        onHead: () => undefined,
        onDone: () => void done++,
        onClientCut: () => undefined,
      },
      ANSWER_LIMITS,
    )
    // dispatched, the socket still connecting: now the process stalls past the lease
    usable = false
    await expect(sent).rejects.toBe(refusal)
    expect(asked).toBe(1)
    expect(done).toBe(1)
    expect(keyStats(sim, '1001', 'POST /accounts/search')).toBeUndefined() // the API saw nothing
  })

  it('a permit still good when the socket is ready: the request goes out as before', async () => {
    const sim = await withSim()
    const pool = new Pool(sim.url, { connections: 1 })
    pools.push(pool)
    let asked = 0
    let done = 0
    const status = await forward(
      pool,
      options(sim.apiUrl),
      clientResponse(),
      {
        beforeSend: () => void asked++,
        onHead: () => undefined,
        onDone: () => void done++,
        onClientCut: () => undefined,
      },
      ANSWER_LIMITS,
    )
    expect(status).toBe(200)
    expect(asked).toBe(1)
    await new Promise<void>((resolve) => {
      const check = (): void => void (done > 0 ? resolve() : setImmediate(check))
      check()
    })
    expect(keyStats(sim, '1001', 'POST /accounts/search')?.requests).toBe(1)
  })
})

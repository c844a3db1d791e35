/**
 * Review of the rates change (issue 38). undici calls onRequestStart (the proxy's beforeSend) once its
 * connection is made; aborting there destroys that socket (client-h1 writeH1's abort). A rated permit
 * checks `performance.now() − at > slack` (slack = max(20, rateMarginMs), 100 ms by default) there, so an
 * API whose connect + TLS takes longer than the slack is never reached: each attempt takes a start, waits
 * for a new socket, is held back, its socket destroyed, and waits again (the handler's heldBack loop).
 */
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { buildConnector, Pool } from 'undici'
import { describe, expect, it, onTestFinished } from 'vitest'
import { createMemoryLimiter } from '../../../src/limiter/memory/index.js'
import { MemoryRateGate } from '../../../src/limiter/rate/gate.js'
import { RatedLimiter } from '../../../src/limiter/rate/limiter.js'

const key = { instance: 'org1', endpoint: 'GET /contacts' }

describe('review: a rated request to an API whose connection takes longer than the send slack', () => {
  it('is sent within a few attempts (the fresh socket is not destroyed each time)', async () => {
    const server = createServer((_req, res) => res.end('ok'))
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    onTestFinished(() => new Promise<void>((r) => server.close(() => r())))
    const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    const direct = buildConnector({})
    // connect + TLS to a far API: 150 ms
    const pool = new Pool(origin, {
      connect: (opts, cb) => void setTimeout(() => direct(opts, cb), 150),
    })
    onTestFinished(() => pool.destroy())
    const limiter = new RatedLimiter(
      createMemoryLimiter({}),
      new MemoryRateGate(),
      { enabled: true, idleMs: 60_000, marginMs: 100 },
      undefined,
    )
    onTestFinished(() => limiter.close())
    let sent = 0
    let heldBack = 0
    for (let attempt = 0; attempt < 5 && sent === 0; attempt++) {
      const permit = await limiter.acquire(key, {
        limit: 5,
        deadline: Date.now() + 30_000,
        maxQueue: 100,
        rate: { requests: 10, windowMs: 1000, burst: 1 },
      })
      if (!permit.canStart()) {
        permit.release()
        heldBack++
        continue
      }
      // as forward.ts does: beforeSend in onRequestStart, abort when the permit can no longer start
      const outcome = await new Promise<'sent' | 'heldBack'>((resolve) => {
        pool.dispatch(
          { origin, path: '/', method: 'GET' },
          {
            onRequestStart(controller) {
              if (!permit.canStart()) controller.abort(new Error('held back'))
              else permit.markSent()
            },
            onResponseStart() {},
            onResponseData() {},
            onResponseEnd() {
              resolve('sent')
            },
            onResponseError() {
              resolve('heldBack')
            },
          },
        )
      })
      permit.release(outcome === 'sent' ? 'success' : undefined)
      if (outcome === 'sent') sent++
      else heldBack++
    }
    expect({ sent, heldBack }).toEqual({ sent: 1, heldBack: 0 })
  })
})

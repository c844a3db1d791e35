import { describe, expect, it } from 'vitest'
import { Deadlines } from '../../../src/limiter/deadlines.js'
import { Fallback } from '../../../src/limiter/redis/fallback.js'
import type { RunOptions, ScriptDef, ScriptRunner } from '../../../src/limiter/redis/script.js'
import { SharedPermits } from '../../../src/limiter/redis/shared.js'
import { SluicePermit, Ticket } from '../../../src/limiter/redis/ticket.js'
import type { PermitKey } from '../../../src/limiter/types.js'

// The way back from the `local` fallback when Redis fails again half-way: one key's adopt script
// succeeded, another's did not (a connection cut between the two). Deterministic: a fake script
// runner answers each script as the test says.

class FakeScripts implements ScriptRunner {
  readonly calls: { name: string; answer(v: unknown): void; fail(e: Error): void }[] = []
  run(def: ScriptDef, _k: readonly string[], _a: readonly (string | number)[], _o?: RunOptions): Promise<unknown> {
    return new Promise((resolve, reject) => this.calls.push({ name: def.name, answer: resolve, fail: reject }))
  }
}

const A: PermitKey = { instance: 'org1', endpoint: 'POST /accounts/search' }
const B: PermitKey = { instance: 'org2', endpoint: 'POST /accounts/search' }

describe('fallback: counting its permits in Redis when one key succeeds and another fails', () => {
  it('the permit counted in Redis keeps its local slot as a pin, freed when it is released', async () => {
    const scripts = new FakeScripts()
    const shared: SharedPermits = new SharedPermits(
      scripts,
      {
        prefix: 'p',
        replicaId: 'r1',
        channelPrefix: 'p:grant:',
        leaseMs: 3_000,
        syncMs: 1_000,
        liveMs: 3_000,
        idleMs: 9_000,
      },
      {
        makePermit: () => {
          throw new Error('not used')
        },
        failed: () => {},
        keyBroken: () => {},
        reroute: () => {},
        lost: () => {},
      },
    )
    // what RedisLimiter does on release (Redis itself is away)
    const release = (p: SluicePermit): void => {
      if (p.grant.kind === 'redis') fallback.unpin(p)
      else fallback.release(p)
    }
    const fallback: Fallback = new Fallback('local', {
      makePermit: (k, limit, grant, waitedMs) => new SluicePermit(k, limit, grant, waitedMs, release, () => true),
      shareOf: (_key, limit) => limit,
      grantedAfterRecovery: () => {},
      redisIsBack: () => false,
    })
    const deadlines = new Deadlines()
    const acquire = (key: PermitKey) =>
      new Promise<SluicePermit>((resolve, reject) =>
        fallback.serve(
          new Ticket(
            key,
            { limit: 1, maxQueue: 10, deadline: Date.now() + 60_000 },
            resolve,
            reject,
            () => {},
            deadlines,
          ),
        ),
      )
    const pa = await acquire(A)
    const pb = await acquire(B)

    const counting = fallback.countIn(shared)
    expect(scripts.calls.map((c) => c.name)).toEqual(['adopt', 'adopt'])
    scripts.calls[0]!.answer(1) // A counted in Redis
    scripts.calls[1]!.fail(new Error('Connection is closed.')) // B: Redis went away again
    await expect(counting).rejects.toThrow('Connection is closed.')
    expect(pa.grant.kind).toBe('redis')
    expect(pb.grant.kind).toBe('local')
    expect(fallback.size()).toEqual({ waiting: 0, pins: 1, unshared: 1 })

    // still in `local`: A's slot is taken (by its pin) until A is released
    let next: SluicePermit | undefined
    const waiting = acquire(A).then((p) => (next = p))
    await new Promise((r) => setImmediate(r))
    expect(next).toBeUndefined()
    pa.release()
    await waiting
    next!.release()
    pb.release()
    expect(fallback.size()).toEqual({ waiting: 0, pins: 0, unshared: 0 })
    shared.stop()
    await fallback.close()
  })
})

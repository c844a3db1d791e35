import { describe, expect, it } from 'vitest'
import { HeardRegistry } from '../../../src/limiter/redis/heard-registry.js'
import type { PermitKey } from '../../../src/limiter/types.js'

// Review (ff7ed03): local shares after the registry lost entries (FLUSHALL, a restart without
// persistence, a failover to a copy whose beats already expired) and a second outage before the
// next heartbeat. Same registry model as local-share-property.test.ts, plus the loss.
const HEARTBEAT = 1_000 // staleMs 2_000
const LEASE = 3_000

const keys: PermitKey[] = Array.from({ length: 20 }, (_, i) => ({ instance: `org${i}`, endpoint: 'POST /x' }))

function run(events: readonly ({ id: string; at: number } | { flushAt: number })[], fellBackAt: number) {
  const clock = { now: 0 }
  const heard = new Map(['x', 'y'].map((id) => [id, new HeardRegistry(id, HEARTBEAT, () => clock.now)]))
  const registry = new Map<string, number>()
  for (const e of events) {
    if ('flushAt' in e) {
      registry.clear()
      continue
    }
    const before = registry.get(e.id)
    registry.set(e.id, e.at)
    for (const [other, beat] of registry) if (beat + LEASE <= e.at) registry.delete(other)
    clock.now = e.at
    heard.get(e.id)!.sending()
    heard.get(e.id)!.heard({ at: e.at, beats: new Map(registry), before }, e.at)
  }
  clock.now = fellBackAt
  for (const h of heard.values()) h.fellBack()
  return heard
}

describe('local shares after the registry lost entries', () => {
  it('add up to no more than the limit when Redis was flushed (or restarted empty) one heartbeat before an outage', () => {
    const heard = run(
      [
        { id: 'x', at: 0 },
        { id: 'y', at: 100 },
        { id: 'x', at: 1_000 },
        { id: 'y', at: 1_100 },
        { id: 'x', at: 2_000 },
        { id: 'y', at: 2_100 },
        { flushAt: 2_500 }, // FLUSHALL / restart without persistence / failover to a copy whose beats expired
        { id: 'x', at: 3_000 }, // hears only itself
        { id: 'y', at: 3_100 }, // hears x (beat after y's run began) and itself
      ],
      3_200, // Redis lost (again) before x's next heartbeat
    )
    for (const limit of [1, 2, 5]) {
      const over = keys.filter((k) => heard.get('x')!.shareOf(k, limit) + heard.get('y')!.shareOf(k, limit) > limit)
      expect(
        over.map(
          (k) =>
            `${k.instance}: x ${heard.get('x')!.shareOf(k, limit)} + y ${heard.get('y')!.shareOf(k, limit)} > ${limit}`,
        ),
        `limit ${limit}`,
      ).toEqual([])
    }
  })
})

describe('local shares after a failover to a copy one heartbeat behind', () => {
  it('add up to no more than the limit when the replica back first sees the other stale in the copy', () => {
    const clock = { now: 0 }
    const x = new HeardRegistry('x', HEARTBEAT, () => clock.now)
    const y = new HeardRegistry('y', HEARTBEAT, () => clock.now)
    let registry = new Map<string, number>()
    let copy = new Map<string, number>()
    const beat = (h: HeardRegistry, id: string, at: number): void => {
      const before = registry.get(id)
      registry.set(id, at)
      for (const [other, b] of registry) if (b + LEASE <= at) registry.delete(other)
      clock.now = at
      h.sending()
      h.heard({ at, beats: new Map(registry), before }, at)
    }
    beat(x, 'x', 0)
    beat(y, 'y', 500)
    beat(x, 'x', 1_000)
    beat(y, 'y', 1_500)
    beat(x, 'x', 2_000)
    copy = new Map(registry) // t=2050: what the replica being promoted has
    beat(y, 'y', 2_500) // on the old master only
    clock.now = 2_600 // the old master's clients are killed: both fall back
    y.fellBack() // y stays out (reconnecting) until after the second loss
    x.fellBack()
    registry = copy // the new master
    beat(x, 'x', 3_600) // x is back: y's last beat there is 2.1 s old, stale: x's view is itself alone
    clock.now = 3_700
    x.fellBack() // lost again before y came back
    const over = keys.filter((k) => x.shareOf(k, 1) + y.shareOf(k, 1) > 1)
    expect(over.map((k) => k.instance)).toEqual([])
  })
})

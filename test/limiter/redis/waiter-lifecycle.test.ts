import { afterEach, describe, expect, it } from 'vitest'
import { Deadlines } from '../../../src/limiter/deadlines.js'
import { FairShare } from '../../../src/limiter/fairness/policy.js'
import type { KeySemaphore } from '../../../src/limiter/redis/key-semaphore.js'
import { Semaphores } from '../../../src/limiter/redis/semaphores.js'
import { Ticket } from '../../../src/limiter/redis/ticket.js'
import {
  IllegalTransitionError,
  WAITER_TRANSITIONS,
  type Waiter,
  type WaiterState,
} from '../../../src/limiter/redis/waiter.js'
import { fakeShared, GRANTED, idOf, LEASE_MS, QUEUED, settle, turn, type RequestOptions } from './fake-scripts.js'
import { key } from './helpers.js'

// The waiter lifecycle (src/limiter/redis/waiter.ts, docs/redis-limiter.md "The waiter's lifecycle")
// walked end to end: every move WAITER_TRANSITIONS allows is made by a scenario through the
// replica's side (SharedPermits on a fake script runner and clock, the moves heard through the
// `waiterMoved` hook), and every move it does not list is refused where moves are made (Waiter.move).

const STATES = Object.keys(WAITER_TRANSITIONS) as WaiterState[]
const ALLOWED = STATES.flatMap((from) => WAITER_TRANSITIONS[from].map((to) => `${from} → ${to}`))
const FULL = [2, 0, 0]

let current: { close(): void } | undefined
afterEach(() => current?.close())

function setup() {
  const moves: string[] = []
  const t = fakeShared({ waiterMoved: (_id, from, to) => moves.push(`${from} → ${to}`) })
  const ask = (limit: number, o: RequestOptions & { abort?: AbortController } = {}) =>
    t.request(limit, { ...o, signal: o.abort?.signal })
  /** a request granted at once: with limit 1, every permit of the key is then ours */
  const holder = async (limit = 1, o: RequestOptions = {}) => {
    const w = t.request(limit, o)
    t.scripts.take('acquire').answer(GRANTED)
    await settle()
    return w
  }
  /** a waiter Redis granted, read a lease late: its grant is confirmed with a renewal */
  const confirming = async (abort?: AbortController) => {
    ask(2, { abort })
    const acquire = t.scripts.take('acquire')
    t.advance(LEASE_MS)
    acquire.answer(GRANTED)
    await settle()
    return t.scripts.take('renew')
  }
  /** a waiter Redis queued */
  const queued = async (abort?: AbortController, maxQueue?: number) => {
    ask(2, { abort, ...(maxQueue === undefined ? {} : { maxQueue }) })
    const acquire = t.scripts.take('acquire')
    acquire.answer(QUEUED)
    await settle()
    return idOf(acquire)
  }
  /**
   * a waiter parked: with `queue.maxLength` 1, a first acquire may queue and is on its way; the
   * second, sent with `full`, is answered `full`. Returns the first's call, unanswered.
   */
  const parked = async (abort?: AbortController) => {
    ask(2, { maxQueue: 1 })
    ask(2, { maxQueue: 1, abort })
    const [first, second] = [t.scripts.take('acquire'), t.scripts.take('acquire')]
    second.answer(FULL)
    await settle()
    return first
  }
  current = t
  return { t, moves, ask, holder, confirming, queued, parked }
}

type Setup = ReturnType<typeof setup>

/** One scenario per allowed move; `it` checks that it made that move. */
const SCENARIOS: Record<string, (s: Setup) => Promise<void> | void> = {
  'new → deferred': async ({ holder, ask }) => {
    await holder()
    ask(1)
  },
  'new → sending': ({ ask }) => {
    ask(2)
  },
  'parked → deferred': async ({ t, holder, ask }) => {
    await holder(1, { maxQueue: 1 }) // every permit of the key is ours
    const abort = new AbortController()
    ask(1, { maxQueue: 1, abort }) // may queue: the bound's one place
    ask(1, { maxQueue: 1 }) // no room left: goes out with `full`
    await turn()
    const [, second] = [t.scripts.take('acquire'), t.scripts.take('acquire')]
    second.answer(FULL) // no slot free at once, and its room depends on the first: parked
    await settle()
    abort.abort() // the first gives up: room for the parked one, sent after this turn (every permit is ours)
  },
  'parked → sending': async ({ parked }) => {
    const first = await parked()
    first.answer(GRANTED) // granted, not queued: room for the parked one
    await settle()
  },
  'parked → refused': async ({ parked }) => {
    const first = await parked()
    first.answer(QUEUED) // queued: the bound is full
    await settle()
  },
  'parked → withdrawn': async ({ parked }) => {
    const abort = new AbortController()
    await parked(abort)
    abort.abort()
  },
  'parked → detached': async ({ t, parked }) => {
    await parked()
    t.shared.detachWaiters()
  },
  'deferred → sending': async ({ holder, ask }) => {
    await holder()
    ask(1)
    await turn()
  },
  'deferred → withdrawn': async ({ holder, ask }) => {
    const abort = new AbortController()
    await holder()
    ask(1, { abort })
    abort.abort()
  },
  'deferred → detached': async ({ t, holder, ask }) => {
    await holder()
    ask(1)
    t.shared.detachWaiters()
  },
  'sending → queued': async ({ queued }) => {
    await queued()
  },
  'sending → confirming': async ({ confirming }) => {
    await confirming()
  },
  'sending → granted': async ({ holder }) => {
    await holder()
  },
  'sending → parked': async ({ parked }) => {
    await parked()
  },
  'sending → refused': async ({ t, queued, ask }) => {
    await queued(undefined, 1) // the bound's one place is taken in Redis
    ask(2, { maxQueue: 1 }) // goes out with `full`
    t.scripts.take('acquire').answer(FULL) // no slot free at once
    await settle()
  },
  'sending → failed': async ({ t, ask }) => {
    ask(2)
    t.scripts.take('acquire').fail(new Error('connection to Redis closed'))
    await settle()
  },
  'sending → withdrawn': ({ ask }) => {
    const abort = new AbortController()
    ask(2, { abort })
    abort.abort()
  },
  'sending → detached': ({ t, ask }) => {
    ask(2)
    t.shared.detachWaiters()
  },
  'queued → confirming': async ({ t, queued }) => {
    const id = await queued()
    t.advance(LEASE_MS) // the grant message is read a lease after the acquire was sent
    t.shared.onGrantMessage(id)
  },
  'queued → granted': async ({ t, queued }) => {
    t.shared.onGrantMessage(await queued())
  },
  'queued → requeued': async ({ t, queued }) => {
    const id = await queued()
    const syncing = t.shared.syncAll()
    // [nearest expiry, lost, granted, missing, head, counted again, limit]: dropped from the queue
    t.scripts.take('sync').answer([-1, [], [], [id], null, [], 2])
    await syncing
  },
  'queued → withdrawn': async ({ queued }) => {
    const abort = new AbortController()
    await queued(abort)
    abort.abort()
  },
  'queued → detached': async ({ t, queued }) => {
    await queued()
    t.shared.detachWaiters()
  },
  'confirming → confirming': async ({ t, confirming }) => {
    const renew = await confirming()
    t.advance(LEASE_MS) // the renewal's reply is read late too
    renew.answer(1)
    await settle()
  },
  'confirming → granted': async ({ confirming }) => {
    ;(await confirming()).answer(1)
    await settle()
  },
  'confirming → requeued': async ({ confirming }) => {
    ;(await confirming()).answer(0) // Redis no longer counts it: it waits again, under a new id
    await settle()
  },
  'confirming → failed': async ({ confirming }) => {
    ;(await confirming()).fail(new Error('connection to Redis closed'))
    await settle()
  },
  'confirming → withdrawn': async ({ confirming }) => {
    const abort = new AbortController()
    await confirming(abort)
    abort.abort()
  },
  'confirming → detached': async ({ t, confirming }) => {
    await confirming()
    t.shared.detachWaiters()
  },
}

describe('the waiter lifecycle: one table of allowed moves', () => {
  it('has a scenario for every allowed move, and none for a move it does not allow', () => {
    expect(Object.keys(SCENARIOS).sort()).toEqual([...ALLOWED].sort())
  })

  it('reaches every state from `new`, and ends are the states with no way out', () => {
    const reached = new Set<WaiterState>(['new'])
    for (const from of reached) for (const to of WAITER_TRANSITIONS[from]) reached.add(to)
    expect([...reached].sort()).toEqual([...STATES].sort())
    const ends = STATES.filter((s) => WAITER_TRANSITIONS[s].length === 0)
    expect(ends.sort()).toEqual(['detached', 'failed', 'granted', 'refused', 'requeued', 'withdrawn'])
  })

  describe('every allowed move is made by the replica when its scenario happens', () => {
    for (const [move, scenario] of Object.entries(SCENARIOS)) {
      it(move, async () => {
        const s = setup()
        await scenario(s)
        await settle()
        expect(s.moves).toContain(move)
        // and no move outside the table on the way (a refused one would have thrown)
        expect(s.moves.filter((m) => !ALLOWED.includes(m))).toEqual([])
      })
    }
  })

  describe('every other move is refused where moves are made (Waiter.move)', () => {
    const deadlines = new Deadlines()
    const tickets: Ticket[] = []
    afterEach(() => {
      for (const t of tickets.splice(0)) t.fail(new Error('test over'))
    })

    /** a waiter of a real KeySemaphore, walked to `state` by allowed moves (the shortest way) */
    function waiterIn(state: WaiterState, illegal: (err: IllegalTransitionError) => void): Waiter<KeySemaphore> {
      const semaphores = new Semaphores({ prefix: 'p', syncMs: 1_000, now: () => 0, illegal })
      const sem = semaphores.of(key, { limit: 1 })
      const ticket = new Ticket(
        key,
        { limit: 1, maxQueue: 10, deadline: Date.now() + 60_000 },
        () => {},
        () => {},
        () => {},
        deadlines,
      )
      tickets.push(ticket)
      const waiter = sem.join('r1/1', ticket, new FairShare().of(undefined))
      const way = new Map<WaiterState, WaiterState[]>([['new', []]])
      for (const [from, path] of way)
        for (const to of WAITER_TRANSITIONS[from]) if (!way.has(to)) way.set(to, [...path, to])
      for (const to of way.get(state)!) expect(waiter.move(to)).toBe(true)
      return waiter
    }

    const refusals = STATES.flatMap((from) =>
      STATES.filter((to) => !WAITER_TRANSITIONS[from].includes(to)).map((to) => [from, to] as const),
    )

    it(`${refusals.length} moves in all (every pair of states but the ${ALLOWED.length} allowed)`, () => {
      expect(refusals.length + ALLOWED.length).toBe(STATES.length * STATES.length)
    })

    for (const [from, to] of refusals) {
      it(`${from} → ${to}`, () => {
        const reported: IllegalTransitionError[] = []
        const waiter = waiterIn(from, (err) => reported.push(err))
        expect(waiter.move(to)).toBe(false)
        expect(waiter.state).toBe(from)
        expect(reported.map((e) => [e.name, e.waiterId, e.from, e.to, e.message])).toEqual([
          ['IllegalTransitionError', 'r1/1', from, to, `limiter bug: waiter r1/1 cannot go from ${from} to ${to}`],
        ])
      })
    }

    it('throws when the reporter throws (as SharedPermits does without a `bug` hook)', () => {
      const waiter = waiterIn('granted', (err) => {
        throw err
      })
      expect(() => waiter.move('queued')).toThrow(new IllegalTransitionError('r1/1', 'granted', 'queued'))
    })
  })
})

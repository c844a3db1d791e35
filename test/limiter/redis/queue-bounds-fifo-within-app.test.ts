import { afterEach, expect, it } from 'vitest'
import { type Call, fakeShared, idOf, QUEUED, settle, turn } from './fake-scripts.js'

// Order within an app near the queue bounds (docs/redis-limiter.md, "maxQueued"): a waiter the bounds
// had no room for goes out with `full`; answered `full` while room came meanwhile, it is sent again,
// queueable — as a new arrival, so Redis places it behind whatever of its app it queued before. A
// later request of its app must therefore not go out queueable while it is still undecided: it goes
// out behind it, and Redis queues the earlier one first.

const FULL_REPLY = [2, 0, 0]
let current: ReturnType<typeof fakeShared> | undefined
afterEach(() => current?.close())

it('a waiter answered `full` and let in is queued in Redis ahead of a later request of its app that came while its answer was on its way (fake script runner)', async () => {
  const { scripts, request, shared } = (current = fakeShared())
  // limit 2, both slots held by another replica; Q1 and Q2 queued here fill `maxLength` 2
  const q1 = request(2, { maxQueue: 2 })
  const q2 = request(2, { maxQueue: 2 })
  const [c1, c2] = [scripts.take('acquire'), scripts.take('acquire')]
  c1.answer(QUEUED)
  c2.answer(QUEUED)
  await settle()
  // W: no room, its acquire goes out with `full`
  const w = request(2, { maxQueue: 2 })
  const cw = scripts.take('acquire')
  expect(cw.args[7]).toBe('1')
  const wId = idOf(cw)
  // in Redis the other replica released both slots: Q1 and Q2 granted, then W's acquire found them taken
  shared.onGrantMessage(idOf(c1))
  shared.onGrantMessage(idOf(c2))
  await settle()
  expect(q1.permit).toBeDefined()
  expect(q2.permit).toBeDefined()
  // X, same app, comes while W's `full` answer is on its way
  const x = request(2, { maxQueue: 2 })
  await turn() // (deferred: this replica holds both permits)
  const cx = scripts.take('acquire')
  const xId = idOf(cx)
  // every acquire that may queue its waiter, in the order Redis runs them
  const queueable: string[] = []
  const note = (c: Call): void => {
    if (c.args[7] === '0') queueable.push(idOf(c) === wId ? 'W' : idOf(c) === xId ? 'X' : idOf(c))
  }
  note(cx)
  cw.answer(FULL_REPLY)
  await settle()
  await turn()
  await settle()
  // X, if it went out with `full`, is answered `full` too (both slots still held)
  if (cx.args[7] === '1') {
    cx.answer(FULL_REPLY)
    await settle()
    await turn()
    await settle()
  }
  for (const c of scripts.calls.filter((c) => c.name === 'acquire')) note(c)
  expect(queueable).toEqual(['W', 'X'])
  // W is sent again as a new arrival (age 0); nothing else reorders them
  const again = scripts.calls.find((c) => c.name === 'acquire' && idOf(c) === wId)
  expect(again?.args[6]).toBe(0)
  expect(w.error).toBeUndefined()
  expect(x.error).toBeUndefined()
})

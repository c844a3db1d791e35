import { expect } from 'vitest'
import { settle, type fakeShared } from './fake-scripts.js'

/**
 * On the fake script runner, limit 2: a request queued and granted by message (so its id is remembered as once
 * queued: a ghost's grant could name it), its permit kept once a second request's grant found the queue empty, then a
 * third request taking the kept permit — its `reuse` on its way, unanswered. For the interleavings of a grant message
 * with a reuse (review3-kept-grant-message, review4-kept-ghost-during-reuse).
 */
export async function reuseOfOnceQueued(f: ReturnType<typeof fakeShared>) {
  const { scripts, shared, request } = f
  const r0 = request(2)
  const acquire0 = scripts.take('acquire')
  const id0 = String(acquire0.args[0])
  acquire0.answer([0, 0, 0, 2]) // queued: the key was full
  await settle()
  shared.onGrantMessage(id0) // granted by another replica's release (its id is remembered: it was queued)
  await settle()
  expect(r0.permit).toBeDefined()
  const r1 = request(2)
  scripts.take('acquire').answer([1, 1, 0, 2]) // granted, its grant found the queue empty: the key is quiet
  await settle()
  r0.permit!.release() // kept: no script
  await settle()
  expect(scripts.names()).toEqual([])
  const r2 = request(2) // the kept permit: its reuse goes out
  const reuse = scripts.take('reuse')
  expect(String(reuse.args[0])).toBe(id0)
  return { id0, r1, r2, reuse }
}

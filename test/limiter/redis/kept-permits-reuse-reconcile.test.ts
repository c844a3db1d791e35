import { afterEach, describe, expect, it } from 'vitest'
import { fakeShared, permitId, settle } from './fake-scripts.js'

// LIMITER-CHECKLIST "Redis older than the replica" + "Never over the limit": while a reuse script is on its way,
// the kept id is in neither the held list nor `keep` of a sync sent after it. A reconciling sync (asked, or Redis
// found to have forgotten this replica) removes every holder of this replica it is not told of — the reused id —
// after the reuse script renewed it, and the request then starts on a permit Redis does not count.
let current: ReturnType<typeof fakeShared> | undefined
afterEach(() => current?.close())

describe('kept permits: a reuse in flight vs a reconciling sync (fake script runner)', () => {
  it('the sync sent after the reuse names the kept id (held or keep), so reconciliation spares it', async () => {
    const { scripts, shared, request } = (current = fakeShared({ keepPermits: true }))
    const first = request(1)
    scripts.take('acquire').answer([1, 1, 0, 1]) // granted, queue empty: may be kept
    await settle()
    const id = permitId(first.permit)
    first.permit!.release() // kept: no script
    await settle()
    expect(scripts.names()).toEqual([])
    const next = request(1) // the kept permit: a reuse script goes out
    const reuse = scripts.take('reuse')
    expect(String(reuse.args[0])).toBe(id)
    shared.stateWentBack() // e.g. the heartbeat saw the registry go back: the next sync reconciles
    const syncing = shared.syncAll()
    await settle()
    const sync = scripts.take('sync') // sent after the reuse, on the same connection: runs after it
    const args = sync.args.map(String)
    // Redis: reuse renews `id` ({1, 1}); then the sync reconciles and ZREMs `id` as a ghost unless it is named
    reuse.answer([1, 1])
    sync.answer([1_000, [], [], [], null, [], 1, 0, 1, 0]) // ghosts: 1 (the reused id), held_now 0
    await syncing
    await settle()
    expect(args).toContain(id) // named (in `keep`): the reconciliation spares it
    expect(next.permit?.canStart()).toBe(true)
    next.permit?.release()
  })
})

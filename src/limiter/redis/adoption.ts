import type { FairShare } from '../fairness/policy.js'
import type { KeySemaphore } from './key-semaphore.js'
import type { ReplicaScripts } from './replica-scripts.js'
import { isKeyError } from './script.js'
import type { Semaphores } from './semaphores.js'
import type { SharedHooks } from './shared-types.js'
import type { Grant, SluicePermit } from './ticket.js'

export interface AdoptionDeps {
  readonly scripts: ReplicaScripts
  readonly semaphores: Semaphores
  readonly hooks: Pick<SharedHooks, 'keyBroken'>
  readonly fairness: FairShare
  readonly now: () => number
  readonly nextId: (policy: { readonly app: string; readonly maxHeld: number }, arrivedAt: number) => string
}

const asError = (err: unknown): Error => (err instanceof Error ? err : new Error(String(err)))

/**
 * Counts in Redis the permits granted without it that are still in flight (docs/redis-limiter.md,
 * "Failure modes"). `adopted` is called for each key whose script succeeded, even when another key's
 * failed; a key Redis refuses keeps its permits; any other failure rejects after the successes.
 */
export async function adoptPermits(
  d: AdoptionDeps,
  permits: readonly SluicePermit[],
  adopted: (permit: SluicePermit, before: Grant) => void,
): Promise<void> {
  const groups = new Map<string, { sem: KeySemaphore; permits: SluicePermit[]; ids: string[] }>()
  for (const permit of permits) {
    if (permit.grant.kind === 'redis' || permit.released) continue
    const sem = d.semaphores.of(permit.key, permit.limits)
    const group = groups.get(sem.tag) ?? { sem, permits: [], ids: [] }
    group.permits.push(permit)
    // its app in the id: Redis counts it against the app's cap and in `/status`
    group.ids.push(d.nextId(d.fairness.of(permit.app), Date.now()))
    groups.set(sem.tag, group)
  }
  const results = await Promise.allSettled(
    [...groups.values()].map(async ({ sem, permits: list, ids }) => {
      // Given back by the next sync until adopted, so a failure below never leaves them counted forever.
      sem.dropLater(ids)
      const sentAt = d.now()
      try {
        await d.scripts.adopt(sem, ids)
      } catch (err) {
        if (!isKeyError(err)) throw err
        sem.undrop(ids)
        d.hooks.keyBroken(sem.key, err)
        d.semaphores.collect(sem)
        return
      }
      list.forEach((permit, i) => {
        const id = ids[i]!
        if (permit.released) return // released while we adopted it: its id stays to be given back
        sem.undrop([id])
        const before = permit.adoptedBy(sem.tag, id)
        sem.hold(id, permit, sentAt + d.scripts.replica.leaseMs, sentAt)
        adopted(permit, before)
      })
    }),
  )
  const failure = results.find((r) => r.status === 'rejected')
  if (failure) throw asError(failure.reason)
}

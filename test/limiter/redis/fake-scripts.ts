import type { RunOptions, ScriptDef, ScriptRunner } from '../../../src/limiter/redis/script.js'

/** One script call a FakeScripts holds until the test answers it. */
export interface Call {
  readonly name: string
  readonly args: readonly (string | number)[]
  readonly options: RunOptions | undefined
  answer(reply: unknown): void
  fail(err: Error): void
}

/**
 * A script runner that answers each script when the test says so, in the order the test picks: the
 * race rules of the shared side without timing (the same shape as races.test.ts's).
 */
export class FakeScripts implements ScriptRunner {
  readonly calls: Call[] = []
  run(def: ScriptDef, _keys: readonly string[], args: readonly (string | number)[], options?: RunOptions): Promise<unknown> {
    return new Promise((resolve, reject) => this.calls.push({ name: def.name, args, options, answer: resolve, fail: reject }))
  }
  /** the oldest unanswered call of that script (and takes it off the list) */
  take(name: string): Call {
    const i = this.calls.findIndex((c) => c.name === name)
    if (i < 0) throw new Error(`no ${name} script sent (sent: ${this.calls.map((c) => c.name).join(', ') || 'none'})`)
    return this.calls.splice(i, 1)[0]!
  }
  names(): string[] {
    return this.calls.map((c) => c.name)
  }
}

/** Lets the replies' continuations run (a few microtask hops). */
export async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await Promise.resolve()
}

export const turn = (): Promise<void> => new Promise((r) => setImmediate(r))

import type { Socket } from 'node:net'
import type { Redis } from 'ioredis'
import { describe, expect, it } from 'vitest'
import { Scripts, type ScriptDef } from '../../../src/limiter/redis/script.js'
import { useRedis } from '../../support/use-redis.js'

const redis = useRedis()

// The scripts one turn of the event loop sends go out in one write; a release (urgent) is written
// at once, with those held back before it, in order (Scripts in src/limiter/redis/script.ts).
const ECHO: ScriptDef = { name: 'echo', numberOfKeys: 0, lua: 'return ARGV[1]' }
const URGENT_ECHO: ScriptDef = { ...ECHO, name: 'urgent echo', urgent: true }

/** Counts the writes that reach the connection's socket (one per system call Node makes). */
async function connected(): Promise<{ client: Redis; writes: () => number }> {
  const client = redis.client()
  await client.ping()
  const socket = client.stream as Socket & { _writev?: (...a: unknown[]) => void; _write: (...a: unknown[]) => void }
  let writes = 0
  const write = socket._write.bind(socket)
  socket._write = (...a: unknown[]) => (writes++, write(...a))
  if (socket._writev) {
    const writev = socket._writev.bind(socket)
    socket._writev = (...a: unknown[]) => (writes++, writev(...a))
  }
  return { client, writes: () => writes }
}

describe('redis scripts: one write per turn of the event loop', () => {
  it('sends the scripts of one turn together, and each gets its own answer', async () => {
    const { client, writes } = await connected()
    const scripts = new Scripts(client, undefined, 5_000)
    await scripts.run(ECHO, [], ['warm']) // loaded into Redis's script cache (NOSCRIPT once)
    const before = writes()
    const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => scripts.run(ECHO, [], [`a${i}`])))
    expect(answers).toEqual(Array.from({ length: 8 }, (_, i) => `a${i}`))
    expect(writes() - before).toBe(1)
    client.disconnect()
  })

  it('writes an urgent script at once, with the scripts held back before it, in their order', async () => {
    const { client, writes } = await connected()
    const scripts = new Scripts(client, undefined, 5_000)
    await scripts.run(ECHO, [], ['warm'])
    await scripts.run(URGENT_ECHO, [], ['warm'])
    const before = writes()
    const order: string[] = []
    const held = [scripts.run(ECHO, [], ['first']), scripts.run(ECHO, [], ['second'])].map((p) =>
      p.then((a) => order.push(String(a))),
    )
    expect(writes() - before).toBe(0) // held until the turn ends…
    const urgent = scripts.run(URGENT_ECHO, [], ['release']).then((a) => order.push(String(a)))
    expect(writes() - before).toBe(1) // …or until an urgent script: all three in one write, now
    await Promise.all([...held, urgent])
    expect(order).toEqual(['first', 'second', 'release'])
    client.disconnect()
  })
})

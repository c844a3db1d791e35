import { describe, expect, it, onTestFinished } from 'vitest'
import { send, until, type Answer } from '../support/http.js'
import { adminJson, startProxy } from '../support/proxy.js'
import { basicAuth } from '../support/sim.js'
import { echoUpstream } from './echo-upstream.js'
import { COUNTRIES, reuseStatus } from './support.js'

// An app's followers count toward its maxQueued (docs/reuse.md, "How many may follow"): a batch app
// with maxQueued 1 cannot fill the followers of a key, and another app's identical read still follows
// the call and is served. App identity off: the header names the app; identical reads of both apps share.

const MAX_LENGTH = 5

describe("followers count toward their app's maxQueued", () => {
  it('a batch app with maxQueued 1 keeps one follower, not 5; the web app is served', async () => {
    const upstream = await echoUpstream()
    const proxy = await startProxy({
      upstream: upstream.apiUrl,
      queue: { maxLength: MAX_LENGTH },
      fairness: { apps: { batch: { class: 'batch', maxQueued: 1, maxHeld: 1 } } },
    })
    onTestFinished(() => proxy.close())
    const read = (app: string): { answer: Promise<Answer>; settled: () => boolean } => {
      let done = false
      const answer = send(proxy.url, COUNTRIES, {
        headers: { authorization: basicAuth('org1', 'app-key'), 'x-sluice-app': app },
      }).finally(() => (done = true))
      return { answer, settled: () => done }
    }
    /** one more read, once it follows the call or is answered (in an object: an async function would wait for a promise it returned) */
    const oneMore = async (app: string): Promise<{ answer: Promise<Answer> }> => {
      const before = (await reuseStatus(proxy)).coalescing.followers
      const r = read(app)
      await until(
        async () => r.settled() || (await reuseStatus(proxy)).coalescing.followers > before,
        `${app}'s read follows or is answered`,
      )
      return { answer: r.answer }
    }

    upstream.hold()
    const leader = read('batch').answer
    await until(() => upstream.held === 1, "the batch app's call reaches the upstream")
    const batch: Promise<Answer>[] = []
    for (let i = 0; i < MAX_LENGTH; i++) batch.push((await oneMore('batch')).answer)
    const web = (await oneMore('web')).answer
    const status = await adminJson<{ reuse: { coalescing: { followers: number; apps: Record<string, number> } } }>(
      proxy,
      '/status',
    )
    expect(status.reuse.coalescing).toMatchObject({ followers: 2, apps: { batch: 1, web: 1 } })
    upstream.release()
    expect((await web).status).toBe(200)
    expect((await leader).status).toBe(200)
    const got = await Promise.all(batch)
    expect(got.map((a) => a.status)).toEqual([200, 503, 503, 503, 503])
    expect(got[1]!.json()).toEqual([
      {
        code: 'SLUICE_QUEUE_FULL',
        message:
          '1 requests of app batch already wait on GET /properties/countries (instance org1) (its maxQueued); try again later',
      },
    ])
    expect(upstream.seen).toHaveLength(1)
  })
})

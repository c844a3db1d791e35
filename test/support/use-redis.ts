import { afterAll, afterEach, beforeAll, beforeEach } from 'vitest'
import { startRedis, type TestRedis } from './redis.js'

// Kept apart from ./redis.ts, which the benchmarks import outside vitest.

/**
 * A private redis-server for a test file: started before its tests (before each test with
 * `{ each: true }`) and closed after. `const redis = useRedis()` at the top of the file, then
 * `redis.url`, `redis.client()`, `redis.stop()`… inside the tests.
 */
export function useRedis(o: { each?: boolean } = {}): TestRedis {
  let server: TestRedis | undefined
  const current = (): TestRedis => {
    if (server === undefined) throw new Error('useRedis: the server is only there while tests run')
    return server
  }
  ;(o.each ? beforeEach : beforeAll)(async () => {
    server = await startRedis()
  })
  ;(o.each ? afterEach : afterAll)(async () => {
    await server?.close()
    server = undefined
  })
  return {
    get host() {
      return current().host
    },
    get port() {
      return current().port
    },
    get url() {
      return current().url
    },
    get managed() {
      return current().managed
    },
    client: () => current().client(),
    stop: (options) => current().stop(options),
    start: () => current().start(),
    freeze: () => current().freeze(),
    thaw: () => current().thaw(),
    close: () => current().close(),
  }
}

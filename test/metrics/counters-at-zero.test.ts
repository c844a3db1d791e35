import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { readBuildInfo, REVISION_FILE } from '../../src/metrics/build-info.js'
import { createMemoryLimiter, type MemoryLimiter } from '../../src/limiter/memory/index.js'
import { REDIS_OPERATIONS } from '../../src/limiter/redis/index.js'
import { createMetrics, LIMITER_MODES } from '../../src/metrics/index.js'
import { parsePromText, select, valueOf } from './prom-text.js'
import { catalog, record, settings } from './records.js'

// Alerts read increase()/rate(), which see nothing of a series' first sample: a counter an alert reads
// must be exported at 0 before its first event wherever its labels are known (docs/observability.md#alerts).

const SEARCH = 'POST /accounts/search'

let limiter: MemoryLimiter | undefined
afterEach(async () => {
  await limiter?.close()
  limiter = undefined
})

describe('counters exist at 0 before their first event', () => {
  it('Redis errors per operation and limiter mode changes per mode, from the start', async () => {
    const metrics = createMetrics(settings(), { limiter: () => undefined, catalog, redisOperations: REDIS_OPERATIONS })
    const s = parsePromText((await metrics.scrape()).body)
    for (const operation of REDIS_OPERATIONS) {
      expect(valueOf(s, 'sluice_redis_errors_total', { operation }), operation).toBe(0)
      expect(valueOf(s, 'sluice_redis_command_duration_seconds_count', { operation }), operation).toBe(0)
    }
    for (const mode of LIMITER_MODES) expect(valueOf(s, 'sluice_limiter_mode_changes_total', { mode }), mode).toBe(0)
  })

  it('without Redis there are no Redis series at all', async () => {
    const metrics = createMetrics(settings(), { limiter: () => undefined, catalog })
    const s = parsePromText((await metrics.scrape()).body)
    expect(select(s, 'sluice_redis_errors_total')).toEqual([])
  })

  it('a key the limiter holds gets its 429, retry and lost-lease series at 0 at the next scrape', async () => {
    const metrics = createMetrics(settings(), { limiter: () => limiter, catalog, redisOperations: REDIS_OPERATIONS })
    limiter = createMemoryLimiter({ observer: metrics.observer })
    const permit = await limiter.acquire(
      { instance: 'org7', endpoint: SEARCH },
      { limit: 1, deadline: Date.now() + 60_000, maxQueue: 10 },
    )
    await metrics.scrape() // the scrape that first sees the key creates its series
    permit.release()
    const key = { endpoint: SEARCH, org: 'org7' }
    let s = parsePromText((await metrics.scrape()).body)
    expect(valueOf(s, 'sluice_upstream_429_total', key)).toBe(0)
    expect(valueOf(s, 'sluice_upstream_retries_total', key)).toBe(0)
    expect(valueOf(s, 'sluice_lease_lost_total', key)).toBe(0)
    // the first event is then an increase of 1
    metrics.observer.leaseLost?.({ instance: 'org7', endpoint: SEARCH })
    s = parsePromText((await metrics.scrape()).body)
    expect(valueOf(s, 'sluice_lease_lost_total', key)).toBe(1)
  })

  it('an (endpoint, org) seen for the first time gets its queue_full and queue_timeout series at 0', async () => {
    const metrics = createMetrics(settings(), { limiter: () => undefined, catalog })
    metrics.requestFinished(record({ endpoint: SEARCH, method: 'POST', instance: 'org3' }))
    const s = parsePromText((await metrics.scrape()).body)
    for (const outcome of ['queue_full', 'queue_timeout']) {
      expect(
        valueOf(s, 'sluice_requests_total', { endpoint: SEARCH, method: 'POST', code: '503', outcome, org: 'org3' }),
      ).toBe(0)
    }
  })
})

describe('sluice_build_info', () => {
  it('is 1, labelled with the version, the revision and the Node.js version', async () => {
    const build = { version: '9.8.7', revision: 'abcdef123456', node: '20.0.0' }
    const metrics = createMetrics(settings(), { limiter: () => undefined, catalog, build })
    const s = parsePromText((await metrics.scrape()).body)
    expect(select(s, 'sluice_build_info')).toEqual([{ name: 'sluice_build_info', labels: build, value: 1 }])
  })

  it("reads package.json's version and this Node.js by default", async () => {
    const { readFileSync } = await import('node:fs')
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
    const metrics = createMetrics(settings(), { limiter: () => undefined, catalog })
    const [info] = select(parsePromText((await metrics.scrape()).body), 'sluice_build_info')
    expect(info?.labels).toMatchObject({ version: pkg.version, node: process.versions.node })
    expect(info?.labels.revision).toMatch(/^([0-9a-f]{12}|unknown)$/)
  })
})

describe('sluice_build_info in the image', () => {
  // The image has no .git: its build writes the commit into dist/revision (Dockerfile, --build-arg REVISION).
  it('reads the revision the build wrote when there is no git clone, and `unknown` without either', () => {
    const root = mkdtempSync(join(tmpdir(), 'sluice-image-')) + '/'
    try {
      writeFileSync(`${root}package.json`, '{"version":"9.8.7"}')
      expect(readBuildInfo(root)).toMatchObject({ version: '9.8.7', revision: 'unknown' })
      mkdirSync(`${root}dist`)
      writeFileSync(`${root}${REVISION_FILE}`, '0123456789abcdef0123456789abcdef01234567\n')
      expect(readBuildInfo(root)).toMatchObject({ version: '9.8.7', revision: '0123456789ab' })
      writeFileSync(`${root}${REVISION_FILE}`, 'unknown\n')
      expect(readBuildInfo(root).revision).toBe('unknown')
    } finally {
      rmSync(root, { recursive: true, force: true })
    }
  })
})

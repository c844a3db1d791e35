import pino from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { FastifyInstance } from 'fastify'
import { buildAdminServer } from '../../src/admin/server.js'
import type { KeyStatus, Limiter, LimiterStatus } from '../../src/limiter/types.js'
import { createMetrics } from '../../src/metrics/index.js'
import { catalog, settings } from '../metrics/records.js'

// `/status` passes each key's app shares (KeyStatus.apps) through as the limiter reports them, and
// shows none for a key the limiter cannot tell them for (README "Admin port, metrics and logs").
// The limiter here is a fixed status: what the backends put in `apps` is theirs to test.

const KEYS: KeyStatus[] = [
  {
    instance: '1001',
    endpoint: 'POST /accounts/search',
    limit: 1,
    inFlight: 1,
    queued: 25,
    oldestWaitMs: 1_200,
    apps: [
      { app: 'batch', held: 1, queued: 24 },
      { app: 'web', held: 0, queued: 1 },
    ],
  },
  { instance: '1002', endpoint: 'GET /accounts/{id}', limit: 5, inFlight: 2, queued: 0, oldestWaitMs: 0 },
]

const fixedLimiter: Limiter = {
  backend: 'redis',
  mode: () => 'redis',
  acquire: () => Promise.reject(new Error('not used')),
  status: (): Promise<LimiterStatus> => Promise.resolve({ backend: 'redis', mode: 'redis', keys: KEYS }),
  ready: () => true,
  drain: () => undefined,
  close: () => Promise.resolve(),
}

let admin: FastifyInstance

beforeAll(async () => {
  admin = buildAdminServer({
    limiter: fixedLimiter,
    metrics: createMetrics(settings({ enabled: false }), { limiter: () => undefined, catalog }),
    isClosing: () => false,
    startedAt: Date.now(),
    logger: pino({ level: 'silent' }),
  })
  await admin.ready()
})
afterAll(async () => {
  await admin?.close()
})

describe('/status and the apps of a key', () => {
  it("passes each key's app shares through, and none for a key without them", async () => {
    const answer = await admin.inject({ method: 'GET', url: '/status' })
    expect(answer.statusCode).toBe(200)
    const keys = answer.json<{ keys: Record<string, unknown>[] }>().keys
    expect(keys[0]!.apps).toEqual([
      { app: 'batch', held: 1, queued: 24 },
      { app: 'web', held: 0, queued: 1 },
    ])
    expect('apps' in keys[1]!).toBe(false)
  })
})

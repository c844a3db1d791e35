import { describe, expect, it } from 'vitest'
import type { AcquireOptions, PermitKey } from '../../src/limiter/types.js'
import { send } from '../support/http.js'
import { useSimAndProxy } from '../support/proxy.js'

// With app identity off, the app is the one the x-sluice-app header names, else `default`; it is
// resolved once, passed to the limiter, written on the access line and counted per app with a
// bounded label (README "Apps: identity, access and keys").

const stack = useSimAndProxy({ latencyMs: 0 }, { metrics: { maxApps: 2 } })

describe('the app of a request, app identity off', () => {
  it('is the header, else default; reaches acquire, the access line and the metrics; never goes upstream', async () => {
    const { proxy } = stack
    const seen: (string | undefined)[] = []
    const limiter = proxy.app.limiter
    const acquire = limiter.acquire.bind(limiter)
    // Watches what the proxy hands the real limiter; the limiter itself still decides.
    limiter.acquire = (key: PermitKey, options: AcquireOptions) => {
      seen.push(options.app)
      return acquire(key, options)
    }
    const named = await send(proxy.url, '/v2/accounts/1', { headers: { 'x-sluice-app': 'web' } })
    expect(named.status).toBe(200)
    expect(named.json<{ headers: Record<string, string> }>().headers['x-sluice-app']).toBeUndefined()
    await send(proxy.url, '/v2/accounts/1')
    await send(proxy.url, '/v2/accounts/1', { headers: { 'x-sluice-app': 'bad app name!' } })
    await send(proxy.url, '/v2/accounts/1', { headers: { 'x-sluice-app': 'batch' } })
    await send(proxy.url, '/v2/accounts/1', { headers: { 'x-sluice-app': 'reports' } })
    expect(seen).toEqual(['web', 'default', 'default', 'batch', 'reports'])

    const lines = proxy.logs.filter((l) => l.msg === 'request')
    expect(lines.map((l) => l.app)).toEqual(['web', 'default', 'default', 'batch', 'reports'])

    const metrics = await (await fetch(proxy.adminUrl + '/metrics')).text()
    const count = (app: string): number => {
      const m = new RegExp(
        `^sluice_app_requests_total\\{app="${app}",code="200",outcome="forwarded"\\} (\\d+)$`,
        'm',
      ).exec(metrics)
      return m === null ? 0 : Number(m[1])
    }
    // metrics.maxApps = 2: the first two apps have series of their own, the rest are _other
    expect([count('web'), count('default'), count('_other')]).toEqual([1, 2, 2])
    expect(metrics).not.toContain('app="batch"')
    expect(metrics).toMatch(/^sluice_app_queue_wait_seconds_count\{app="web"\} 1$/m)
  })
})

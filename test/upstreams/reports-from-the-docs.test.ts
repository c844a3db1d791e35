import { readFileSync } from 'node:fs'
import { describe, expect, it, onTestFinished } from 'vitest'
import { parse as parseYaml } from 'yaml'
import { tokenHash } from '../support/apps.js'
import { send } from '../support/http.js'
import { startProxy } from '../support/proxy.js'
import { startSim } from '../support/sim.js'

/*
 * A new user's own API set up from docs/upstreams.md alone ("Describing an upstream"): the example
 * as the page shows it, only its URLs pointed at the simulator, beside the CRM with injected keys —
 * 4 at once per account, the account in a header, the app's own Bearer token passed through, its
 * app token in x-sluice-app-token and `reports *` in its orgs, `/status` as the page says.
 */

const DOC = readFileSync(new URL('../../docs/upstreams.md', import.meta.url), 'utf8')
const TOKEN = 'app-token-reports-DOCS-6f1d'
const OWN = 'own-token'

function documentedUpstreams(): Record<string, unknown>[] {
  const section = DOC.slice(DOC.indexOf('## Describing an upstream'))
  const yaml = /```yaml\n([\s\S]*?)```/.exec(section)![1]!
  return (parseYaml(yaml) as { upstreams: Record<string, unknown>[] }).upstreams
}

describe('the reports API of docs/upstreams.md, as written', () => {
  it('4 at once per account, the Bearer token untouched, the key configured in /status', async () => {
    const sim = await startSim({ latencyMs: 150 })
    onTestFinished(() => sim.close())
    const upstreams = documentedUpstreams().map((u): Record<string, unknown> => ({ ...u, url: sim.apiUrl }))
    expect(upstreams.map((u) => u.name)).toEqual(['trial', 'reports'])
    const proxy = await startProxy({
      upstream: sim.apiUrl,
      requestLog: false,
      apps: { enabled: true, list: { web: { tokens: [tokenHash(TOKEN)], orgs: ['1001', 'reports *'] } } },
      credentials: { inject: true },
      upstreams,
    })
    onTestFinished(() => proxy.close())

    const headers = { authorization: `Bearer ${OWN}`, 'x-sluice-app-token': TOKEN, 'x-account-id': 'acct-1' }
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, i) => send(proxy.url, `/reports/v1/exports/${i}`, { headers })),
    )
    expect(answers.map((a) => a.status)).toEqual(Array(12).fill(200))
    const got = answers.map((a) => JSON.parse(a.text) as { headers: Record<string, string>; path: string })
    expect(new Set(got.map((g) => g.headers.authorization))).toEqual(new Set([`Bearer ${OWN}`]))
    expect(got.some((g) => 'x-sluice-app-token' in g.headers)).toBe(false)
    // the sim sees every Bearer request as one instance: never more than the account's 4 at once
    const stats = Object.values(sim.stats().keys).filter((k) => k.instance === 'default')
    expect(stats.reduce((n, k) => n + k.requests, 0)).toBe(12)
    expect(Math.max(...stats.map((k) => k.maxInProgress))).toBeLessThanOrEqual(4)

    const status = (await (await fetch(`${proxy.adminUrl}/status`)).json()) as {
      rates?: { upstream?: string; instance: string; rate?: unknown }[]
    }
    expect(status.rates?.find((r) => r.upstream === 'reports' && r.instance === 'acct-1')?.rate).toEqual({
      requests: 100,
      windowMs: 10000,
      burst: 1,
    })
  })
})

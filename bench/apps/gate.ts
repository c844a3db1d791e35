/**
 * What app identity costs a request in the gate (docs/upstreams.md, "Credentials"): `resolve` for the
 * CRM's org with its key injected, for another upstream's org granted by `<name> *` with its key in
 * another header, and passing the app's own credentials. 2 million calls each, after a warm-up.
 * `npx tsx bench/apps/gate.ts`
 */
import { performance } from 'node:perf_hooks'
import pino from 'pino'
import { createHash } from 'node:crypto'
import { createAppGate } from '../../src/apps/gate.js'
import type { Injection } from '../../src/upstreams/credentials.js'

const TOKEN = 'bench-app-token-0123456789abcdef'
const hash = `sha256:${createHash('sha256').update(TOKEN).digest('hex')}`
const gate = createAppGate(
  {
    enabled: true,
    tokenHeader: 'x-sluice-app-token',
    list: { web: { tokens: [hash], orgs: ['1001', 'reports *'], endpoints: ['*'] } },
    reloadIntervalMs: 60_000,
  },
  { inject: true },
  'x-sluice-app',
  {
    log: pino({ level: 'silent' }),
    env: { SLUICE_ORG_KEY_1001: 'k-1001', 'SLUICE_ORG_KEY_reports.acct-1': 'k-acct-1' },
    upstreams: ['reports'],
    injects: true,
  },
)
const headers = { 'x-sluice-app-token': TOKEN }
const apiKey: Injection = { inject: true, header: 'x-api-key', scheme: 'none' }
const passed: Injection = { inject: false, header: 'authorization', scheme: 'basic' }

const CASES: [string, () => unknown][] = [
  ['CRM org, key injected (Basic)', () => gate.resolve(headers, '1001', 'GET /accounts/{id}', 'GET')],
  [
    'reports org by "reports *", key in x-api-key',
    () => gate.resolve(headers, 'reports acct-1', 'ALL /*', 'GET', 'acct-1', apiKey),
  ],
  [
    'reports org, own credentials passed',
    () => gate.resolve(headers, 'reports acct-1', 'ALL /*', 'GET', 'acct-1', passed),
  ],
]
const N = 2_000_000
for (const [name, run] of CASES) {
  for (let i = 0; i < 200_000; i++) run()
  const t = performance.now()
  for (let i = 0; i < N; i++) run()
  console.log(`${name}: ${(((performance.now() - t) / N) * 1e6).toFixed(0)} ns a call`)
}
gate.close()

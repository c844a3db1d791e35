import { spawn, type ChildProcess } from 'node:child_process'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startSim, type Sim } from '../../src/sim/index.js'
import { basic, startProxy, type RunningProxy } from '../support/proxy.js'
import { startRedis, type TestRedis } from '../support/redis.js'
import { freePort } from '../support/process.js'
import { tokenHash } from '../support/apps.js'
import { has, needs } from '../support/tools.js'

// Every query of the Grafana dashboard, evaluated by a real Prometheus (Debian's `prometheus`) that
// scrapes a real sluice (Redis backend) while it is under load: a panel that shows no data fails.
// The alerting rules are loaded too, and must evaluate without error. docs/observability.md#grafana-dashboard

const file = (path: string): string => fileURLToPath(new URL(`../../${path}`, import.meta.url))
const DASHBOARD = file('ops/grafana/sluice-dashboard.json')
const ALERTS = file('ops/prometheus/sluice-alerts.yaml')

const hasPrometheus = has('prometheus')
/** Grafana's $__rate_interval for a 1 s scrape interval: four scrapes, so rate() always has samples */
const RATE_INTERVAL = '4s'
/** how long the load runs before the queries (each query covers it) */
const WARM_UP_MS = 7_000

interface Target {
  expr: string
  refId: string
}
interface Panel {
  type: string
  title: string
  targets?: Target[]
  panels?: Panel[]
}

const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as { panels: Panel[] }
const panels = dashboard.panels.flatMap((p) => [p, ...(p.panels ?? [])]).filter((p) => p.type !== 'row')

/** A panel's query as Grafana sends it, with the dashboard's variables set. */
const asSent = (expr: string, org: string, namespace = '.*'): string =>
  expr
    .replaceAll('$__rate_interval', RATE_INTERVAL)
    .replaceAll('$org', org)
    .replaceAll('$upstream', '.*')
    .replaceAll('$endpoint', '.*')
    .replaceAll('$app', '.*')
    .replaceAll('$namespace', namespace)
    .replaceAll('$job', '.*')
    .replaceAll('$pod', '.*')

// sluice's target carries the labels prometheus-operator gives a pod's target; a stand-in for
// kube-state-metrics and the kubelet's cAdvisor serves the series the Pods row joins on them, for
// this pod and for another release's pod that no panel may show.
const POD = { namespace: 'crm', pod: 'egress-sluice-0' }
const KUBERNETES_SERIES = [
  'kube_pod_container_resource_limits{namespace="crm", pod="egress-sluice-0", container="sluice", resource="memory", unit="byte"} 268435456',
  'kube_pod_container_resource_limits{namespace="crm", pod="egress-sluice-0", container="sluice", resource="cpu", unit="core"} 1',
  'kube_pod_container_resource_requests{namespace="crm", pod="egress-sluice-0", container="sluice", resource="cpu", unit="core"} 0.1',
  'kube_pod_container_status_restarts_total{namespace="crm", pod="egress-sluice-0", container="sluice"} 2',
  'container_memory_working_set_bytes{namespace="crm", pod="egress-sluice-0", container="sluice"} 150000000',
  'kube_pod_container_resource_limits{namespace="crm", pod="other-sluice-0", container="sluice", resource="memory", unit="byte"} 1',
  'container_memory_working_set_bytes{namespace="crm", pod="other-sluice-0", container="sluice"} 1',
  'kube_pod_container_status_restarts_total{namespace="crm", pod="other-sluice-0", container="sluice"} 7',
].join('\n')

// App identity is on, so the Apps row has its refusals to show: every worker is an app with a token,
// and one more sends a token sluice does not know (401) now and then.
const TOKENS = { web: 'dashboard-web-token-1c9e', batch: 'dashboard-batch-token-7a42' }

interface Series {
  metric: Record<string, string>
  values: [number, string][]
}

// Skipped, with the reason in its name, where Debian's `prometheus` is not installed (.ci/run installs it).
describe.skipIf(!hasPrometheus)(
  `the dashboard against a real Prometheus scraping sluice under load (skipped without Debian's prometheus) ${needs('prometheus')}`,
  () => {
    let redis: TestRedis
    let sim: Sim
    let proxy: RunningProxy
    let prometheus: ChildProcess
    let kubernetes: Server
    let promUrl: string
    let dataDir: string
    let loadStart = 0
    let stopLoad = false
    const workers: Promise<void>[] = []

    const query = async (
      path: string,
      params: Record<string, string>,
    ): Promise<{ status: string; data: { resultType: string; result: unknown } }> => {
      const res = await fetch(`${promUrl}${path}?${new URLSearchParams(params).toString()}`)
      return (await res.json()) as { status: string; data: { resultType: string; result: unknown } }
    }
    const range = async (expr: string): Promise<Series[]> => {
      const answer = await query('/api/v1/query_range', {
        query: expr,
        start: String(loadStart / 1000),
        end: String(Date.now() / 1000),
        step: '1',
      })
      expect(answer.status, expr).toBe('success')
      return answer.data.result as Series[]
    }

    beforeAll(async () => {
      redis = await startRedis()
      sim = await startSim({ latencyMs: 40, rejectRatio: 0.1 })
      proxy = await startProxy({
        upstream: sim.apiUrl,
        redis: { url: redis.url },
        requestLog: false,
        // three organisations, two own series: the third is `_other`; waits by organisation for its panel
        metrics: { maxInstances: 2, queueWaitByOrg: true },
        apps: {
          enabled: true,
          list: {
            web: { tokens: [tokenHash(TOKENS.web)], orgs: ['*'] },
            batch: { tokens: [tokenHash(TOKENS.batch)], orgs: ['*'] },
          },
        },
        retry: { baseDelayMs: 5, maxDelayMs: 20 },
      })

      kubernetes = createServer((_req, res) =>
        res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' }).end(`${KUBERNETES_SERIES}\n`),
      )
      await new Promise<void>((resolve) => kubernetes.listen(0, '127.0.0.1', resolve))
      const kubernetesTarget = `127.0.0.1:${(kubernetes.address() as AddressInfo).port}`

      dataDir = mkdtempSync(join(tmpdir(), 'sluice-prometheus-'))
      const port = await freePort()
      promUrl = `http://127.0.0.1:${port}`
      const config = join(dataDir, 'prometheus.yml')
      const admin = new URL(proxy.adminUrl)
      writeFileSync(
        config,
        [
          'global: { scrape_interval: 1s, evaluation_interval: 1s }',
          `rule_files: [${JSON.stringify(ALERTS)}]`,
          'scrape_configs:',
          '  - job_name: sluice',
          `    static_configs: [{ targets: [${JSON.stringify(`${admin.hostname}:${admin.port}`)}], labels: ${JSON.stringify(POD)} }]`,
          '  - job_name: kubernetes',
          `    static_configs: [{ targets: [${JSON.stringify(kubernetesTarget)}] }]`,
          '',
        ].join('\n'),
      )
      prometheus = spawn(
        'prometheus',
        [
          `--config.file=${config}`,
          `--storage.tsdb.path=${join(dataDir, 'data')}`,
          `--web.listen-address=127.0.0.1:${port}`,
          '--log.level=warn',
        ],
        { stdio: 'ignore' },
      )
      const readyBy = Date.now() + 15_000
      for (;;) {
        const ok = await fetch(`${promUrl}/-/ready`).then(
          (r) => r.ok,
          () => false,
        )
        if (ok) break
        if (Date.now() > readyBy) throw new Error('prometheus did not become ready in 15 s')
        await new Promise((r) => setTimeout(r, 100))
      }

      // The load: queueing on a limit-1 endpoint (org1, and org3 counted as _other), a limit-5 endpoint
      // with versions (org2), an endpoint the catalog does not know, and the sim's 10% of 429s.
      loadStart = Date.now()
      const worker = async (
        org: string,
        path: string,
        init: { method?: string; headers?: Record<string, string>; body?: string },
        pauseMs = 0,
      ): Promise<void> => {
        const token = org === 'org1' ? TOKENS.web : TOKENS.batch
        while (!stopLoad) {
          await fetch(`${proxy.url}${path}`, {
            ...init,
            headers: { authorization: basic(org), 'x-sluice-app-token': token, ...init.headers },
          })
            .then((r) => r.arrayBuffer())
            .catch(() => undefined)
          if (pauseMs > 0) await new Promise((r) => setTimeout(r, pauseMs))
        }
      }
      const search = { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' }
      for (let i = 0; i < 3; i++) workers.push(worker('org1', '/v2/accounts/search', search))
      for (let i = 0; i < 2; i++)
        workers.push(
          worker('org3', '/v2/accounts/search', {
            ...search,
            headers: { ...search.headers, 'neon-api-version': '2.9' },
          }),
        )
      for (let i = 0; i < 2; i++)
        workers.push(worker('org2', '/v2/accounts/42/contacts', { headers: { 'neon-api-version': '2.11' } }))
      workers.push(worker('org2', '/v2/widgets/7', {}))
      // an app whose token was rotated away: 401s, a few a second
      workers.push(
        worker('org2', '/v2/accounts/42', { headers: { 'x-sluice-app-token': 'a-token-sluice-does-not-know' } }, 200),
      )
      // Warm up, then wait until Prometheus holds enough scrapes of the load for every rate() window.
      await new Promise((r) => setTimeout(r, WARM_UP_MS))
      const scrapedBy = Date.now() + 10_000
      for (;;) {
        const answer = await query('/api/v1/query', { query: 'count_over_time(up{job="sluice"}[6s]) >= 5' })
        if ((answer.data.result as unknown[]).length > 0) break
        if (Date.now() > scrapedBy) throw new Error('prometheus did not scrape sluice 5 times in 6 s')
        await new Promise((r) => setTimeout(r, 250))
      }
    }, 60_000)

    afterAll(async () => {
      stopLoad = true
      await Promise.all(workers)
      prometheus?.kill('SIGTERM')
      kubernetes?.close()
      await proxy?.close()
      await sim?.close()
      await redis?.close()
      if (dataDir) rmSync(dataDir, { recursive: true, force: true })
    })

    it('every panel shows data with every organisation selected', async () => {
      const empty: string[] = []
      for (const panel of panels) {
        for (const target of panel.targets ?? []) {
          const series = await range(asSent(target.expr, '.*'))
          if (!series.some((s) => s.values.length > 0)) empty.push(`${panel.title} [${target.refId}]: ${target.expr}`)
        }
      }
      expect(empty).toEqual([])
    })

    it('the namespace, job and pod variables list this sluice, and a panel scoped to another namespace shows nothing', async () => {
      const variables = (
        JSON.parse(readFileSync(DASHBOARD, 'utf8')) as {
          templating: { list: { name: string; query: { query?: string } | string }[] }
        }
      ).templating.list
      const values = async (name: string): Promise<string[]> => {
        const q = variables.find((v) => v.name === name)!.query as { query: string }
        const [, selector, label] = /^label_values\((.+), (\w+)\)$/.exec(asSent(q.query, '.*'))!
        return (
          (await query('/api/v1/query', { query: `count by (${label}) (${selector})` })).data.result as Series[]
        ).map((s) => s.metric[label!]!)
      }
      expect(await values('namespace')).toEqual(['crm'])
      expect(await values('job')).toEqual(['sluice'])
      expect(await values('pod')).toEqual(['egress-sluice-0'])
      for (const panel of panels) {
        for (const target of panel.targets ?? []) {
          const series = await range(asSent(target.expr, '.*', 'billing'))
          expect(series, `${panel.title} [${target.refId}]`).toEqual([])
        }
      }
    })

    it("the Pods row shows this pod's Kubernetes series only, joined on namespace and pod", async () => {
      const podPanels = panels.filter((p) => / per pod /.test(p.title))
      expect(podPanels.map((p) => p.title.split(' per pod')[0])).toEqual([
        'CPU',
        'Memory vs limit',
        'Event-loop lag',
        'Restarts',
      ])
      for (const panel of podPanels) {
        for (const target of panel.targets ?? []) {
          const series = await range(asSent(target.expr, '.*'))
          expect(
            series.map((s) => s.metric),
            `${panel.title} [${target.refId}]`,
          ).toEqual([POD])
        }
      }
    })

    it('a panel filtered to one organisation shows only that organisation', async () => {
      for (const panel of panels) {
        for (const target of panel.targets ?? []) {
          if (!target.expr.includes('$org')) continue
          for (const s of await range(asSent(target.expr, 'org1'))) {
            if ('org' in s.metric) expect(s.metric.org, `${panel.title} [${target.refId}]`).toBe('org1')
          }
        }
      }
    })

    it('a panel that does not filter by organisation reads no metric with an org label, or says so in its title', async () => {
      const withOrg = new Set(
        (
          (await query('/api/v1/query', { query: 'count by (__name__) ({__name__=~"sluice_.+", org!=""})' })).data
            .result as Series[]
        ).map((s) => s.metric.__name__!),
      )
      expect(withOrg.has('sluice_requests_total')).toBe(true)
      for (const panel of panels) {
        const targets = panel.targets ?? []
        if (targets.some((t) => t.expr.includes('$org')) || panel.title.endsWith('(all organisations)')) continue
        const names = targets.flatMap((t) => [...t.expr.matchAll(/sluice_[a-z_]+/g)].map((m) => m[0]))
        for (const name of names) expect(withOrg.has(name), `${panel.title} reads ${name}, which has org`).toBe(false)
      }
    })

    it('loads every alerting rule, and each evaluates without error', async () => {
      const answer = await query('/api/v1/rules', {})
      const rules = (
        answer.data as unknown as { groups: { rules: { name: string; health: string; lastError?: string }[] }[] }
      ).groups.flatMap((g) => g.rules)
      expect(rules.length).toBeGreaterThanOrEqual(10)
      for (const rule of rules) expect([rule.name, rule.health, rule.lastError ?? '']).toEqual([rule.name, 'ok', ''])
    })
  },
)

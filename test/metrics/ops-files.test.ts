import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { parse as parseYaml } from 'yaml'
import { createMetrics } from '../../src/metrics/index.js'
import { createVersionMetrics } from '../../src/versioning/metrics.js'
import { catalog, settings } from './records.js'
import { has, needs } from '../support/tools.js'

const file = (path: string): string => fileURLToPath(new URL(`../../${path}`, import.meta.url))
const DASHBOARD = file('ops/grafana/sluice-dashboard.json')
const ALERTS = file('ops/prometheus/sluice-alerts.yaml')
const ALERT_TESTS = file('ops/prometheus/sluice-alerts.test.yaml')

/** Series Prometheus makes itself for every scrape target. */
const PROMETHEUS_OWN = ['up']
/** Kubernetes' own series the dashboard's Pods row reads: kube-state-metrics (v2 names) and the kubelet's cAdvisor. */
export const KUBERNETES_METRICS = [
  'kube_pod_container_resource_limits',
  'kube_pod_container_resource_requests',
  'kube_pod_container_status_restarts_total',
  'container_memory_working_set_bytes',
]

/** Every metric name the code registers: ours with the default metrics, and the versioning area's; and Prometheus's own. */
async function registeredNames(): Promise<Set<string>> {
  const metrics = createMetrics(settings({ defaultMetrics: true }), { limiter: () => undefined, catalog })
  createVersionMetrics(metrics.registry, () => [])
  const names = new Set<string>(PROMETHEUS_OWN)
  for (const m of await metrics.registry.getMetricsAsJSON()) {
    names.add(m.name)
    if (String(m.type) === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) names.add(m.name + suffix)
  }
  return names
}

const PROMQL_WORDS = new Set([
  'and',
  'or',
  'unless',
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'offset',
  'bool',
  'inf',
  'nan',
])

/** The metric names a PromQL expression reads (not functions, keywords, labels or Grafana variables). */
export function metricNamesIn(expr: string): string[] {
  const stripped = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""') // strings
    .replace(/#[^\n]*/g, ' ') // comments (the rules' threshold names)
    .replace(/\{[^}]*\}/g, ' ') // label matchers
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ') // label lists
    .replace(/\[[^\]]*\]/g, ' ') // ranges
    .replace(/\$\{?\w+\}?/g, ' ') // Grafana variables
    .replace(/\b\d+(?:\.\d+)?(?:ms|[smhdwy])?\b/g, ' ') // numbers and durations (offset 10m)
  const names: string[] = []
  for (const m of stripped.matchAll(/[a-zA-Z_:][a-zA-Z0-9_:]*(?=\s*(\()?)/g)) {
    const [word, call] = [m[0], m[1]]
    if (call || PROMQL_WORDS.has(word.toLowerCase())) continue
    names.push(word)
  }
  return names
}

interface Panel {
  type: string
  title: string
  datasource?: { type: string; uid: string }
  targets?: { expr: string; datasource?: { uid: string } }[]
  panels?: Panel[]
}

describe('ops/grafana/sluice-dashboard.json', () => {
  const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as {
    templating: { list: { name: string; type: string; query: unknown }[] }
    panels: Panel[]
  }
  const panels = dashboard.panels.flatMap((p) => [p, ...(p.panels ?? [])])
  const queries = panels.filter((p) => p.type !== 'row')

  it('has a Prometheus data-source variable that every query uses', () => {
    const ds = dashboard.templating.list.find((v) => v.type === 'datasource')
    expect(ds).toMatchObject({ name: 'datasource', query: 'prometheus' })
    for (const p of queries) {
      expect(p.datasource, p.title).toEqual({ type: 'prometheus', uid: '${datasource}' })
      for (const t of p.targets ?? []) expect(t.datasource?.uid, p.title).toBe('${datasource}')
    }
  })

  it('has the panels ops asked for', () => {
    const titles = queries.map((p) => p.title)
    for (const wanted of [
      /^Requests per second by outcome$/,
      /^Queue wait p50 \/ p99 \(all organisations\)$/,
      /^Queue depth per endpoint$/,
      /^In flight vs limit per endpoint$/,
      /^Upstream 429s/,
      /^Requests by API version$/,
      /^Retirements ahead$/,
      /^Limiter mode/,
      /^Queue wait by organisation$/,
      /^Requests per second by app and outcome/,
      /^Queue wait p50 \/ p99 by app/,
      /^Permits held by app/,
      /^App identity refusals \(401 \/ 403\) by app/,
      /^CPU per pod/,
      /^Memory vs limit per pod/,
      /^Event-loop lag per pod/,
      /^Restarts per pod/,
    ]) {
      expect(
        titles.some((t) => wanted.test(t)),
        String(wanted),
      ).toBe(true)
    }
  })

  it("has namespace, job and pod variables, and scopes every query of sluice's series by them", () => {
    const names = dashboard.templating.list.map((v) => v.name)
    expect(names.slice(0, 4)).toEqual(['datasource', 'namespace', 'job', 'pod'])
    for (const p of queries) {
      for (const t of p.targets ?? []) {
        const selectors = t.expr.match(/\b[a-z_:][a-z0-9_:]*\{[^}]*\}/g) ?? []
        expect(selectors.length, p.title).toBeGreaterThan(0)
        for (const selector of selectors) {
          const name = selector.slice(0, selector.indexOf('{'))
          // Kubernetes' series carry no job of ours: they are joined on (namespace, pod) with a scoped sluice series
          if (KUBERNETES_METRICS.includes(name))
            expect(t.expr, p.title).toMatch(
              /on \(namespace, pod\) group_left \(\) group by \(namespace, pod\) \(sluice_limiter_mode\{namespace=~"\$namespace", job=~"\$job", pod=~"\$pod"\}\)/,
            )
          else expect(selector, p.title).toContain('namespace=~"$namespace", job=~"$job", pod=~"$pod"')
        }
      }
    }
  })

  it('filters every panel by $org, or says in its title that it is across organisations', () => {
    for (const p of queries) {
      const filtered = (p.targets ?? []).some((t) => t.expr.includes('$org'))
      if (!filtered) expect(p.title, p.title).toMatch(/\(all organisations\)$/)
    }
  })

  it('splits every per-key family by upstream: its selector takes $upstream, its rows keep the label (docs/upstreams.md)', () => {
    // the families whose series carry `upstream` when more than one upstream is configured (src/metrics/index.ts)
    const keyed = [
      'sluice_requests_total',
      'sluice_queue_depth',
      'sluice_permits_in_flight',
      'sluice_queue_oldest_wait_seconds',
      'sluice_limit',
      'sluice_upstream_retries_total',
      'sluice_upstream_429_total',
      'sluice_lease_lost_total',
      'sluice_limit_changes_total',
    ]
    expect(dashboard.templating.list.map((v) => v.name)).toContain('upstream')
    for (const p of queries) {
      for (const t of p.targets ?? []) {
        for (const selector of t.expr.match(/\b[a-z_:][a-z0-9_:]*\{[^}]*\}/g) ?? []) {
          if (!keyed.includes(selector.slice(0, selector.indexOf('{')))) continue
          expect(selector, p.title).toContain('upstream=~"$upstream"')
          for (const by of t.expr.matchAll(/by \(([^)]*)\)/g))
            if (by[1]!.includes('endpoint')) expect(by[1], p.title).toMatch(/^upstream, /)
        }
      }
    }
  })

  it('never compares a limit with rows that sum several keys (endpoint "unknown", org "_other")', () => {
    for (const p of queries) {
      for (const t of p.targets ?? []) {
        if (!t.expr.includes('sluice_permit_limit')) continue
        for (const selector of t.expr.match(/sluice_(?:permit_limit|permits_in_flight)\{[^}]*\}/g) ?? []) {
          expect(selector, p.title).toContain('org!="_other"')
          expect(selector, p.title).toContain('endpoint!="unknown"')
        }
      }
    }
  })

  it('reads only metrics the code registers, and every panel reads at least one', async () => {
    const registered = new Set([...(await registeredNames()), ...KUBERNETES_METRICS])
    const used = new Set<string>()
    for (const p of queries) {
      const names = (p.targets ?? []).flatMap((t) => metricNamesIn(t.expr))
      expect(names.length, `${p.title} reads no metric`).toBeGreaterThan(0)
      for (const name of names) {
        expect(registered.has(name), `${p.title}: ${name} is not registered by the code`).toBe(true)
        used.add(name)
      }
    }
    for (const family of [
      'sluice_requests_total',
      'sluice_queue_wait_seconds_bucket',
      'sluice_queue_depth',
      'sluice_permits_in_flight',
      'sluice_permit_limit',
      'sluice_upstream_429_total',
      'sluice_limiter_mode',
      'sluice_version_requests_total',
      'sluice_version_retirement_timestamp_seconds',
      'sluice_app_requests_total',
      'sluice_app_queue_wait_seconds_bucket',
      'sluice_app_permits_held',
      'process_cpu_seconds_total',
      'process_resident_memory_bytes',
      'nodejs_eventloop_lag_p99_seconds',
      'process_start_time_seconds',
      ...KUBERNETES_METRICS,
    ]) {
      expect(used.has(family), family).toBe(true)
    }
  })
})

interface Rule {
  alert: string
  expr: string
  for?: string
  labels: { severity: string }
  annotations: { summary: string; description: string; runbook_url?: string }
}

describe('ops/prometheus/sluice-alerts.yaml', () => {
  const rules = (
    parseYaml(readFileSync(ALERTS, 'utf8')) as { groups: { name: string; rules: Rule[] }[] }
  ).groups.flatMap((g) => g.rules)

  it('has the alerts ops asked for, each with a severity and a summary', () => {
    expect(rules.map((r) => r.alert)).toEqual(
      expect.arrayContaining([
        'SluiceQueueWaitHigh',
        'SluiceRequestsShed',
        'SluiceUpstream429Rising',
        'SluiceLimiterNotShared',
        'SluiceVersionRetiringSoon',
        'SluiceReplicaDown',
        'SluiceDown',
        'SluiceRedisErrors',
        'SluiceLeasesLost',
        'SluiceRetiredVersionInUse',
        'SluiceAppRefusals',
        'SluiceClientErrors',
        'SluicePermitsOverLimit',
        'SluiceRequestsRefused',
        'SluiceRedisSlow',
        'SluiceLearnedLimitAtFloor',
        'SluiceEventLoopLag',
      ]),
    )
    for (const r of rules) {
      expect(['warning', 'critical'], r.alert).toContain(r.labels.severity)
      // an alert that reads a state (not a counted event held by its window) waits before it fires
      if (!/increase\(|absent\(/.test(r.expr) || r.alert === 'SluiceRedisErrors') expect(r.for, r.alert).toBeDefined()
      expect(r.annotations.summary.length, r.alert).toBeGreaterThan(10)
    }
  })

  it('links every alert to its runbook in docs/observability.md', () => {
    const doc = readFileSync(file('docs/observability.md'), 'utf8')
    const anchors = new Set(
      [...doc.matchAll(/^#{2,4} (.+)$/gm)].map((m) =>
        m[1]!
          .trim()
          .toLowerCase()
          .replace(/[^a-z0-9 -]/g, '')
          .replaceAll(' ', '-'),
      ),
    )
    for (const r of rules) {
      expect(r.annotations.runbook_url, r.alert).toBe(`docs/observability.md#${r.alert.toLowerCase()}`)
      expect(anchors.has(r.alert.toLowerCase()), `${r.alert}: no runbook heading`).toBe(true)
    }
  })

  // The chart scopes each release's rules by replacing job="sluice" (helm/sluice/templates/prometheusrule.yaml).
  it('selects every series with job="sluice" and keeps namespace and job in every aggregation', () => {
    for (const r of rules) {
      const selectors =
        r.expr.replace(/"(?:[^"\\]|\\.)*"/g, (q) => q.replace(/[{}]/g, '')).match(/\b[a-z_:][a-z0-9_:]*\{[^}]*\}/g) ??
        []
      expect(selectors.length, r.alert).toBeGreaterThan(0)
      for (const selector of selectors) expect(selector, r.alert).toContain('job="sluice"')
      expect(r.expr.replace(/\b[a-z_:][a-z0-9_:]*\{[^}]*\}/g, ''), `${r.alert}: a bare metric name`).not.toMatch(
        /\b(sluice_[a-z0-9_]+|up)\b(?!\{)/,
      )
      for (const by of r.expr.matchAll(/\b(?:by|on) \(([^)]*)\)/g)) {
        const labels = by[1]!.split(',').map((l) => l.trim())
        expect(labels, `${r.alert}: ${by[0]}`).toEqual(expect.arrayContaining(['namespace', 'job']))
      }
    }
  })

  it('reads only metrics the code registers', async () => {
    const registered = await registeredNames()
    for (const r of rules) {
      const names = metricNamesIn(r.expr)
      expect(names.length, r.alert).toBeGreaterThan(0)
      for (const name of names) expect(registered.has(name), `${r.alert}: ${name}`).toBe(true)
    }
  })

  it('has expressions whose brackets, braces and parentheses balance', () => {
    for (const r of rules) {
      const stack: string[] = []
      const pairs: Record<string, string> = { ')': '(', ']': '[', '}': '{' }
      for (const c of r.expr.replace(/"(?:[^"\\]|\\.)*"/g, '""')) {
        if ('([{'.includes(c)) stack.push(c)
        else if (c in pairs) expect(stack.pop(), `${r.alert}: unbalanced ${c}`).toBe(pairs[c])
      }
      expect(stack, r.alert).toEqual([])
    }
  })

  const promtool = has('promtool')
  // CI machines without Debian's `prometheus` package skip this one; the checks above still run.
  it.skipIf(!promtool)(
    `passes \`promtool check rules\` and its unit tests (\`promtool test rules\`) ${needs('promtool')}`,
    () => {
      expect(execFileSync('promtool', ['check', 'rules', ALERTS], { encoding: 'utf8' })).toContain(
        `SUCCESS: ${rules.length} rules found`,
      )
      expect(execFileSync('promtool', ['test', 'rules', ALERT_TESTS], { encoding: 'utf8' })).toContain('SUCCESS')
    },
  )
})

describe('metricNamesIn', () => {
  it('finds the metrics and nothing else', () => {
    expect(
      metricNamesIn(
        'histogram_quantile(0.99, sum by (le, endpoint) (rate(sluice_queue_wait_seconds_bucket{org=~"$org", endpoint="GET /x"}[$__rate_interval]))) > 2 * sum without (org) (sluice_permit_limit) and on (version) min by (version) (sluice_version_days_until_retirement offset 1h) < bool 30',
      ),
    ).toEqual(['sluice_queue_wait_seconds_bucket', 'sluice_permit_limit', 'sluice_version_days_until_retirement'])
  })
})

import { execFileSync, spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { parse as parseYaml, stringify } from 'yaml'
import { chartValues, readText, REPO, type Tree } from './chart.js'
import { canRender, only, render, renderOk, type Manifest } from './render.js'

/**
 * The chart's PrometheusRule: ops/prometheus/sluice-alerts.yaml scoped to the release (its namespace
 * and job instead of job="sluice"), with thresholds, `for`, severity and enablement from
 * prometheusRule.alerts, and runbook_url under prometheusRule.runbookBaseUrl
 * (docs/observability.md, "Alerts").
 */

interface Rule {
  alert: string
  expr: string
  for?: string
  labels: Record<string, string>
  annotations: Record<string, string>
}
interface Groups {
  groups: { name: string; rules: Rule[] }[]
}

const OPS = parseYaml(readText(join(REPO, 'ops/prometheus/sluice-alerts.yaml'))) as Groups
const opsRules = OPS.groups.flatMap((g) => g.rules)
const ruleOf = (manifests: Manifest[]): Groups =>
  (only(manifests, 'PrometheusRule') as unknown as { spec: Groups }).spec
const rulesOf = (manifests: Manifest[]): Rule[] => ruleOf(manifests).groups.flatMap((g) => g.rules)

/** `<number> # <name>` at a line's end: the thresholds the chart sets. */
const thresholds = (expr: string): Record<string, number> =>
  Object.fromEntries([...expr.matchAll(/([0-9.e+-]+) # (\w+)$/gm)].map((m) => [m[2]!, Number(m[1])]))

/** prometheusRule.runbookBaseUrl, required with enabled: runbook links must open from Alertmanager */
const DOCS = 'https://git.example.com/platform/sluice/-/blob/v0.2.0/docs'
const RULES = { enabled: true, runbookBaseUrl: DOCS }

const DOWN_ANNOTATIONS = {
  summary: 'No replica of egress-sluice is up',
  description:
    'No target of job egress-sluice has answered a scrape for a minute, or there is no target at all: apps cannot reach the API through it.',
  runbook_url: `${DOCS}/observability.md#sluicedown`,
}

const hasPromtool = spawnSync('promtool', ['--version']).status === 0
const dirs: string[] = []
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})

describe('prometheusRule.alerts in values.yaml', () => {
  it("names every alert of the rules file, with the file's thresholds as defaults", () => {
    const alerts = (chartValues().prometheusRule as { alerts: Record<string, Record<string, unknown>> }).alerts
    expect(Object.keys(alerts).sort()).toEqual(opsRules.map((r) => r.alert).sort())
    for (const rule of opsRules) {
      const { enabled, ...set } = alerts[rule.alert]!
      expect(enabled, rule.alert).toBe(true)
      expect(set, rule.alert).toEqual(thresholds(rule.expr))
    }
  })
})

describe.skipIf(!canRender)('the PrometheusRule rendered', () => {
  it("holds every rule, selecting only the release's namespace and job (the Service's name), each with its runbook", () => {
    const rules = rulesOf(renderOk({ prometheusRule: RULES }).manifests)
    expect(rules.map((r) => r.alert)).toEqual(opsRules.map((r) => r.alert))
    for (const [i, rule] of rules.entries()) {
      const source = opsRules[i]!
      expect(rule.expr, rule.alert).not.toContain('job="sluice"')
      expect(rule.expr, rule.alert).toBe(source.expr.replaceAll('job="sluice"', 'namespace="crm", job="egress-sluice"'))
      const runbook = `${DOCS}/observability.md#${rule.alert.toLowerCase()}`
      expect(rule.annotations, rule.alert).toEqual({ ...source.annotations, runbook_url: runbook })
      expect([rule.for, rule.labels], rule.alert).toEqual([source.for, source.labels])
    }
  })

  it('refuses to render without runbookBaseUrl, or with one that is not an absolute http(s) URL', () => {
    const none = render({ prometheusRule: { enabled: true } })
    expect(!none.ok && none.error).toContain('prometheusRule.enabled needs prometheusRule.runbookBaseUrl')
    const relative = render({ prometheusRule: { enabled: true, runbookBaseUrl: 'docs/' } })
    expect(!relative.ok && relative.error).toContain('prometheusRule.runbookBaseUrl')
  })

  it("in sidecar mode selects the PodMonitor's job, <namespace>/<name>; prometheusRule.job overrides either", () => {
    const sidecar = rulesOf(renderOk({ mode: 'sidecar', prometheusRule: RULES }).manifests)
    expect(sidecar[0]!.expr).toContain('up{namespace="crm", job="crm/egress-sluice"}')
    const own = rulesOf(renderOk({ prometheusRule: { ...RULES, job: 'sluice-egress' } }).manifests)
    expect(own[0]!.expr).toContain('up{namespace="crm", job="sluice-egress"}')
  })

  it('takes thresholds, for, severity, enablement and the runbook base URL from values', () => {
    const rules = rulesOf(
      renderOk({
        prometheusRule: {
          enabled: true,
          runbookBaseUrl: 'https://git.example.com/platform/sluice/-/blob/v0.1.0/docs/',
          alerts: {
            SluiceQueueWaitHigh: { seconds: 20, for: '3m', severity: 'critical' },
            SluiceClientErrors: { ratio: 0.1, minRequests: 100 },
            SluiceUpstream429Rising: { count: 50, rise: 3 },
            SluiceLeasesLost: { enabled: false },
          },
        },
      }).manifests,
    )
    const byName = new Map(rules.map((r) => [r.alert, r]))
    expect(byName.has('SluiceLeasesLost')).toBe(false)
    expect(rules.length).toBe(opsRules.length - 1)
    const wait = byName.get('SluiceQueueWaitHigh')!
    expect(thresholds(wait.expr)).toEqual({ seconds: 20 })
    expect([wait.for, wait.labels.severity]).toEqual(['3m', 'critical'])
    expect(thresholds(byName.get('SluiceClientErrors')!.expr)).toEqual({ ratio: 0.1, minRequests: 100 })
    expect(thresholds(byName.get('SluiceUpstream429Rising')!.expr)).toEqual({ count: 50, rise: 3 })
    expect(byName.get('SluiceDown')!.annotations.runbook_url).toBe(
      'https://git.example.com/platform/sluice/-/blob/v0.1.0/docs/observability.md#sluicedown',
    )
  })

  // values.schema.json refuses them first (the template checks the same against the file itself)
  it('refuses an alert or a threshold the rules file does not have, naming it', () => {
    const alert = render({ prometheusRule: { enabled: true, alerts: { SluiceQueueWait: { seconds: 5 } } } })
    expect(!alert.ok && alert.error).toContain(
      'prometheusRule.alerts: Additional property SluiceQueueWait is not allowed',
    )
    const threshold = render({ prometheusRule: { enabled: true, alerts: { SluiceQueueWaitHigh: { secs: 5 } } } })
    expect(!threshold.ok && threshold.error).toContain(
      'prometheusRule.alerts.SluiceQueueWaitHigh: Additional property secs is not allowed',
    )
  })

  // The rendered rules themselves, through promtool: two releases' series side by side.
  it.skipIf(!hasPromtool)(
    'fires for its own release only, at the threshold set in values (promtool test rules)',
    () => {
      const rule = ruleOf(
        renderOk({ prometheusRule: { ...RULES, alerts: { SluiceQueueWaitHigh: { seconds: 20 } } } }).manifests,
      )
      const dir = mkdtempSync(join(tmpdir(), 'sluice-chart-alerts-'))
      dirs.push(dir)
      writeFileSync(join(dir, 'rules.yaml'), stringify(rule))
      expect(execFileSync('promtool', ['check', 'rules', join(dir, 'rules.yaml')], { encoding: 'utf8' })).toContain(
        'SUCCESS',
      )
      const wait = (job: string, le: string, values: string): Tree => ({
        series: `sluice_queue_wait_seconds_bucket{namespace="crm", job="${job}", endpoint="POST /accounts/search", le="${le}"}`,
        values,
      })
      const tests = {
        rule_files: ['rules.yaml'],
        evaluation_interval: '1m',
        tests: [
          {
            name: 'another release in the same namespace down, and waiting 15 s, fires nothing here; ours down does',
            interval: '1m',
            input_series: [
              { series: 'up{namespace="crm", job="other-sluice", instance="o:9090"}', values: '0x10' },
              { series: 'up{namespace="crm", job="egress-sluice", instance="e:9090"}', values: '1x4 0x6' },
              // both wait 15 s from the start: over the file's 10 s, under this release's 20 s
              wait('other-sluice', '10', '0x10'),
              wait('other-sluice', '+Inf', '0+10x10'),
              wait('egress-sluice', '10', '0x10'),
              wait('egress-sluice', '+Inf', '0+10x10'),
            ],
            alert_rule_test: [
              { eval_time: '3m', alertname: 'SluiceDown', exp_alerts: [] },
              { eval_time: '3m', alertname: 'SluiceReplicaDown', exp_alerts: [] },
              { eval_time: '8m', alertname: 'SluiceQueueWaitHigh', exp_alerts: [] },
              {
                eval_time: '8m',
                alertname: 'SluiceDown',
                exp_alerts: [
                  {
                    exp_labels: { severity: 'critical', namespace: 'crm', job: 'egress-sluice' },
                    exp_annotations: DOWN_ANNOTATIONS,
                  },
                ],
              },
            ],
          },
          {
            name: 'no target of the release left at all fires SluiceDown with its namespace and job',
            interval: '1m',
            input_series: [
              { series: 'up{namespace="crm", job="egress-sluice", instance="e:9090"}', values: '1x2 stale' },
              { series: 'up{namespace="crm", job="other-sluice", instance="o:9090"}', values: '1x10' },
            ],
            alert_rule_test: [
              {
                eval_time: '6m',
                alertname: 'SluiceDown',
                exp_alerts: [
                  {
                    exp_labels: { severity: 'critical', namespace: 'crm', job: 'egress-sluice' },
                    exp_annotations: DOWN_ANNOTATIONS,
                  },
                ],
              },
            ],
          },
        ],
      }
      writeFileSync(join(dir, 'tests.yaml'), stringify(tests))
      const run = spawnSync('promtool', ['test', 'rules', join(dir, 'tests.yaml')], { encoding: 'utf8' })
      expect(run.status, run.stdout + run.stderr).toBe(0)
    },
  )
})

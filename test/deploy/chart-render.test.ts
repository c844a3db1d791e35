import { spawnSync } from 'node:child_process'
import { cpSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { CHART_DIR, exampleValueFiles, readText, readYamlFile, type Tree } from './chart.js'
import { APP_DEPLOYMENT, podOf, settingsOf, sluiceIn } from './pod.js'
import { canRender, hasHelm, kinds, only, render, renderOk, type Manifest } from './render.js'
import { needs } from '../support/tools.js'

/**
 * The chart rendered (see render.ts) and the result checked as Kubernetes would use it: the
 * container's env and settings file are accepted by sluice's own loader, names line up, and the
 * chart refuses values that would deploy something broken.
 */

describe.skipIf(!canRender)(`helm/sluice rendered (Go text/template + sprig) ${needs('go + sprig')}`, () => {
  it('by default: one replica as shared egress (Recreate, no PDB), with its ServiceAccount, NetworkPolicy and helm test, wired to the admin port', () => {
    const { manifests, notes } = renderOk()
    expect(kinds(manifests)).toEqual(['Deployment', 'NetworkPolicy', 'Pod', 'Service', 'ServiceAccount'])
    const deployment = only(manifests, 'Deployment') as Manifest & { spec: { replicas: number; strategy: Tree } }
    const { labels, spec } = podOf(deployment)
    expect(deployment.spec.replicas).toBe(1)
    expect(deployment.spec.strategy).toEqual({ type: 'Recreate' }) // never two in-process limiters at once
    const sluice = sluiceIn(spec)
    expect(sluice.image).toBe('sluice:0.2.0')
    expect(sluice.command).toBeUndefined() // the image's CMD: node dist/main.js
    expect(sluice.args).toBeUndefined()

    const settings = settingsOf(sluice, manifests, spec)
    expect(settings.redis.url).toBeUndefined()
    expect(settings).toMatchObject({ host: '0.0.0.0', adminHost: '0.0.0.0' }) // the Service and the kubelet reach both
    const ports = Object.fromEntries(sluice.ports!.map((p) => [p.name, p.containerPort]))
    expect(ports).toEqual({ proxy: settings.port, admin: settings.adminPort })
    // sized in docs/deploy.md, "Memory: a budget": the request above the idle process, the limit for the budget full, the heap at half the limit
    expect(sluice.resources).toEqual({ requests: { cpu: '250m', memory: '192Mi' }, limits: { memory: '512Mi' } })
    expect(sluice.env.find((e) => e.name === 'NODE_OPTIONS')).toEqual({
      name: 'NODE_OPTIONS',
      value: '--max-old-space-size=256',
    })
    expect(sluice.startupProbe.httpGet).toEqual({ path: '/healthz', port: settings.adminPort })
    expect(sluice.livenessProbe.httpGet).toEqual({ path: '/healthz', port: settings.adminPort })
    expect(sluice.readinessProbe.httpGet).toEqual({ path: '/readyz', port: settings.adminPort })
    expect(sluice.securityContext).toMatchObject({
      readOnlyRootFilesystem: true,
      runAsNonRoot: true,
      allowPrivilegeEscalation: false,
    })
    expect(spec.enableServiceLinks).toBe(false) // else a Service named sluice injects SLUICE_PORT=tcp://…
    expect(sluice.volumeMounts.map((m) => m.mountPath)).toEqual(['/tmp'])
    for (const m of sluice.volumeMounts) expect(spec.volumes.map((v) => v.name)).toContain(m.name)

    // SIGTERM comes after the preStop sleep; the queue is served for drainMs, then in-flight requests get graceMs before the kill.
    const preStop = Number(sluice.lifecycle!.preStop.exec.command[1])
    expect(sluice.lifecycle!.preStop.exec.command[0]).toBe('sleep')
    expect(preStop).toBeGreaterThan(0)
    expect(spec.terminationGracePeriodSeconds).toBeGreaterThan(
      preStop + (settings.shutdown.drainMs + settings.shutdown.graceMs) / 1000,
    )

    const service = only(manifests, 'Service') as unknown as Manifest & {
      spec: { selector: Record<string, string>; ports: { name: string; port: number; targetPort: string }[] }
    }
    expect(service.spec.ports.map((p) => [p.name, p.port, p.targetPort])).toEqual([
      ['proxy', 8080, 'proxy'],
      ['admin', 9090, 'admin'],
    ])
    expect(labels).toMatchObject(service.spec.selector)
    expect(notes).toContain(`http://${service.metadata.name}.crm.svc:8080/v2`)
    expect(notes).toContain('helm test egress -n crm')
    expect(notes).toContain('WARNING: adminToken.open')
    expect(renderOk({ adminToken: { existingSecret: 'sluice-admin' } }).notes).not.toContain('adminToken.open')
  })

  it('refuses more than one replica without Redis, saying why and what to set', () => {
    const r = render({ replicaCount: 3 })
    expect(r.ok).toBe(false)
    expect(!r.ok && r.error).toContain('sluice: replicaCount is 3 but no Redis is configured')
    expect(!r.ok && r.error).toContain('Set redis.url or redis.existingSecret')
  })

  it('with redis.url and settings: the URL goes through a Secret, the settings through the mounted file', () => {
    const values = {
      replicaCount: 3,
      redis: { url: 'redis://:pw@redis.crm.svc:6379/2' },
      settings: { logLevel: 'warn', queue: { maxWaitMs: 20_000 }, limits: { overrides: { 'GET /accounts/{id}': 2 } } },
    }
    const { manifests, notes } = renderOk(values)
    expect(kinds(manifests)).toEqual([
      'ConfigMap',
      'Deployment',
      'NetworkPolicy',
      'Pod',
      'PodDisruptionBudget',
      'Secret',
      'Service',
      'ServiceAccount',
    ])
    const deployment = only(manifests, 'Deployment')
    const { spec, annotations } = podOf(deployment)
    expect((deployment as unknown as { spec: { replicas: number } }).spec.replicas).toBe(3)
    const sluice = sluiceIn(spec)
    expect(sluice.env.find((e) => e.name === 'SLUICE_REDIS_URL')).toEqual({
      name: 'SLUICE_REDIS_URL',
      valueFrom: { secretKeyRef: { name: only(manifests, 'Secret').metadata.name, key: 'url' } },
    })
    expect(JSON.stringify(only(manifests, 'ConfigMap'))).not.toContain('redis://')
    const settings = settingsOf(sluice, manifests, spec)
    expect(settings.redis.url).toBe('redis://:pw@redis.crm.svc:6379/2')
    expect(settings.logLevel).toBe('warn')
    expect(settings.queue.maxWaitMs).toBe(20_000)
    expect(settings.limits.overrides).toEqual({ 'GET /accounts/{id}': 2 })
    expect(notes).toContain('limiter: Redis')

    // A settings change, or a new Redis URL, changes the pod template, so the pods restart and read it.
    const other = podOf(
      only(renderOk({ ...values, settings: { logLevel: 'info' } }).manifests, 'Deployment'),
    ).annotations
    expect(annotations['checksum/sluice-settings']).toMatch(/^[0-9a-f]{64}$/)
    expect(other['checksum/sluice-settings']).not.toBe(annotations['checksum/sluice-settings'])
    expect(other['checksum/sluice-secret']).toBe(annotations['checksum/sluice-secret'])
    const newUrl = podOf(
      only(renderOk({ ...values, redis: { url: 'redis://:other@redis.crm.svc:6379/2' } }).manifests, 'Deployment'),
    ).annotations
    expect(annotations['checksum/sluice-secret']).toMatch(/^[0-9a-f]{64}$/)
    expect(newUrl['checksum/sluice-secret']).not.toBe(annotations['checksum/sluice-secret'])
    expect(newUrl['checksum/sluice-settings']).toBe(annotations['checksum/sluice-settings'])
  })

  it('an existing Secret, or SLUICE_REDIS_URL in extraEnv, also counts as Redis', () => {
    const existing = renderOk({ replicaCount: 2, redis: { existingSecret: 'crm-redis', existingSecretKey: 'uri' } })
    expect(kinds(existing.manifests)).not.toContain('Secret')
    const env = sluiceIn(podOf(only(existing.manifests, 'Deployment')).spec).env
    expect(env.find((e) => e.name === 'SLUICE_REDIS_URL')?.valueFrom).toEqual({
      secretKeyRef: { name: 'crm-redis', key: 'uri' },
    })
    expect(render({ replicaCount: 2, extraEnv: [{ name: 'SLUICE_REDIS_URL', value: 'redis://r:6379' }] }).ok).toBe(true)
  })

  it('refuses a grace period that Kubernetes would cut short, and settings the chart owns', () => {
    const tooLong = render({ settings: { shutdown: { graceMs: 65_000 } } })
    expect(!tooLong.ok && tooLong.error).toContain(
      'terminationGracePeriodSeconds (105) must exceed shutdown.preStopSleepSeconds (10) + settings.shutdown.drainMs (30s) + settings.shutdown.graceMs (65s)',
    )
    expect(render({ settings: { shutdown: { graceMs: 65_000 } }, terminationGracePeriodSeconds: 110 }).ok).toBe(true)
    const drainTooLong = render({ settings: { shutdown: { drainMs: 40_000 } } })
    expect(!drainTooLong.ok && drainTooLong.error).toContain(
      'settings.shutdown.drainMs (40s) + settings.shutdown.graceMs (60s)',
    )

    const port = render({ settings: { port: 8081 } })
    expect(!port.ok && port.error).toContain('settings.port is set by the chart: use the chart value ports.proxy')
    const redisUrl = render({ settings: { redis: { url: 'redis://r:6379' } } })
    expect(!redisUrl.ok && redisUrl.error).toContain(
      'settings.redis.url would put the Redis URL (and its password) in a ConfigMap',
    )
    const host = render({ settings: { adminHost: '0.0.0.0' } })
    expect(!host.ok && host.error).toContain('settings.adminHost is set by the chart')
  })

  it('mode: sidecar renders no Deployment or Service, and warns without Redis', () => {
    const bare = renderOk({ mode: 'sidecar' })
    expect(kinds(bare.manifests)).toEqual([])
    expect(bare.notes).toContain('WARNING: no Redis is configured')
    expect(bare.notes).toContain('http://127.0.0.1:18080/v2')
    expect(bare.notes).toContain('initContainers:')
    const withRedis = renderOk({
      mode: 'sidecar',
      replicaCount: 5,
      redis: { url: 'redis://r:6379' },
      settings: { logLevel: 'debug' },
    })
    expect(kinds(withRedis.manifests)).toEqual(['ConfigMap', 'Secret'])
    expect(withRedis.notes).not.toContain('WARNING')
  })

  it("ServiceMonitor scrapes /metrics on the Service's admin port", () => {
    const { manifests } = renderOk({ serviceMonitor: { enabled: true, labels: { release: 'prometheus' } } })
    const monitor = only(manifests, 'ServiceMonitor') as unknown as Manifest & {
      apiVersion: string
      spec: { selector: { matchLabels: Record<string, string> }; endpoints: { port: string; path: string }[] }
    }
    const service = only(manifests, 'Service') as unknown as Manifest & { spec: { ports: { name: string }[] } }
    expect(monitor.apiVersion).toBe('monitoring.coreos.com/v1')
    expect(monitor.metadata.labels).toMatchObject({ release: 'prometheus' })
    expect(service.metadata.labels).toMatchObject(monitor.spec.selector.matchLabels)
    expect(monitor.spec.endpoints).toMatchObject([{ port: 'admin', path: '/metrics' }])
    // The job stays the Operator's (the Service's name), which the release's own alerting rules select.
    expect(JSON.stringify(monitor.spec.endpoints)).not.toContain('relabelings')
    expect(service.spec.ports.map((p) => p.name)).toContain('admin')
  })

  it('PrometheusRule and the Grafana dashboard embed the files in the chart, and fail clearly without them', () => {
    const copy = mkdtempSync(join(tmpdir(), 'sluice-chart-'))
    try {
      cpSync(CHART_DIR, copy, { recursive: true })
      rmSync(join(copy, 'files'), { recursive: true, force: true })
      const values = {
        prometheusRule: { enabled: true, runbookBaseUrl: 'https://git.example.com/sluice/docs' },
        grafanaDashboard: { enabled: true, namespace: 'monitoring' },
      }
      const missing = render(values, { chartDir: copy })
      expect(!missing.ok && missing.error).toMatch(
        /needs files\/sluice-(alerts\.yaml|dashboard\.json) in the chart: run helm\/sync-ops\.sh/,
      )

      // (test/deploy/chart-alerts.test.ts checks what the PrometheusRule makes of the rules file)
      const dashboard = {
        title: 'sluice',
        templating: { list: [{ name: 'datasource', type: 'datasource', query: 'prometheus' }] },
        panels: [],
      }
      cpSync(CHART_DIR, copy, { recursive: true })
      writeFileSync(join(copy, 'files/sluice-dashboard.json'), JSON.stringify(dashboard, null, 2))
      const { manifests } = renderOk({ grafanaDashboard: values.grafanaDashboard }, { chartDir: copy })
      const board = only(manifests, 'ConfigMap') as unknown as Manifest & { data: Record<string, string> }
      expect(board.metadata).toMatchObject({ namespace: 'monitoring', labels: { grafana_dashboard: '1' } })
      expect(JSON.parse(board.data['sluice-dashboard.json']!)).toEqual(dashboard)
    } finally {
      rmSync(copy, { recursive: true, force: true })
    }
  })

  it.skipIf(
    !existsSync(join(CHART_DIR, 'files/sluice-alerts.yaml')) ||
      !existsSync(join(CHART_DIR, 'files/sluice-dashboard.json')),
  )("with the chart's own copy of the ops/ dashboard: the ConfigMap holds its JSON", () => {
    const { manifests } = renderOk({ grafanaDashboard: { enabled: true } })
    const board = manifests.find(
      (m) => m.kind === 'ConfigMap' && m.metadata.name.endsWith('-dashboard'),
    ) as unknown as { data: Record<string, string> }
    expect(JSON.parse(board.data['sluice-dashboard.json']!)).toEqual(
      JSON.parse(readText(join(CHART_DIR, 'files/sluice-dashboard.json'))),
    )
  })

  it('the example values files render, and sluice accepts what they configure', () => {
    for (const file of exampleValueFiles()) {
      const values = readYamlFile(file) as Tree
      const { manifests } = renderOk(values, values.mode === 'sidecar' ? { parent: APP_DEPLOYMENT } : {})
      const pod = manifests.filter((m) => m.kind === 'Deployment').map(podOf)[0]!
      const settings = settingsOf(sluiceIn(pod.spec), manifests, pod.spec)
      expect(settings.logLevel, file).toBe((values.settings as Tree).logLevel)
      expect(settings.redis.url, `${file} configures Redis`).toBeDefined()
    }
  })
})

describe.skipIf(!hasHelm)(`helm/sluice with the helm binary ${needs('helm')}`, () => {
  it('helm lint and helm template pass for the defaults and every example', () => {
    const lint = spawnSync('helm', ['lint', CHART_DIR], { encoding: 'utf8' })
    expect(lint.status, lint.stdout + lint.stderr).toBe(0)
    for (const file of exampleValueFiles()) {
      const template = spawnSync('helm', ['template', 'egress', CHART_DIR, '-f', file], { encoding: 'utf8' })
      expect(template.status, template.stderr).toBe(0)
    }
    const refused = spawnSync('helm', ['template', 'egress', CHART_DIR, '--set', 'replicaCount=3'], {
      encoding: 'utf8',
    })
    expect(refused.status).not.toBe(0)
    expect(refused.stderr).toContain('no Redis is configured')
  })
})

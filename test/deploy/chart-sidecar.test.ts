import { spawnSync } from 'node:child_process'
import { afterAll, describe, expect, it } from 'vitest'
import { spawnProxy, type ProxyProcess } from '../support/process.js'
import type { Tree } from './chart.js'
import { APP_DEPLOYMENT, envOf, podOf, settingsOf, sluiceIn, type Container, type Probe } from './pod.js'
import { canRender, only, render, renderOk, type Manifest } from './render.js'
import { freePort } from '../support/process.js'
import { needs } from '../support/tools.js'

/**
 * "sluice.sidecar" in an app's pod: the native sidecar by default, ports that do not collide with
 * the app's, the proxy on loopback only, the admin port on loopback unless scraped. The kubelet
 * cannot reach loopback, so the probes are httpGet on the health port (healthPort: /healthz and
 * /readyz alone, on the pod's IP), never a process started per probe: sluice is started here with
 * the rendered container's env and probed there, for real.
 */

const appPod = (values: Tree) => {
  const { manifests } = renderOk(values, { parent: APP_DEPLOYMENT })
  const app = manifests.find((m) => m.kind === 'Deployment' && m.metadata.name === 'app')!
  return { manifests, ...podOf(app) }
}

/** An httpGet probe as the kubelet runs it (to the pod's IP; here the pod is this machine): 0 on 2xx/3xx. */
async function runProbe(probe: Probe): Promise<number> {
  expect(probe.exec).toBeUndefined()
  const { path, port } = probe.httpGet!
  const res = await fetch(`http://127.0.0.1:${port}${path}`).catch(() => undefined)
  return res !== undefined && res.status >= 200 && res.status < 400 ? 0 : 1
}

describe.skipIf(!canRender)(`"sluice.sidecar" in an app's pod ${needs('go + sprig')}`, () => {
  it('by default: a native sidecar (an init container that keeps running), on 18080/19090, beside an app on 8080', () => {
    const { manifests, spec } = appPod({
      mode: 'sidecar',
      redis: { url: 'redis://r:6379' },
      settings: { requestLog: false },
    })
    expect(spec.initContainers!.map((c) => c.name)).toEqual(['sluice'])
    expect(spec.containers.map((c) => c.name)).toEqual(['app'])
    const sluice = sluiceIn(spec)
    expect(sluice.restartPolicy).toBe('Always')
    expect(sluice.lifecycle).toBeUndefined() // stopped after the app: nothing to wait for
    const settings = settingsOf(sluice, manifests, spec)
    expect(settings).toMatchObject({
      host: '127.0.0.1',
      adminHost: '127.0.0.1',
      port: 18080,
      adminPort: 19090,
      requestLog: false,
      redis: { url: 'redis://r:6379' },
    })
    const appPorts = spec.containers.flatMap((c) => (c.ports ?? []).map((p) => p.containerPort))
    expect(appPorts).toEqual([8080])
    expect(appPorts).not.toContain(settings.port)
    expect(appPorts).not.toContain(settings.adminPort)
    expect(sluice.ports).toEqual([{ name: 'sluice-health', containerPort: 19091, protocol: 'TCP' }]) // the probes' port only
    expect(spec.containers[0]!.env).toEqual([{ name: 'CRM_API_BASE_URL', value: 'http://127.0.0.1:18080/v2' }])
    for (const m of sluice.volumeMounts) expect(spec.volumes.map((v) => v.name)).toContain(m.name)
  })

  it('admin on loopback, probes on the health port; scraped (PodMonitor, with the admin token): admin on 0.0.0.0, and the PodMonitor names its port', () => {
    const loopback = appPod({ mode: 'sidecar' })
    const sluice0 = sluiceIn(loopback.spec)
    expect(settingsOf(sluice0, loopback.manifests, loopback.spec)).toMatchObject({
      adminHost: '127.0.0.1',
      adminPort: 19090,
      healthHost: '0.0.0.0',
      healthPort: 19091,
    })
    for (const [probe, path] of [
      [sluice0.startupProbe, '/healthz'],
      [sluice0.livenessProbe, '/healthz'],
      [sluice0.readinessProbe, '/readyz'],
    ] as const) {
      expect(probe.exec).toBeUndefined()
      expect(probe.httpGet).toEqual({ path, port: 19091 })
    }

    const scraped = appPod({
      mode: 'sidecar',
      adminToken: { existingSecret: 'sluice-admin' },
      podMonitor: {
        enabled: true,
        selector: { 'app.kubernetes.io/name': 'my-app' },
        labels: { release: 'prometheus' },
      },
    })
    const sluice = sluiceIn(scraped.spec)
    expect(settingsOf(sluice, scraped.manifests, scraped.spec)).toMatchObject({
      host: '127.0.0.1',
      adminHost: '0.0.0.0',
    })
    expect(sluice.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 19091 })
    expect(sluice.ports).toEqual([
      { name: 'sluice-health', containerPort: 19091, protocol: 'TCP' },
      { name: 'sluice-admin', containerPort: 19090, protocol: 'TCP' },
    ])
    const monitor = only(scraped.manifests, 'PodMonitor') as Manifest & {
      spec: { selector: { matchLabels: Record<string, string> }; podMetricsEndpoints: { port: string; path: string }[] }
    }
    expect(monitor.metadata.labels).toMatchObject({ release: 'prometheus' })
    expect(monitor.spec.podMetricsEndpoints).toMatchObject([{ port: 'sluice-admin', path: '/metrics' }])
    expect(JSON.stringify(monitor.spec.podMetricsEndpoints)).not.toContain('relabelings') // job: the Operator's <namespace>/<name>
    const appLabels = (
      scraped.manifests.find((m) => m.metadata.name === 'app') as unknown as {
        spec: { template: { metadata: { labels: Record<string, string> } } }
      }
    ).spec.template.metadata.labels
    expect(appLabels).toMatchObject(monitor.spec.selector.matchLabels)

    const noSelector = render({
      mode: 'sidecar',
      adminToken: { existingSecret: 'sluice-admin' },
      podMonitor: { enabled: true },
    })
    expect(!noSelector.ok && noSelector.error).toContain('podMonitor.enabled needs podMonitor.selector')
  })

  it('sidecar.native: false puts it among the containers with a preStop sleep', () => {
    const { spec } = appPod({ mode: 'sidecar', sidecar: { native: false } })
    expect(spec.containers.map((c) => c.name)).toEqual(['app', 'sluice'])
    const sluice = sluiceIn(spec)
    expect(sluice.restartPolicy).toBeUndefined()
    expect(sluice.lifecycle?.preStop.exec.command).toEqual(['sleep', '10'])
  })
})

describe.skipIf(!canRender)(
  `the rendered probe commands and the helm test, run against a real sluice ${needs('go + sprig')}`,
  () => {
    let proxy: ProxyProcess | undefined
    afterAll(async () => {
      await proxy?.stop('SIGKILL')
    })

    it('pass while sluice serves, fail once it has stopped', async () => {
      const ports = { proxy: await freePort(), admin: await freePort(), health: await freePort() }
      const { manifests, spec } = appPod({ mode: 'sidecar', sidecar: { ports }, settings: { requestLog: false } })
      const sluice: Container = sluiceIn(spec)
      const env = envOf(sluice, manifests, spec) as Record<string, string>
      expect(env.SLUICE_HEALTH_HOST).toBe('0.0.0.0')
      // the pod's IP is 0.0.0.0 in a pod; on this machine the test binds loopback only
      proxy = await spawnProxy({ ...env, SLUICE_HEALTH_HOST: '127.0.0.1' })
      expect(proxy.adminUrl).toBe(`http://127.0.0.1:${ports.admin}`)

      const probes = [sluice.startupProbe, sluice.livenessProbe, sluice.readinessProbe]
      expect(await Promise.all(probes.map(runProbe))).toEqual([0, 0, 0])

      // The helm test pod's command, pointed at this sluice instead of the Service's DNS name.
      const testPod = only(renderOk({}).manifests, 'Pod') as unknown as {
        spec: { containers: { command: string[] }[] }
      }
      const [node, flag, script] = testPod.spec.containers[0]!.command
      expect([node, flag]).toEqual(['node', '-e'])
      const local = script!.replace(/http:\/\/[^/']+\/readyz/, `${proxy.adminUrl}/readyz`)
      expect(local).not.toBe(script)
      const helmTest = (): number | null => spawnSync(process.execPath, ['-e', local], { timeout: 15_000 }).status
      expect(helmTest()).toBe(0)

      expect(await proxy.stop()).toBe(0)
      expect(await Promise.all(probes.map(runProbe))).toEqual([1, 1, 1])
      expect(helmTest()).toBe(1)
    })
  },
)

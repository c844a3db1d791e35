import { spawnSync } from 'node:child_process'
import { afterAll, describe, expect, it } from 'vitest'
import { spawnProxy, type ProxyProcess } from '../support/process.js'
import type { Tree } from './chart.js'
import { APP_DEPLOYMENT, envOf, podOf, settingsOf, sluiceIn, type Container, type Probe } from './pod.js'
import { canRender, only, render, renderOk, type Manifest } from './render.js'
import { freePort } from '../support/process.js'

/**
 * "sluice.sidecar" in an app's pod: the native sidecar by default, ports that do not collide with
 * the app's, the proxy on loopback only, the admin port on loopback unless scraped. On loopback the
 * kubelet cannot reach the admin port, so the probes are commands run inside the container: those
 * commands are run here, for real, against sluice started with the rendered container's env.
 */

const appPod = (values: Tree) => {
  const { manifests } = renderOk(values, { parent: APP_DEPLOYMENT })
  const app = manifests.find((m) => m.kind === 'Deployment' && m.metadata.name === 'app')!
  return { manifests, ...podOf(app) }
}


/** Runs an exec probe's command as the kubelet would inside the container (node is on PATH there, here it is this node). */
function runProbe(probe: Probe): number | null {
  const [command, ...args] = probe.exec!.command
  expect(command).toBe('node')
  return spawnSync(process.execPath, args, { timeout: 15_000 }).status
}

describe.skipIf(!canRender)('"sluice.sidecar" in an app\'s pod', () => {
  it('by default: a native sidecar (an init container that keeps running), on 18080/19090, beside an app on 8080', () => {
    const { manifests, spec } = appPod({ mode: 'sidecar', redis: { url: 'redis://r:6379' }, settings: { requestLog: false } })
    expect(spec.initContainers!.map((c) => c.name)).toEqual(['sluice'])
    expect(spec.containers.map((c) => c.name)).toEqual(['app'])
    const sluice = sluiceIn(spec)
    expect(sluice.restartPolicy).toBe('Always')
    expect(sluice.lifecycle).toBeUndefined() // stopped after the app: nothing to wait for
    const settings = settingsOf(sluice, manifests, spec)
    expect(settings).toMatchObject({ host: '127.0.0.1', adminHost: '127.0.0.1', port: 18080, adminPort: 19090, requestLog: false, redis: { url: 'redis://r:6379' } })
    const appPorts = spec.containers.flatMap((c) => (c.ports ?? []).map((p) => p.containerPort))
    expect(appPorts).toEqual([8080])
    expect(appPorts).not.toContain(settings.port)
    expect(appPorts).not.toContain(settings.adminPort)
    expect(sluice.ports).toBeUndefined() // nothing listens beyond loopback
    expect(spec.containers[0]!.env).toEqual([{ name: 'CRM_API_BASE_URL', value: 'http://127.0.0.1:18080/v2' }])
    for (const m of sluice.volumeMounts) expect(spec.volumes.map((v) => v.name)).toContain(m.name)
  })

  it('admin on loopback: exec probes on /healthz and /readyz; scraped (PodMonitor): admin on 0.0.0.0, httpGet probes, and the PodMonitor names its port', () => {
    const loopback = sluiceIn(appPod({ mode: 'sidecar' }).spec)
    for (const [probe, path] of [[loopback.startupProbe, '/healthz'], [loopback.livenessProbe, '/healthz'], [loopback.readinessProbe, '/readyz']] as const) {
      expect(probe.httpGet).toBeUndefined()
      expect(probe.exec!.command.join(' ')).toContain(`http://127.0.0.1:19090${path}`)
    }

    const scraped = appPod({ mode: 'sidecar', podMonitor: { enabled: true, selector: { 'app.kubernetes.io/name': 'my-app' }, labels: { release: 'prometheus' } } })
    const sluice = sluiceIn(scraped.spec)
    expect(settingsOf(sluice, scraped.manifests, scraped.spec)).toMatchObject({ host: '127.0.0.1', adminHost: '0.0.0.0' })
    expect(sluice.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 19090 })
    expect(sluice.ports).toEqual([{ name: 'sluice-admin', containerPort: 19090, protocol: 'TCP' }])
    const monitor = only(scraped.manifests, 'PodMonitor') as Manifest & { spec: { selector: { matchLabels: Record<string, string> }; podMetricsEndpoints: { port: string; path: string }[] } }
    expect(monitor.metadata.labels).toMatchObject({ release: 'prometheus' })
    expect(monitor.spec.podMetricsEndpoints).toMatchObject([{ port: 'sluice-admin', path: '/metrics' }])
    expect(JSON.stringify(monitor.spec.podMetricsEndpoints)).not.toContain('relabelings') // job: the Operator's <namespace>/<name>
    const appLabels = (scraped.manifests.find((m) => m.metadata.name === 'app') as unknown as { spec: { template: { metadata: { labels: Record<string, string> } } } }).spec.template.metadata.labels
    expect(appLabels).toMatchObject(monitor.spec.selector.matchLabels)

    expect(sluiceIn(appPod({ mode: 'sidecar', sidecar: { exposeAdmin: true } }).spec).readinessProbe.httpGet).toBeDefined()
    const noSelector = render({ mode: 'sidecar', podMonitor: { enabled: true } })
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

describe.skipIf(!canRender)('the rendered probe commands and the helm test, run against a real sluice', () => {
  let proxy: ProxyProcess | undefined
  afterAll(async () => {
    await proxy?.stop('SIGKILL')
  })

  it('pass while sluice serves, fail once it has stopped', async () => {
    const ports = { proxy: await freePort(), admin: await freePort() }
    const { manifests, spec } = appPod({ mode: 'sidecar', sidecar: { ports }, settings: { requestLog: false } })
    const sluice: Container = sluiceIn(spec)
    const env = envOf(sluice, manifests, spec) as Record<string, string>
    proxy = await spawnProxy(env)
    expect(proxy.adminUrl).toBe(`http://127.0.0.1:${ports.admin}`)

    const probes = [sluice.startupProbe, sluice.livenessProbe, sluice.readinessProbe]
    expect(probes.map(runProbe)).toEqual([0, 0, 0])

    // The helm test pod's command, pointed at this sluice instead of the Service's DNS name.
    const testPod = only(renderOk({}).manifests, 'Pod') as unknown as { spec: { containers: { command: string[] }[] } }
    const [node, flag, script] = testPod.spec.containers[0]!.command
    expect([node, flag]).toEqual(['node', '-e'])
    const local = script!.replace(/http:\/\/[^/']+\/readyz/, `${proxy.adminUrl}/readyz`)
    expect(local).not.toBe(script)
    const helmTest = (): number | null => spawnSync(process.execPath, ['-e', local], { timeout: 15_000 }).status
    expect(helmTest()).toBe(0)

    expect(await proxy.stop()).toBe(0)
    expect(probes.map(runProbe)).toEqual([1, 1, 1])
    expect(helmTest()).toBe(1)
  })
})

import { describe, expect, it } from 'vitest'
import type { Tree } from './chart.js'
import { podOf, sluiceIn } from './pod.js'
import { canRender, kinds, only, render, renderOk, type Manifest } from './render.js'
import { needs } from '../support/tools.js'

/**
 * The production defaults of shared egress, rendered: replicas and rollout by whether Redis is
 * there, the PodDisruptionBudget, the optional HPA, topology spread, the ServiceAccount, the
 * NetworkPolicy and the `helm test` pod.
 */

const REDIS = { redis: { existingSecret: 'crm-redis' } }
type Spec<T> = Manifest & { spec: T }
const deploymentOf = (manifests: readonly Manifest[]) =>
  only(manifests, 'Deployment') as Spec<{ replicas?: number; strategy: Tree }>

interface PolicyPort {
  port: string | number
  protocol: string
}
interface Peer {
  podSelector?: { matchLabels?: Record<string, string> }
  namespaceSelector?: { matchLabels?: Record<string, string> }
  ipBlock?: { cidr: string }
}
interface NetworkPolicySpec {
  podSelector: { matchLabels: Record<string, string> }
  policyTypes: string[]
  ingress: { ports: PolicyPort[]; from: Peer[] }[]
  egress: { ports: PolicyPort[]; to?: Peer[] }[]
}
const policyOf = (manifests: readonly Manifest[]) => (only(manifests, 'NetworkPolicy') as Spec<NetworkPolicySpec>).spec

describe.skipIf(!canRender)(`shared egress defaults ${needs('go + sprig')}`, () => {
  it('without Redis: 1 replica, Recreate, no PDB; with Redis: 2 replicas, a surge of one, PDB minAvailable 1', () => {
    const alone = renderOk().manifests
    expect(deploymentOf(alone).spec).toMatchObject({ replicas: 1, strategy: { type: 'Recreate' } })
    expect(kinds(alone)).not.toContain('PodDisruptionBudget')

    const shared = renderOk(REDIS).manifests
    expect(deploymentOf(shared).spec).toMatchObject({
      replicas: 2,
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } },
    })
    const pdb = only(shared, 'PodDisruptionBudget') as Spec<{
      minAvailable: number
      maxUnavailable?: number
      selector: { matchLabels: Record<string, string> }
    }>
    expect(pdb.spec.minAvailable).toBe(1)
    expect(pdb.spec.maxUnavailable).toBeUndefined()
    expect(podOf(deploymentOf(shared)).labels).toMatchObject(pdb.spec.selector.matchLabels)

    // An explicit replicaCount: 1 with Redis has no PDB either (it would only block node drains).
    expect(kinds(renderOk({ ...REDIS, replicaCount: 1 }).manifests)).not.toContain('PodDisruptionBudget')
  })

  it('refuses a surging RollingUpdate without Redis (two in-process limiters during the rollout); maxSurge 0 is fine', () => {
    const surge = render({ strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } } })
    expect(!surge.ok && surge.error).toContain("twice each endpoint's limit")
    expect(render({ strategy: { type: 'RollingUpdate' } }).ok).toBe(false) // Kubernetes' default surge is 25%
    expect(render({ strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 0, maxUnavailable: 1 } } }).ok).toBe(
      true,
    )
    expect(render({ ...REDIS, strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: '50%' } } }).ok).toBe(true)
  })

  it('the HPA is off by default; on, it needs Redis, owns the replica count and keeps the PDB', () => {
    expect(kinds(renderOk(REDIS).manifests)).not.toContain('HorizontalPodAutoscaler')
    const noRedis = render({ autoscaling: { enabled: true } })
    expect(!noRedis.ok && noRedis.error).toContain('autoscaling.enabled needs Redis')
    const inverted = render({ ...REDIS, autoscaling: { enabled: true, minReplicas: 5, maxReplicas: 3 } })
    expect(!inverted.ok && inverted.error).toContain('autoscaling.minReplicas (5) is above autoscaling.maxReplicas (3)')

    const { manifests } = renderOk({
      ...REDIS,
      autoscaling: { enabled: true, minReplicas: 2, maxReplicas: 6, targetCPUUtilizationPercentage: 70 },
    })
    const hpa = only(manifests, 'HorizontalPodAutoscaler') as Spec<{
      scaleTargetRef: { kind: string; name: string }
      minReplicas: number
      maxReplicas: number
      metrics: { resource: { target: { averageUtilization: number } } }[]
    }>
    const deployment = deploymentOf(manifests)
    expect(hpa.spec.scaleTargetRef).toMatchObject({ kind: 'Deployment', name: deployment.metadata.name })
    expect(hpa.spec).toMatchObject({ minReplicas: 2, maxReplicas: 6 })
    expect(hpa.spec.metrics[0]!.resource.target.averageUtilization).toBe(70)
    expect(deployment.spec.replicas).toBeUndefined() // else every upgrade would reset what the HPA chose
    expect(kinds(manifests)).toContain('PodDisruptionBudget')
    // CPU utilisation is measured against the request: there must be one.
    expect(
      (sluiceIn(podOf(deployment).spec) as unknown as { resources: { requests: { cpu: string } } }).resources.requests
        .cpu,
    ).toBeTruthy()
  })

  it('requires the admin token in shared egress unless adminToken.open says otherwise; a sidecar on loopback needs none', () => {
    const refused = render({ adminToken: {} })
    expect(!refused.ok && refused.error).toContain("the admin port (/status, /metrics) listens on the pod's IP")
    expect(!refused.ok && refused.error).toContain('adminToken.existingSecret')
    expect(render({ adminToken: { existingSecret: 'sluice-admin' } }).ok).toBe(true)
    expect(render({ adminToken: { open: true } }).ok).toBe(true)
    expect(render({ mode: 'sidecar', adminToken: {} }).ok).toBe(true)
  })

  it("spreads the replicas over zones (required with more than one) and nodes (soft), by the pods' own labels; explicit constraints replace that", () => {
    const { labels, spec } = podOf(deploymentOf(renderOk(REDIS).manifests))
    const spread = (values: Record<string, unknown>) =>
      podOf(deploymentOf(renderOk(values).manifests)).spec.topologySpreadConstraints!.map((c) => [
        c.topologyKey,
        c.whenUnsatisfiable,
      ])
    expect(spread(REDIS)).toEqual([
      ['topology.kubernetes.io/zone', 'DoNotSchedule'],
      ['kubernetes.io/hostname', 'ScheduleAnyway'],
    ])
    // one replica: nothing to spread, and a cluster without zone labels still schedules it
    expect(spread({})).toEqual([
      ['topology.kubernetes.io/zone', 'ScheduleAnyway'],
      ['kubernetes.io/hostname', 'ScheduleAnyway'],
    ])
    expect(spread({ ...REDIS, topologySpread: { requiredKeys: [] } })[0]).toEqual([
      'topology.kubernetes.io/zone',
      'ScheduleAnyway',
    ])
    for (const c of spec.topologySpreadConstraints!) expect(labels).toMatchObject(c.labelSelector.matchLabels)
    const own = [
      {
        maxSkew: 2,
        topologyKey: 'kubernetes.io/hostname',
        whenUnsatisfiable: 'DoNotSchedule',
        labelSelector: { matchLabels: { a: 'b' } },
      },
    ]
    expect(
      podOf(deploymentOf(renderOk({ ...REDIS, topologySpreadConstraints: own }).manifests)).spec
        .topologySpreadConstraints,
    ).toEqual(own)
    expect(
      podOf(deploymentOf(renderOk({ topologySpread: { enabled: false } }).manifests)).spec.topologySpreadConstraints,
    ).toBeUndefined()
  })

  it('a ServiceAccount of its own that mounts no token, in the pod too; or an existing one', () => {
    const { manifests } = renderOk()
    const account = only(manifests, 'ServiceAccount') as Manifest & { automountServiceAccountToken: boolean }
    expect(account.automountServiceAccountToken).toBe(false)
    const { spec } = podOf(deploymentOf(manifests))
    expect(spec.serviceAccountName).toBe(account.metadata.name)
    expect(spec.automountServiceAccountToken).toBe(false)
    const existing = renderOk({ serviceAccount: { create: false, name: 'platform-egress' } }).manifests
    expect(kinds(existing)).not.toContain('ServiceAccount')
    expect(podOf(deploymentOf(existing)).spec.serviceAccountName).toBe('platform-egress')
  })

  it('image.digest pins the pods to repository@digest', () => {
    const digest = `sha256:${'b'.repeat(64)}`
    const { manifests } = renderOk({ image: { repository: 'registry.example.com/sluice', digest } })
    expect(sluiceIn(podOf(deploymentOf(manifests)).spec).image).toBe(`registry.example.com/sluice@${digest}`)
  })
})

describe.skipIf(!canRender)(`NetworkPolicy (on by default) ${needs('go + sprig')}`, () => {
  it('selects the sluice pods and limits both directions', () => {
    const { manifests } = renderOk()
    const policy = policyOf(manifests)
    expect(podOf(deploymentOf(manifests)).labels).toMatchObject(policy.podSelector.matchLabels)
    expect(policy.policyTypes).toEqual(['Ingress', 'Egress'])
  })

  it('ingress: the proxy port from the release namespace and the apps given; admin only from monitoring and the helm test pod', () => {
    const apps = { namespaceSelector: { matchLabels: { 'crm-api-client': 'true' } } }
    const { manifests } = renderOk({
      networkPolicy: { proxy: { from: [apps] }, admin: { namespaces: ['monitoring', 'observability'] } },
    })
    const [proxy, admin] = policyOf(manifests).ingress
    const containerPorts = sluiceIn(podOf(deploymentOf(manifests)).spec).ports!.map((p) => p.name)
    expect(proxy!.ports).toEqual([{ port: 'proxy', protocol: 'TCP' }])
    expect(admin!.ports).toEqual([{ port: 'admin', protocol: 'TCP' }])
    for (const rule of [proxy!, admin!]) expect(containerPorts).toContain(rule.ports[0]!.port) // named ports resolve
    expect(proxy!.from).toEqual([{ podSelector: {} }, apps])

    const testPod = only(manifests, 'Pod')
    expect(testPod.metadata.labels).toMatchObject(admin!.from[0]!.podSelector!.matchLabels!)
    expect(admin!.from.slice(1)).toEqual([
      { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } },
      { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'observability' } } },
    ])
    // The test pod must not look like a sluice pod to the Service.
    const service = only(manifests, 'Service') as Spec<{ selector: Record<string, string> }>
    expect(Object.entries(service.spec.selector).every(([k, v]) => testPod.metadata.labels![k] === v)).toBe(false)

    const closed = policyOf(renderOk({ networkPolicy: { proxy: { sameNamespace: false } } }).manifests)
    expect(closed.ingress.map((r) => r.ports[0]!.port)).toEqual(['admin'])
  })

  it("egress: DNS, the upstream's port (443 for https, or the URL's), and Redis only when configured", () => {
    const plain = policyOf(renderOk().manifests).egress
    expect(plain.map((r) => r.ports)).toEqual([
      [
        { port: 53, protocol: 'UDP' },
        { port: 53, protocol: 'TCP' },
      ],
      [{ port: 443, protocol: 'TCP' }],
    ])
    expect(plain[0]!.to).toEqual([{ namespaceSelector: {}, podSelector: { matchLabels: { 'k8s-app': 'kube-dns' } } }])
    expect(plain[1]!.to).toEqual([{ ipBlock: { cidr: '0.0.0.0/0' } }])

    const staging = policyOf(
      renderOk({
        upstream: 'http://crm-sim.staging.svc:8081/v2',
        networkPolicy: { egress: { apiCidrs: ['10.1.0.0/16'] } },
      }).manifests,
    ).egress
    expect(staging[1]).toEqual({ ports: [{ port: 8081, protocol: 'TCP' }], to: [{ ipBlock: { cidr: '10.1.0.0/16' } }] })
    expect(policyOf(renderOk({ upstream: 'http://crm-sim.staging.svc/v2' }).manifests).egress[1]!.ports).toEqual([
      { port: 80, protocol: 'TCP' },
    ])

    const redisTo = [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'platform' } } }]
    const withRedis = policyOf(
      renderOk({ ...REDIS, networkPolicy: { egress: { redisPorts: [6379, 26379], redisTo } } }).manifests,
    ).egress
    expect(withRedis[2]).toEqual({
      ports: [
        { port: 6379, protocol: 'TCP' },
        { port: 26379, protocol: 'TCP' },
      ],
      to: redisTo,
    })
  })

  it("is one value away from off, and absent in sidecar mode (the pods are the app's)", () => {
    expect(kinds(renderOk({ networkPolicy: { enabled: false } }).manifests)).not.toContain('NetworkPolicy')
    expect(kinds(renderOk({ mode: 'sidecar' }).manifests)).not.toContain('NetworkPolicy')
  })
})

describe.skipIf(!canRender)(`helm test ${needs('go + sprig')}`, () => {
  it("is a test hook pod running the sluice image, non-root, asking the Service's admin port for /readyz", () => {
    const { manifests } = renderOk({ image: { repository: 'registry.example.com/sluice' } })
    const pod = only(manifests, 'Pod') as Spec<{
      restartPolicy: string
      containers: { image: string; command: string[]; securityContext: Tree }[]
    }>
    expect(pod.metadata.annotations).toMatchObject({ 'helm.sh/hook': 'test' })
    expect(pod.spec.restartPolicy).toBe('Never')
    const [container] = pod.spec.containers
    expect(container!.image).toBe('registry.example.com/sluice:0.2.0')
    expect(container!.securityContext).toMatchObject({ runAsNonRoot: true, readOnlyRootFilesystem: true })
    const service = only(manifests, 'Service')
    expect(container!.command.join(' ')).toContain(`http://${service.metadata.name}:9090/readyz`)
    expect(kinds(renderOk({ tests: { enabled: false } }).manifests)).not.toContain('Pod')
  })
})

describe.skipIf(!canRender)(`the admin token ${needs('go + sprig')}`, () => {
  it('comes from an existing Secret into SLUICE_ADMIN_TOKEN, and the monitors send it; never from settings', () => {
    const token = { adminToken: { existingSecret: 'sluice-admin', existingSecretKey: 'token' } }
    const { manifests } = renderOk({ ...token, serviceMonitor: { enabled: true } })
    const env = sluiceIn(podOf(deploymentOf(manifests)).spec).env
    expect(env.find((e) => e.name === 'SLUICE_ADMIN_TOKEN')).toEqual({
      name: 'SLUICE_ADMIN_TOKEN',
      valueFrom: { secretKeyRef: { name: 'sluice-admin', key: 'token' } },
    })
    const monitor = only(manifests, 'ServiceMonitor') as Spec<{ endpoints: { authorization?: Tree }[] }>
    expect(monitor.spec.endpoints[0]!.authorization).toEqual({
      type: 'Bearer',
      credentials: { name: 'sluice-admin', key: 'token' },
    })
    const pod = only(
      renderOk({ ...token, mode: 'sidecar', podMonitor: { enabled: true, selector: { app: 'a' } } }).manifests,
      'PodMonitor',
    ) as Spec<{ podMetricsEndpoints: { authorization?: Tree }[] }>
    expect(pod.spec.podMetricsEndpoints[0]!.authorization).toEqual({
      type: 'Bearer',
      credentials: { name: 'sluice-admin', key: 'token' },
    })

    const open = renderOk({ serviceMonitor: { enabled: true } }).manifests
    expect(sluiceIn(podOf(deploymentOf(open)).spec).env.map((e) => e.name)).not.toContain('SLUICE_ADMIN_TOKEN')
    expect(
      (only(open, 'ServiceMonitor') as Spec<{ endpoints: { authorization?: Tree }[] }>).spec.endpoints[0]!
        .authorization,
    ).toBeUndefined()
    const inSettings = render({ settings: { adminToken: 'a-token-of-sixteen-chars' } })
    expect(!inSettings.ok && inSettings.error).toContain('settings.adminToken would put the admin token in a ConfigMap')
  })
})

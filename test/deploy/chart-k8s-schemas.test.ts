import { describe, expect, it } from 'vitest'
import { exampleValueFiles, readYamlFile, type Tree } from './chart.js'
import { schemaErrors } from './k8s-models.js'
import { APP_DEPLOYMENT } from './pod.js'
import { canRender, kinds, renderOk, type RenderOptions } from './render.js'
import { needs } from '../support/tools.js'

/**
 * Every manifest the chart renders, for the defaults, every example and every optional object,
 * passes the published Kubernetes schemas (k8s-models.ts). A wrong type anywhere in a template, or
 * a value passed through whole that Kubernetes would refuse, fails here rather than at the API server.
 */

const everything: Tree = {
  redis: { url: 'redis://:pw@redis.crm.svc:6379/0' },
  image: { digest: `sha256:${'a'.repeat(64)}` },
  settings: { logLevel: 'warn' },
  adminToken: { existingSecret: 'sluice-admin', existingSecretKey: 'token' },
  apps: { enabled: true, existingSecret: 'sluice-apps', existingSecretKey: 'apps.yaml' },
  credentials: { inject: true, orgKeys: [{ org: '1001', secretName: 'crm-key-1001' }], existingSecret: 'crm-keys' },
  autoscaling: { enabled: true, minReplicas: 2, maxReplicas: 5 },
  serviceMonitor: { enabled: true, labels: { release: 'prometheus' } },
  prometheusRule: { enabled: true, runbookBaseUrl: 'https://git.example.com/platform/sluice/-/blob/v0.2.0/docs' },
  grafanaDashboard: { enabled: true, namespace: 'monitoring' },
  serviceAccount: { annotations: { 'example.com/role': 'egress' } },
  extraEnv: [{ name: 'NODE_EXTRA_CA_CERTS', value: '/etc/redis-ca/ca.crt' }],
  extraVolumes: [{ name: 'redis-ca', secret: { secretName: 'redis-ca' } }],
  extraVolumeMounts: [{ name: 'redis-ca', mountPath: '/etc/redis-ca', readOnly: true }],
  networkPolicy: {
    proxy: { from: [{ namespaceSelector: { matchLabels: { team: 'crm' } } }] },
    egress: { redisTo: [{ ipBlock: { cidr: '10.0.0.0/8' } }] },
  },
  tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'egress', effect: 'NoSchedule' }],
  affinity: {
    nodeAffinity: {
      requiredDuringSchedulingIgnoredDuringExecution: {
        nodeSelectorTerms: [{ matchExpressions: [{ key: 'pool', operator: 'In', values: ['egress'] }] }],
      },
    },
  },
}

const cases: [string, Tree, RenderOptions][] = [
  ['defaults', {}, {}],
  ['deployment with every optional object', everything, {}],
  [
    'sidecar (native) in an app pod, scraped',
    {
      mode: 'sidecar',
      redis: { url: 'redis://r:6379' },
      adminToken: { existingSecret: 'sluice-admin', existingSecretKey: 'token' },
      podMonitor: { enabled: true, selector: { app: 'app' } },
    },
    { parent: APP_DEPLOYMENT },
  ],
  [
    'sidecar with app identity and keys',
    {
      mode: 'sidecar',
      apps: { enabled: true, existingSecret: 'sluice-apps' },
      credentials: { inject: true, orgKeys: [{ org: '1001', secretName: 'k' }] },
    },
    { parent: APP_DEPLOYMENT },
  ],
  [
    'sidecar (regular container) in an app pod, loopback admin',
    { mode: 'sidecar', sidecar: { native: false }, settings: { logLevel: 'info' } },
    { parent: APP_DEPLOYMENT },
  ],
  ...exampleValueFiles().map((file): [string, Tree, RenderOptions] => {
    const values = readYamlFile(file) as Tree
    return [file.split('/').pop()!, values, values.mode === 'sidecar' ? { parent: APP_DEPLOYMENT } : {}]
  }),
]

describe.skipIf(!canRender)(`rendered manifests against the Kubernetes schemas ${needs('go + sprig')}`, () => {
  for (const [name, values, options] of cases) {
    it(name, () => {
      const { manifests } = renderOk(values, options)
      expect(manifests.length).toBeGreaterThan(0)
      expect(manifests.map(schemaErrors).filter(Boolean)).toEqual([])
    })
  }

  it('the kitchen-sink case renders every kind the chart has in deployment mode', () => {
    expect(kinds(renderOk(everything).manifests)).toEqual([
      'ConfigMap',
      'ConfigMap',
      'Deployment',
      'HorizontalPodAutoscaler',
      'NetworkPolicy',
      'Pod',
      'PodDisruptionBudget',
      'PrometheusRule',
      'Secret',
      'Service',
      'ServiceAccount',
      'ServiceMonitor',
    ])
  })

  it('the check does refuse what the API server would: a bad quantity passed through, a bad scrape interval', () => {
    const { manifests } = renderOk({})
    const deployment = structuredClone(manifests.find((m) => m.kind === 'Deployment')!) as unknown as {
      spec: { template: { spec: { containers: { resources: Tree }[] } } }
    }
    deployment.spec.template.spec.containers[0]!.resources = { limits: { memory: 'lots' } }
    expect(schemaErrors(deployment as never)).toContain('resources/limits/memory')
    const monitor = renderOk({
      mode: 'sidecar',
      adminToken: { existingSecret: 'sluice-admin' },
      podMonitor: { enabled: true, selector: { app: 'a' } },
    }).manifests.find((m) => m.kind === 'PodMonitor')!
    const broken = structuredClone(monitor) as unknown as { spec: { podMetricsEndpoints: { interval: string }[] } }
    broken.spec.podMetricsEndpoints[0]!.interval = 'every minute'
    expect(schemaErrors(broken as never)).toContain('interval')
  })
})

import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect } from 'vitest'
import { loadSettings } from '../../src/config/load.js'
import type { Settings } from '../../src/config/schema.js'
import type { Tree } from './chart.js'
import type { Manifest } from './render.js'

/** Rendered pods read as Kubernetes would run them: the sluice container, its env, its settings file. */

export interface EnvVar {
  name: string
  value?: string
  valueFrom?: { secretKeyRef?: { name: string; key: string } }
}
export interface Probe {
  httpGet?: { path: string; port: number }
  exec?: { command: string[] }
  periodSeconds?: number
}
export interface Container {
  name: string
  image: string
  command?: unknown
  args?: unknown
  restartPolicy?: string
  ports?: { name: string; containerPort: number }[]
  env: EnvVar[]
  startupProbe: Probe
  livenessProbe: Probe
  readinessProbe: Probe
  lifecycle?: { preStop: { exec: { command: string[] } } }
  securityContext: Tree
  volumeMounts: { name: string; mountPath: string }[]
  resources?: Tree
}
export interface PodSpec {
  terminationGracePeriodSeconds: number
  enableServiceLinks?: boolean
  containers: Container[]
  initContainers?: Container[]
  volumes: { name: string; configMap?: { name: string }; secret?: { secretName: string } }[]
  serviceAccountName?: string
  automountServiceAccountToken?: boolean
  topologySpreadConstraints?: {
    topologyKey: string
    whenUnsatisfiable: string
    labelSelector: { matchLabels: Record<string, string> }
  }[]
}
export const podOf = (
  m: Manifest,
): { labels: Record<string, string>; annotations: Record<string, string>; spec: PodSpec } => {
  const t = (
    m as unknown as {
      spec: {
        template: { metadata: { labels: Record<string, string>; annotations: Record<string, string> }; spec: PodSpec }
      }
    }
  ).spec.template
  return { labels: t.metadata.labels, annotations: t.metadata.annotations, spec: t.spec }
}
export const sluiceIn = (spec: PodSpec): Container =>
  [...spec.containers, ...(spec.initContainers ?? [])].find((c) => c.name === 'sluice')!

/** What sluice would load in this container: its literal env, Secrets and ConfigMaps resolved from the render. */
export function settingsOf(container: Container, manifests: readonly Manifest[], pod: PodSpec): Settings {
  return loadSettings(envOf(container, manifests, pod))
}

/** The container's env as the process would see it; SLUICE_CONFIG points at a local copy of the mounted file. */
export function envOf(container: Container, manifests: readonly Manifest[], pod: PodSpec): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {}
  for (const e of container.env) {
    if (e.value !== undefined) env[e.name] = e.value
    const ref = e.valueFrom?.secretKeyRef
    if (ref) {
      const secret = manifests.find((m) => m.kind === 'Secret' && m.metadata.name === ref.name) as
        { stringData?: Record<string, string> } | undefined
      // An existing Secret's value is not in the render: a stand-in URL, with TLS so that settings
      // needing a TLS connection (redis.tlsServername) load as they would with the real one.
      env[e.name] = secret?.stringData?.[ref.key] ?? 'rediss://from-an-existing-secret:6379'
    }
  }
  if (env.SLUICE_CONFIG !== undefined) {
    const mount = container.volumeMounts.find((m) => env.SLUICE_CONFIG!.startsWith(`${m.mountPath}/`))
    expect(mount, 'SLUICE_CONFIG lies in a mounted volume').toBeDefined()
    const volume = pod.volumes.find((v) => v.name === mount!.name)
    const configMap = manifests.find((m) => m.kind === 'ConfigMap' && m.metadata.name === volume?.configMap?.name) as
      { data: Record<string, string> } | undefined
    const key = env.SLUICE_CONFIG.slice(mount!.mountPath.length + 1)
    expect(configMap?.data[key], `ConfigMap ${volume?.configMap?.name} has ${key}`).toBeDefined()
    const file = join(mkdtempSync(join(tmpdir(), 'sluice-mounted-')), key)
    writeFileSync(file, configMap!.data[key]!)
    env.SLUICE_CONFIG = file
  }
  return env
}

export const APP_DEPLOYMENT = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
spec:
  replicas: 2
  selector:
    matchLabels: {app: app}
  template:
    metadata:
      labels: {app: app, app.kubernetes.io/name: my-app}
      annotations:
        {{- include "sluice.sidecarPodAnnotations" (dict "Values" .Values.sluice "Release" .Release) | nindent 8 }}
    spec:
      terminationGracePeriodSeconds: 100
      {{- if .Values.sluice.sidecar.native }}
      initContainers:
        {{- include "sluice.sidecar" (dict "Values" .Values.sluice "Release" .Release) | nindent 8 }}
      {{- end }}
      containers:
        - name: app
          image: app:1
          ports:
            - name: http
              containerPort: 8080
          env:
            - name: CRM_API_BASE_URL
              value: http://127.0.0.1:{{ .Values.sluice.sidecar.ports.proxy }}/v2
        {{- if not .Values.sluice.sidecar.native }}
        {{- include "sluice.sidecar" (dict "Values" .Values.sluice "Release" .Release) | nindent 8 }}
        {{- end }}
      volumes:
        {{- include "sluice.sidecarVolumes" (dict "Values" .Values.sluice "Release" .Release) | nindent 8 }}
`

import { Deployment } from 'kubernetes-models/apps/v1'
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2'
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1'
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1'
import { ConfigMap, Pod, Secret, Service, ServiceAccount } from 'kubernetes-models/v1'
import {
  PodMonitor,
  PrometheusRule,
  ServiceMonitor,
} from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1'
import type { Manifest } from './render.js'

/**
 * Rendered manifests checked against the published Kubernetes OpenAPI schemas (kubernetes-models,
 * generated from Kubernetes' own OpenAPI; prometheus-operator's CRDs from
 * @kubernetes-models/prometheus-operator): types, required fields, formats (quantities, durations).
 */

interface Model {
  validate(): void
}
type ModelClass = new (data: never) => Model

const MODELS: Record<string, ModelClass> = {
  'apps/v1/Deployment': Deployment,
  'autoscaling/v2/HorizontalPodAutoscaler': HorizontalPodAutoscaler,
  'networking.k8s.io/v1/NetworkPolicy': NetworkPolicy,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
  'v1/ConfigMap': ConfigMap,
  'v1/Pod': Pod,
  'v1/Secret': Secret,
  'v1/Service': Service,
  'v1/ServiceAccount': ServiceAccount,
  'monitoring.coreos.com/v1/PodMonitor': PodMonitor,
  'monitoring.coreos.com/v1/PrometheusRule': PrometheusRule,
  'monitoring.coreos.com/v1/ServiceMonitor': ServiceMonitor,
}

/** The schema errors of one manifest ('' when it is valid); an unknown apiVersion/kind is an error too. */
export function schemaErrors(manifest: Manifest): string {
  const apiVersion = (manifest as { apiVersion?: unknown }).apiVersion
  const model = MODELS[`${String(apiVersion)}/${manifest.kind}`]
  if (!model) return `no published schema known here for ${String(apiVersion)} ${manifest.kind}`
  try {
    new model(manifest as never).validate()
    return ''
  } catch (e) {
    return `${manifest.kind} ${manifest.metadata.name}: ${(e as Error).message}`
  }
}

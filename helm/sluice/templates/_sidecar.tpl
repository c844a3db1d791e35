{{/*
sluice as a sidecar: a container beside your app, in your app's own pod. The app calls
http://127.0.0.1:18080/v2 (sidecar.ports.proxy) instead of https://api.neoncrm.com/v2.

Use it from your own chart with sluice as a dependency (Chart.yaml: dependencies: - name: sluice),
`sluice: {mode: sidecar, ...}` in your values, and in your pod template (Kubernetes >= 1.29, the
native sidecar, sidecar.native: true, the default):

    metadata:
      annotations:   # roll the app's pods when sluice's settings or Secrets change
        {{- include "sluice.sidecarPodAnnotations" (dict "Values" .Values.sluice "Release" .Release) | nindent 8 }}
    spec:
      terminationGracePeriodSeconds: 100  # > settings.shutdown.drainMs + graceMs
      initContainers:
        {{- include "sluice.sidecar" (dict "Values" .Values.sluice "Release" .Release) | nindent 8 }}
      containers:
        - name: app
          env:
            - name: CRM_API_BASE_URL
              value: http://127.0.0.1:18080/v2
      volumes:
        {{- include "sluice.sidecarVolumes" (dict "Values" .Values.sluice "Release" .Release) | nindent 8 }}

The native sidecar starts (and passes its startup probe) before the app starts, and is stopped only
after the app has exited. With sidecar.native: false, include "sluice.sidecar" under containers
instead; it then gets a preStop sleep so it outlives the app's last requests.
The context is a dict with this chart's values and the release, so names (the settings ConfigMap,
the Redis Secret) match what this chart renders in mode: sidecar. More than one pod, or more than one
app calling the API for the same organisation, needs redis.url: every sidecar then shares the permits.
*/}}
{{- define "sluice.sidecar" -}}
{{ include "sluice.container" (dict "ctx" . "sidecar" true) }}
{{- end -}}

{{/*
The app's pod template annotations that roll its pods when the sidecar's settings, its Redis URL or
admin token change (sluice reads them at start); include them under the pod template's metadata:

    template:
      metadata:
        annotations:
          {{- include "sluice.sidecarPodAnnotations" (dict "Values" .Values.sluice "Release" .Release) | nindent 10 }}
*/}}
{{- define "sluice.sidecarPodAnnotations" -}}
{{ include "sluice.podChecksums" . }}
{{- end -}}

{{/* The volumes the sidecar mounts (and extraVolumes); include them in the same pod's volumes. */}}
{{- define "sluice.sidecarVolumes" -}}
{{ include "sluice.volumes" . }}
{{- end -}}

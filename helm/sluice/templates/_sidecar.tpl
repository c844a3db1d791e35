{{/*
sluice as a sidecar: a container beside your app, in your app's own pod. The app calls
http://127.0.0.1:8080/v2 (sidecar.ports.proxy) instead of https://api.neoncrm.com/v2.

Use it from your own chart with sluice as a dependency (Chart.yaml: dependencies: - name: sluice),
`sluice: {mode: sidecar, ...}` in your values, and in your pod template:

    spec:
      terminationGracePeriodSeconds: 40   # > sluice.sidecar.preStopSleepSeconds + settings.shutdown.graceMs
      containers:
        - name: app
          env:
            - name: CRM_API_BASE_URL
              value: http://127.0.0.1:8080/v2
        {{- include "sluice.sidecar" (dict "Values" .Values.sluice "Release" .Release) | nindent 8 }}
      volumes:
        {{- include "sluice.sidecarVolumes" (dict "Values" .Values.sluice "Release" .Release) | nindent 8 }}

With sidecar.native: true, include "sluice.sidecar" under initContainers instead (Kubernetes >= 1.29).
The context is a dict with this chart's values and the release, so names (the settings ConfigMap,
the Redis Secret) match what this chart renders in mode: sidecar. More than one pod, or more than one
app calling the API for the same organisation, needs redis.url: every sidecar then shares the permits.
*/}}
{{- define "sluice.sidecar" -}}
{{ include "sluice.container" (dict "ctx" . "sidecar" true) }}
{{- end -}}

{{/* The volumes the sidecar mounts; include them in the same pod's volumes. */}}
{{- define "sluice.sidecarVolumes" -}}
{{ include "sluice.volumes" . }}
{{- end -}}

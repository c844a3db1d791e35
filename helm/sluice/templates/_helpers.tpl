{{/*
Helpers that take a root-like context: anything with .Values (this chart's values) and .Release.
They avoid .Chart so that another chart can call them (through "sluice.sidecar") with
(dict "Values" .Values.sluice "Release" .Release) and get the same names as this chart renders.
*/}}

{{- define "sluice.name" -}}
{{- default "sluice" .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "sluice.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := include "sluice.name" . -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "sluice.selectorLabels" -}}
app.kubernetes.io/name: {{ include "sluice.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* Labels of the objects this chart renders itself (root context only: uses .Chart). */}}
{{- define "sluice.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "sluice.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "sluice.image" -}}
{{- printf "%s:%s" .Values.image.repository .Values.image.tag -}}
{{- end -}}

{{/* Name of the Secret holding the Redis URL; empty when no Redis is configured. */}}
{{- define "sluice.redisSecretName" -}}
{{- if .Values.redis.existingSecret -}}
{{- .Values.redis.existingSecret -}}
{{- else if .Values.redis.url -}}
{{- printf "%s-redis" (include "sluice.fullname" .) -}}
{{- end -}}
{{- end -}}

{{- define "sluice.redisSecretKey" -}}
{{- if .Values.redis.existingSecret -}}
{{- .Values.redis.existingSecretKey | default "url" -}}
{{- else -}}
url
{{- end -}}
{{- end -}}

{{/* "true" when the limiter will be the shared Redis one (a chart value, or SLUICE_REDIS_URL in extraEnv). */}}
{{- define "sluice.hasRedis" -}}
{{- $redis := include "sluice.redisSecretName" . -}}
{{- range .Values.extraEnv -}}
{{- if eq .name "SLUICE_REDIS_URL" -}}{{- $redis = "extraEnv" -}}{{- end -}}
{{- end -}}
{{- if $redis -}}true{{- end -}}
{{- end -}}

{{- define "sluice.settingsPath" -}}
/etc/sluice/settings.yaml
{{- end -}}

{{/*
Refuses values that would deploy something broken, with a message saying what to do instead.
Included by templates/validate.yaml, so it runs in both modes.
*/}}
{{- define "sluice.validate" -}}
{{- $v := .Values -}}
{{- if not (has $v.mode (list "deployment" "sidecar")) -}}
{{- fail (printf "sluice: mode must be \"deployment\" or \"sidecar\", not %q" (toString $v.mode)) -}}
{{- end -}}
{{- $settings := $v.settings | default dict -}}
{{- range $key, $instead := dict "port" "ports.proxy (or sidecar.ports.proxy)" "adminPort" "ports.admin (or sidecar.ports.admin)" "upstream" "upstream" -}}
{{- if hasKey $settings $key -}}
{{- fail (printf "sluice: settings.%s is set by the chart: use the chart value %s instead" $key $instead) -}}
{{- end -}}
{{- end -}}
{{- if dig "redis" "url" "" $settings -}}
{{- fail "sluice: settings.redis.url would put the Redis URL (and its password) in a ConfigMap: use redis.url (rendered into a Secret) or redis.existingSecret instead" -}}
{{- end -}}
{{- if and (eq $v.mode "deployment") (gt (int $v.replicaCount) 1) (not (include "sluice.hasRedis" .)) -}}
{{- fail (printf "sluice: replicaCount is %d but no Redis is configured. Each replica's in-process limiter counts only its own requests, so %d replicas would let up to %d times each endpoint's limit reach the API. Set redis.url or redis.existingSecret (every replica then shares the permits in Redis), or set replicaCount: 1." (int $v.replicaCount) (int $v.replicaCount) (int $v.replicaCount)) -}}
{{- end -}}
{{- $graceSeconds := div (add (int (dig "shutdown" "graceMs" 25000 $settings)) 999) 1000 -}}
{{- if eq $v.mode "deployment" -}}
{{- if le (int $v.terminationGracePeriodSeconds) (add (int $v.shutdown.preStopSleepSeconds) $graceSeconds) -}}
{{- fail (printf "sluice: terminationGracePeriodSeconds (%d) must exceed shutdown.preStopSleepSeconds (%d) + settings.shutdown.graceMs (%ds), or Kubernetes kills sluice while in-flight requests still finish" (int $v.terminationGracePeriodSeconds) (int $v.shutdown.preStopSleepSeconds) (int $graceSeconds)) -}}
{{- end -}}
{{- end -}}
{{- end -}}

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

{{/* repository:tag, or repository@digest when image.digest is set (the tag then only labels the objects). */}}
{{- define "sluice.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository .Values.image.tag -}}
{{- end -}}
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

{{/* Replicas of the Deployment: replicaCount, or 2 with Redis and 1 without. */}}
{{- define "sluice.replicas" -}}
{{- if kindIs "invalid" .Values.replicaCount -}}
{{- ternary 2 1 (eq (include "sluice.hasRedis" .) "true") -}}
{{- else -}}
{{- int .Values.replicaCount -}}
{{- end -}}
{{- end -}}

{{/* The fewest replicas that run at once: autoscaling.minReplicas with the HPA, else the replicas. */}}
{{- define "sluice.minReplicas" -}}
{{- if .Values.autoscaling.enabled -}}
{{- int .Values.autoscaling.minReplicas -}}
{{- else -}}
{{- include "sluice.replicas" . -}}
{{- end -}}
{{- end -}}

{{/*
The Deployment's strategy as YAML: strategy when set; else Recreate without Redis (a surge would run
two in-process limiters, twice each endpoint's limit) and a surge of one with Redis.
*/}}
{{- define "sluice.strategy" -}}
{{- if .Values.strategy -}}
{{- toYaml .Values.strategy -}}
{{- else if eq (include "sluice.hasRedis" .) "true" -}}
type: RollingUpdate
rollingUpdate:
  maxSurge: 1
  maxUnavailable: 0
{{- else -}}
type: Recreate
{{- end -}}
{{- end -}}

{{- define "sluice.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "sluice.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The upstream's port: explicit in the URL, else 443 for https and 80 for http. */}}
{{- define "sluice.upstreamPort" -}}
{{- $u := urlParse .Values.upstream -}}
{{- $port := regexFind ":[0-9]+$" $u.host | trimPrefix ":" -}}
{{- if $port -}}
{{- $port -}}
{{- else -}}
{{- ternary 443 80 (eq $u.scheme "https") -}}
{{- end -}}
{{- end -}}

{{/* "true" when the sidecar's admin port listens on every interface (scraped by the PodMonitor, or asked for). */}}
{{- define "sluice.sidecarAdminExposed" -}}
{{- if or .Values.podMonitor.enabled .Values.sidecar.exposeAdmin -}}true{{- end -}}
{{- end -}}

{{/*
Mode of the Secret files (decimal): 0440 in the chart's own pod, whose fsGroup (podSecurityContext)
makes them sluice's; 0444 in an app's pod, whose fsGroup the app decides. Only sluice's container
mounts the volume, so "others" there is sluice itself (docs/deploy.md, "Sidecar").
*/}}
{{- define "sluice.secretFileMode" -}}
{{- ternary 292 288 (eq .Values.mode "sidecar") -}}
{{- end -}}

{{- define "sluice.settingsPath" -}}
/etc/sluice/settings.yaml
{{- end -}}

{{/* Where the app list Secret and the organisations' keys are mounted: beside, not inside, the settings' /etc/sluice (a read-only ConfigMap volume). */}}
{{- define "sluice.appsDir" -}}
/etc/sluice-apps
{{- end -}}
{{- define "sluice.keysDir" -}}
/etc/sluice-keys
{{- end -}}

{{/* "true" when any Secret holds organisations' API keys for injection. */}}
{{- define "sluice.hasKeys" -}}
{{- if or (and .Values.credentials.inject (or .Values.credentials.existingSecret .Values.credentials.orgKeys)) (include "sluice.upstreamKeys" .) -}}true{{- end -}}
{{- end -}}

{{/* Whether some upstream of the chart value upstreams names keys (each injected, docs/upstreams.md "Credentials"). */}}
{{- define "sluice.upstreamKeys" -}}
{{- range .Values.upstreams -}}{{- if .keys -}}true{{- end -}}{{- end -}}
{{- end -}}

{{/*
The settings file: settings, with settings.upstreams from the chart value upstreams: each entry as it
is but for its keys (projected into the keys directory as <name>.<instance>) and its catalogFile
(shipped in the same ConfigMap as catalog-<name>.yaml and named as its catalog). Empty: no file.
*/}}
{{- define "sluice.settingsDoc" -}}
{{- $settings := deepCopy (.Values.settings | default dict) -}}
{{- if .Values.upstreams -}}
{{- $list := list -}}
{{- range .Values.upstreams -}}
{{- $u := omit . "keys" "catalogFile" -}}
{{- if .catalogFile -}}
{{- $_ := set $u "catalog" (printf "/etc/sluice/catalog-%s.yaml" .name) -}}
{{- end -}}
{{- $list = append $list $u -}}
{{- end -}}
{{- $_ := set $settings "upstreams" $list -}}
{{- end -}}
{{- if $settings -}}{{- toYaml $settings -}}{{- end -}}
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
{{- range $key, $instead := dict "host" "nothing (the chart binds 0.0.0.0, or 127.0.0.1 in a sidecar)" "adminHost" "nothing (the chart binds 0.0.0.0, or 127.0.0.1 in a sidecar unless scraped)" "port" "ports.proxy (or sidecar.ports.proxy)" "adminPort" "ports.admin (or sidecar.ports.admin)" "upstream" "upstream" -}}
{{- if hasKey $settings $key -}}
{{- fail (printf "sluice: settings.%s is set by the chart: use the chart value %s instead" $key $instead) -}}
{{- end -}}
{{- end -}}
{{- /* Shared egress binds the admin port on the pod's IP: /status and /metrics (organisation ids, live permits) need the token unless opened on purpose. */ -}}
{{- if and (eq $v.mode "deployment") (not $v.adminToken.existingSecret) (not $v.adminToken.open) -}}
{{- fail "sluice: the admin port (/status, /metrics) listens on the pod's IP: set adminToken.existingSecret (a Secret holding a token of 16+ characters; the ServiceMonitor sends it, /healthz and /readyz stay open), or adminToken.open: true to serve it without one" -}}
{{- end -}}
{{- /* The Secret files are 0440 (sluice.secretFileMode) in the chart's own pod: readable by sluice only through the pod's fsGroup. */ -}}
{{- if and (eq $v.mode "deployment") (or (and $v.apps.enabled $v.apps.existingSecret) (include "sluice.hasKeys" .)) (not ($v.podSecurityContext | default dict).fsGroup) -}}
{{- fail "sluice: the app list and key files are mounted 0440, readable through the pod's group only: set podSecurityContext.fsGroup (1000, the group sluice runs as) or sluice cannot read them" -}}
{{- end -}}
{{- if hasKey $settings "adminToken" -}}
{{- fail "sluice: settings.adminToken would put the admin token in a ConfigMap: put it in a Secret and name it in adminToken.existingSecret instead" -}}
{{- end -}}
{{- range $key := list "enabled" "file" -}}
{{- if hasKey (dig "apps" dict $settings) $key -}}
{{- fail (printf "sluice: settings.apps.%s is set by the chart: use the chart values apps.enabled and apps.existingSecret (the app list as a mounted Secret) instead" $key) -}}
{{- end -}}
{{- end -}}
{{- if and (hasKey $settings "upstreams") $v.upstreams -}}
{{- fail "sluice: both settings.upstreams and the chart value upstreams are set: list the upstreams once, in upstreams (it also takes their catalogFile and keys)" -}}
{{- end -}}
{{- $names := list -}}
{{- range $v.upstreams -}}
{{- if has .name $names -}}
{{- fail (printf "sluice: upstreams names %s twice" .name) -}}
{{- end -}}
{{- $names = append $names .name -}}
{{- if and .catalogFile .catalog -}}
{{- fail (printf "sluice: upstreams %s has both catalog and catalogFile: give one" .name) -}}
{{- end -}}
{{- if and .keys (not $v.apps.enabled) -}}
{{- fail (printf "sluice: upstreams %s has keys, which sluice injects: that needs apps.enabled (without app identity anyone who reaches sluice could use them)" .name) -}}
{{- end -}}
{{- end -}}
{{- if hasKey $settings "credentials" -}}
{{- fail "sluice: settings.credentials is set by the chart: use the chart values credentials.inject, credentials.orgKeys and credentials.existingSecret (API keys from Secrets) instead" -}}
{{- end -}}
{{- if and $v.credentials.inject (not $v.apps.enabled) -}}
{{- fail "sluice: credentials.inject needs apps.enabled: without app identity anyone who reaches sluice could use every organisation's API key. Set apps.enabled: true and give each app a token (apps.existingSecret)." -}}
{{- end -}}
{{- if and $v.apps.enabled (not $v.apps.existingSecret) (not (dig "apps" "list" dict $settings)) -}}
{{- fail "sluice: apps.enabled with no app: every request would be refused 401. Name the Secret holding the app list in apps.existingSecret (or list apps in settings.apps.list)." -}}
{{- end -}}
{{- $orgs := list -}}
{{- range $v.credentials.orgKeys -}}
{{- if has (toString .org) $orgs -}}
{{- fail (printf "sluice: credentials.orgKeys names organisation %s twice" (toString .org)) -}}
{{- end -}}
{{- $orgs = append $orgs (toString .org) -}}
{{- end -}}
{{- if dig "redis" "url" "" $settings -}}
{{- fail "sluice: settings.redis.url would put the Redis URL (and its password) in a ConfigMap: use redis.url (rendered into a Secret) or redis.existingSecret instead" -}}
{{- end -}}
{{- if dig "redis" "sentinelPassword" "" $settings -}}
{{- fail "sluice: settings.redis.sentinelPassword would put the Sentinels' password in a ConfigMap: use redis.sentinelPassword.existingSecret instead" -}}
{{- end -}}
{{- if and $v.redis.sentinelPassword.existingSecret (ne (dig "redis" "topology" "standalone" $settings) "sentinel") -}}
{{- fail "sluice: redis.sentinelPassword.existingSecret is set but settings.redis.topology is not sentinel: sluice would refuse to start (SLUICE_REDIS_SENTINEL_PASSWORD is for topology: sentinel only)" -}}
{{- end -}}
{{- $redis := eq (include "sluice.hasRedis" .) "true" -}}
{{- if eq $v.mode "deployment" -}}
{{- $replicas := int (include "sluice.replicas" .) -}}
{{- if and (gt $replicas 1) (not $redis) -}}
{{- fail (printf "sluice: replicaCount is %d but no Redis is configured. Each replica's in-process limiter counts only its own requests, so %d replicas would let up to %d times each endpoint's limit reach the API. Set redis.url or redis.existingSecret (every replica then shares the permits in Redis), or set replicaCount: 1." $replicas $replicas $replicas) -}}
{{- end -}}
{{- if and $v.autoscaling.enabled (not $redis) -}}
{{- fail "sluice: autoscaling.enabled needs Redis: replicas added by the HorizontalPodAutoscaler would each count only their own requests. Set redis.url or redis.existingSecret." -}}
{{- end -}}
{{- if and $v.autoscaling.enabled (gt (int $v.autoscaling.minReplicas) (int $v.autoscaling.maxReplicas)) -}}
{{- fail (printf "sluice: autoscaling.minReplicas (%d) is above autoscaling.maxReplicas (%d)" (int $v.autoscaling.minReplicas) (int $v.autoscaling.maxReplicas)) -}}
{{- end -}}
{{- $strategy := fromYaml (include "sluice.strategy" .) -}}
{{- if and (not $redis) (eq (default "RollingUpdate" $strategy.type) "RollingUpdate") (not (has (toString (dig "rollingUpdate" "maxSurge" "25%" $strategy)) (list "0" "0%"))) -}}
{{- fail "sluice: strategy is a RollingUpdate that surges, but no Redis is configured: during every rollout the old and the new pod would each run an in-process limiter, letting twice each endpoint's limit reach the API. Leave strategy empty (Recreate), set rollingUpdate.maxSurge: 0, or configure Redis." -}}
{{- end -}}
{{- $drainSeconds := div (add (int (dig "shutdown" "drainMs" 30000 $settings)) 999) 1000 -}}
{{- $graceSeconds := div (add (int (dig "shutdown" "graceMs" 60000 $settings)) 999) 1000 -}}
{{- if le (int $v.terminationGracePeriodSeconds) (add (int $v.shutdown.preStopSleepSeconds) $drainSeconds $graceSeconds) -}}
{{- fail (printf "sluice: terminationGracePeriodSeconds (%d) must exceed shutdown.preStopSleepSeconds (%d) + settings.shutdown.drainMs (%ds) + settings.shutdown.graceMs (%ds), or Kubernetes kills sluice while its queue and in-flight requests are still served" (int $v.terminationGracePeriodSeconds) (int $v.shutdown.preStopSleepSeconds) (int $drainSeconds) (int $graceSeconds)) -}}
{{- end -}}
{{- end -}}
{{- if and (eq $v.mode "sidecar") $v.podMonitor.enabled (not $v.podMonitor.selector) -}}
{{- fail "sluice: podMonitor.enabled needs podMonitor.selector: the matchLabels of your app's pods, which carry the sluice sidecar" -}}
{{- end -}}
{{- $sidecarPorts := list (int $v.sidecar.ports.proxy) (int $v.sidecar.ports.admin) (int $v.sidecar.ports.health) -}}
{{- if ne (len (uniq $sidecarPorts)) 3 -}}
{{- fail (printf "sluice: sidecar.ports.proxy, admin and health must differ (%d, %d, %d)" (int $v.sidecar.ports.proxy) (int $v.sidecar.ports.admin) (int $v.sidecar.ports.health)) -}}
{{- end -}}
{{- if eq $v.mode "sidecar" -}}
{{- if and (eq (include "sluice.sidecarAdminExposed" .) "true") (not $v.adminToken.existingSecret) -}}
{{- fail "sluice: the sidecar's admin port listens on the pod's IP (podMonitor.enabled or sidecar.exposeAdmin) without an admin token: anything that reaches the pod could read /status and /metrics. Put a token (16+ characters) in a Secret and name it in adminToken.existingSecret (the PodMonitor sends it), or keep the admin port on loopback (the probes use sidecar.ports.health)." -}}
{{- end -}}
{{- $kube := .Capabilities.KubeVersion.Version -}}
{{- if and $v.sidecar.native $kube (semverCompare "<1.29.0-0" $kube) -}}
{{- fail (printf "sluice: sidecar.native needs Kubernetes >= 1.29 (native sidecars: an init container with restartPolicy: Always), and this cluster is %s. Set sidecar.native: false and include \"sluice.sidecar\" under containers instead." $kube) -}}
{{- end -}}
{{- end -}}
{{- if eq (int $v.ports.proxy) (int $v.ports.admin) -}}
{{- fail (printf "sluice: ports.proxy and ports.admin are both %d" (int $v.ports.proxy)) -}}
{{- end -}}
{{- end -}}

{{/*
sha256 of what makes the Secrets sluice reads by env var at start (the Redis URL, the admin token):
redis.url itself for the chart's own Secret; for an existing Secret its name, key and
existingSecretsVersion, which whoever rotates it bumps. Never `lookup`: it is empty under
`helm template` (Argo CD, Flux), so a rotation would never roll the pods there (docs/deploy.md,
"Secrets that change"). Empty when no such Secret is used.
*/}}
{{- define "sluice.secretChecksum" -}}
{{- $parts := list -}}
{{- if .Values.redis.existingSecret -}}
{{- $parts = append $parts (printf "redis:%s/%s" .Values.redis.existingSecret .Values.redis.existingSecretKey) -}}
{{- else if .Values.redis.url -}}
{{- $parts = append $parts (printf "redis-url:%s" .Values.redis.url) -}}
{{- end -}}
{{- with .Values.adminToken.existingSecret -}}
{{- $parts = append $parts (printf "admin:%s/%s" . $.Values.adminToken.existingSecretKey) -}}
{{- end -}}
{{- if $parts -}}
{{- append $parts (printf "version:%s" (toString .Values.existingSecretsVersion)) | join "\n" | sha256sum -}}
{{- end -}}
{{- end -}}

{{/*
The pod template's annotations that roll the pods when what sluice reads at start changes: the
settings file and the Secrets above. The Deployment carries them; an app's pod template carrying
the sidecar includes "sluice.sidecarPodAnnotations" (_sidecar.tpl) for the same.
*/}}
{{- define "sluice.podChecksums" -}}
checksum/sluice-settings: {{ print (include "sluice.settingsDoc" .) (.Values.upstreams | default list | toYaml) | sha256sum }}
{{- with include "sluice.secretChecksum" . }}
checksum/sluice-secret: {{ . }}
{{- end }}
{{- end -}}

{{/* The Secrets named for stakater/Reloader (reloader.enabled): it restarts the pods when one changes. */}}
{{- define "sluice.reloaderSecrets" -}}
{{- $names := list -}}
{{- with .Values.redis.existingSecret }}{{ $names = append $names . }}{{ end -}}
{{- with .Values.adminToken.existingSecret }}{{ $names = append $names . }}{{ end -}}
{{- join "," $names -}}
{{- end -}}

{{/*
The job label of this release's series, which its alerting rules select (with its namespace): what
prometheus-operator gives when no relabeling sets it, the Service's name for the ServiceMonitor and
<namespace>/<name> for the PodMonitor; prometheusRule.job when set.
*/}}
{{- define "sluice.job" -}}
{{- if .Values.prometheusRule.job -}}
{{- .Values.prometheusRule.job -}}
{{- else if eq .Values.mode "sidecar" -}}
{{- printf "%s/%s" .Release.Namespace (include "sluice.fullname" .) -}}
{{- else -}}
{{- include "sluice.fullname" . -}}
{{- end -}}
{{- end -}}

{{/* Labels of the `helm test` pod: not the selector labels, so the Service never sends it traffic. */}}
{{- define "sluice.testSelectorLabels" -}}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: readyz-test
{{- end -}}

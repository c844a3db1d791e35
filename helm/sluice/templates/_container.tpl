{{/*
The sluice container, as one item of a pod's container list. One definition for both modes:
  (dict "ctx" <root-like context> "sidecar" false)  the Deployment's container
  (dict "ctx" <root-like context> "sidecar" true)   beside an app (see _sidecar.tpl)
Every SLUICE_* name used here is a real setting: test/deploy checks them against the settings schema.
*/}}
{{- define "sluice.container" -}}
{{- $ctx := .ctx -}}
{{- $v := $ctx.Values -}}
{{- $sidecar := .sidecar -}}
{{- $native := and $sidecar $v.sidecar.native -}}
{{- $ports := ternary $v.sidecar.ports $v.ports $sidecar -}}
{{- $preStop := int (ternary $v.sidecar.preStopSleepSeconds $v.shutdown.preStopSleepSeconds $sidecar) -}}
{{- $redisSecret := include "sluice.redisSecretName" $ctx -}}
{{- $adminExposed := or (not $sidecar) (eq (include "sluice.sidecarAdminExposed" $ctx) "true") -}}
- name: sluice
  image: {{ include "sluice.image" $ctx | quote }}
  imagePullPolicy: {{ $v.image.pullPolicy }}
  {{- if $native }}
  restartPolicy: Always
  {{- end }}
  {{- /* A sidecar lists only what listens beyond loopback: the health port, and the admin port when scraped (the PodMonitor names it). */}}
  {{- if not $sidecar }}
  ports:
    - name: proxy
      containerPort: {{ int $ports.proxy }}
      protocol: TCP
    - name: admin
      containerPort: {{ int $ports.admin }}
      protocol: TCP
  {{- else }}
  ports:
    - name: sluice-health
      containerPort: {{ int $ports.health }}
      protocol: TCP
    {{- if $adminExposed }}
    - name: sluice-admin
      containerPort: {{ int $ports.admin }}
      protocol: TCP
    {{- end }}
  {{- end }}
  env:
    - name: SLUICE_PORT
      value: {{ int $ports.proxy | quote }}
    - name: SLUICE_ADMIN_PORT
      value: {{ int $ports.admin | quote }}
    {{- /* Set here, whatever sluice's own defaults: the Service and the kubelet need 0.0.0.0, a sidecar's proxy needs loopback only. */}}
    - name: SLUICE_HOST
      value: {{ ternary "127.0.0.1" "0.0.0.0" $sidecar | quote }}
    - name: SLUICE_ADMIN_HOST
      value: {{ ternary "0.0.0.0" "127.0.0.1" $adminExposed | quote }}
    {{- if $sidecar }}
    {{- /* The probes' own port: /healthz and /readyz alone, on the pod IP the kubelet probes; the admin port stays on loopback. */}}
    - name: SLUICE_HEALTH_PORT
      value: {{ int $ports.health | quote }}
    - name: SLUICE_HEALTH_HOST
      value: "0.0.0.0"
    {{- end }}
    {{- with $v.upstream }}
    - name: SLUICE_UPSTREAM
      value: {{ . | quote }}
    {{- end }}
    {{- if $redisSecret }}
    - name: SLUICE_REDIS_URL
      valueFrom:
        secretKeyRef:
          name: {{ $redisSecret }}
          key: {{ include "sluice.redisSecretKey" $ctx }}
    {{- end }}
    {{- with $v.redis.sentinelPassword.existingSecret }}
    - name: SLUICE_REDIS_SENTINEL_PASSWORD
      valueFrom:
        secretKeyRef:
          name: {{ . }}
          key: {{ $v.redis.sentinelPassword.existingSecretKey }}
    {{- end }}
    {{- with $v.adminToken.existingSecret }}
    - name: SLUICE_ADMIN_TOKEN
      valueFrom:
        secretKeyRef:
          name: {{ . }}
          key: {{ $v.adminToken.existingSecretKey }}
    {{- end }}
    {{- if include "sluice.settingsDoc" $ctx }}
    - name: SLUICE_CONFIG
      value: {{ include "sluice.settingsPath" $ctx }}
    {{- end }}
    {{- if $v.apps.enabled }}
    - name: SLUICE_APPS_ENABLED
      value: "true"
    {{- if $v.apps.existingSecret }}
    - name: SLUICE_APPS_FILE
      value: {{ printf "%s/%s" (include "sluice.appsDir" $ctx) $v.apps.existingSecretKey | quote }}
    {{- end }}
    {{- end }}
    {{- if $v.credentials.inject }}
    - name: SLUICE_CREDENTIALS_INJECT
      value: "true"
    {{- end }}
    {{- if include "sluice.hasKeys" $ctx }}
    - name: SLUICE_CREDENTIALS_KEYS_DIR
      value: {{ include "sluice.keysDir" $ctx | quote }}
    {{- end }}
    {{- with $v.nodeOptions }}
    - name: NODE_OPTIONS
      value: {{ . | quote }}
    {{- end }}
    {{- with $v.extraEnv }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  {{- with $v.extraEnvFrom }}
  envFrom:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- range $probe := list (list "startupProbe" "/healthz" $v.probes.startup) (list "livenessProbe" "/healthz" $v.probes.liveness) (list "readinessProbe" "/readyz" $v.probes.readiness) }}
  {{ index $probe 0 }}:
    {{- /* httpGet: no process started per probe. A sidecar's probes go to its health port (healthPort), reachable on the pod IP. */}}
    httpGet:
      path: {{ index $probe 1 }}
      port: {{ int (ternary $ports.health $ports.admin $sidecar) }}
    {{- toYaml (index $probe 2) | nindent 4 }}
  {{- end }}
  {{- /* A native sidecar is stopped only after the app has exited: nothing to wait for. */}}
  {{- if and (gt $preStop 0) (not $native) }}
  lifecycle:
    preStop:
      exec:
        command: ["sleep", "{{ $preStop }}"]
  {{- end }}
  {{- with $v.resources }}
  resources:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $v.securityContext }}
  securityContext:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  volumeMounts:
    - name: sluice-tmp
      mountPath: /tmp
    {{- if include "sluice.settingsDoc" $ctx }}
    - name: sluice-settings
      mountPath: {{ include "sluice.settingsPath" $ctx | dir }}
      readOnly: true
    {{- end }}
    {{- /* Whole volumes, never subPath: a subPath mount is not refreshed when its Secret changes. */}}
    {{- if and $v.apps.enabled $v.apps.existingSecret }}
    - name: sluice-apps
      mountPath: {{ include "sluice.appsDir" $ctx }}
      readOnly: true
    {{- end }}
    {{- if include "sluice.hasKeys" $ctx }}
    - name: sluice-keys
      mountPath: {{ include "sluice.keysDir" $ctx }}
      readOnly: true
    {{- end }}
    {{- with $v.extraVolumeMounts }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
{{- end -}}

{{/* The volumes "sluice.container" mounts (and extraVolumes), as items of a pod's volume list. */}}
{{- define "sluice.volumes" -}}
- name: sluice-tmp
  emptyDir:
    sizeLimit: 16Mi
{{- if include "sluice.settingsDoc" . }}
- name: sluice-settings
  configMap:
    name: {{ include "sluice.fullname" . }}-settings
{{- end }}
{{- if and .Values.apps.enabled .Values.apps.existingSecret }}
- name: sluice-apps
  secret:
    secretName: {{ .Values.apps.existingSecret }}
    items:
      - key: {{ .Values.apps.existingSecretKey }}
        path: {{ .Values.apps.existingSecretKey }}
    {{- /* 0440 (288) with the chart's fsGroup; 0444 (292) in an app's pod, whose fsGroup the chart does not set: mounted in sluice's container only (docs/deploy.md, "Sidecar"). Decimal: YAML readers disagree on 0-prefixed octal. */}}
    defaultMode: {{ include "sluice.secretFileMode" . }}
{{- end }}
{{- if include "sluice.hasKeys" . }}
{{- /* One file per organisation (its id), from every Secret named: sluice reads the directory (README "Apps"). */}}
- name: sluice-keys
  projected:
    defaultMode: {{ include "sluice.secretFileMode" . }}
    sources:
      {{- with .Values.credentials.existingSecret }}
      - secret:
          name: {{ . }}
      {{- end }}
      {{- range .Values.credentials.orgKeys }}
      - secret:
          name: {{ .secretName }}
          items:
            - key: {{ .secretKey | default "apiKey" }}
              path: {{ .org | quote }}
      {{- end }}
      {{- /* Another upstream's keys as <name>.<instance>: a name a Secret key and a file may both have (docs/upstreams.md, "Credentials"). */}}
      {{- range $u := .Values.upstreams }}
      {{- range $u.keys }}
      - secret:
          name: {{ .secretName }}
          items:
            - key: {{ .secretKey | default "apiKey" }}
              path: {{ printf "%s.%s" $u.name (toString .instance) | quote }}
      {{- end }}
      {{- end }}
{{- end }}
{{- with .Values.extraVolumes }}
{{ toYaml . }}
{{- end }}
{{- end -}}

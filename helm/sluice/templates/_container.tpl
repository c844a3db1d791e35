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
- name: sluice
  image: {{ include "sluice.image" $ctx | quote }}
  imagePullPolicy: {{ $v.image.pullPolicy }}
  {{- if $native }}
  restartPolicy: Always
  {{- end }}
  ports:
    - name: {{ ternary "sluice-proxy" "proxy" $sidecar }}
      containerPort: {{ int $ports.proxy }}
      protocol: TCP
    - name: {{ ternary "sluice-admin" "admin" $sidecar }}
      containerPort: {{ int $ports.admin }}
      protocol: TCP
  env:
    - name: SLUICE_PORT
      value: {{ int $ports.proxy | quote }}
    - name: SLUICE_ADMIN_PORT
      value: {{ int $ports.admin | quote }}
    {{- if $sidecar }}
    - name: SLUICE_HOST
      value: {{ $v.sidecar.listenHost | quote }}
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
    {{- if $v.settings }}
    - name: SLUICE_CONFIG
      value: {{ include "sluice.settingsPath" $ctx }}
    {{- end }}
    {{- with $v.extraEnv }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  {{- with $v.extraEnvFrom }}
  envFrom:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  startupProbe:
    httpGet:
      path: /healthz
      port: {{ int $ports.admin }}
    {{- toYaml $v.probes.startup | nindent 4 }}
  livenessProbe:
    httpGet:
      path: /healthz
      port: {{ int $ports.admin }}
    {{- toYaml $v.probes.liveness | nindent 4 }}
  readinessProbe:
    httpGet:
      path: /readyz
      port: {{ int $ports.admin }}
    {{- toYaml $v.probes.readiness | nindent 4 }}
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
    {{- if $v.settings }}
    - name: sluice-settings
      mountPath: {{ include "sluice.settingsPath" $ctx | dir }}
      readOnly: true
    {{- end }}
{{- end -}}

{{/* The volumes "sluice.container" mounts, as items of a pod's volume list. */}}
{{- define "sluice.volumes" -}}
- name: sluice-tmp
  emptyDir:
    sizeLimit: 16Mi
{{- if .Values.settings }}
- name: sluice-settings
  configMap:
    name: {{ include "sluice.fullname" . }}-settings
{{- end }}
{{- end -}}

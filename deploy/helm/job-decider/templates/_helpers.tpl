{{/* The decider's name (also its app.kubernetes.io/name label). */}}
{{- define "jd.decider" -}}{{ .Values.name }}{{- end }}

{{/* The shim's name (also its app.kubernetes.io/name label). */}}
{{- define "jd.shim" -}}{{ .Values.name }}-shim{{- end }}

{{/* Labels every object carries. */}}
{{- define "jd.labels" -}}
app.kubernetes.io/part-of: job-decider
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end }}

{{/* An image reference: registry/repository:tag, the tag defaulting to appVersion. */}}
{{- define "jd.image" -}}
{{- $root := index . 0 -}}
{{- $img := index . 1 -}}
{{- printf "%s/%s:%s" $root.Values.images.registry $img.repository (default $root.Chart.AppVersion $img.tag) -}}
{{- end }}

{{/* The decider's slots: the value, else shim.workers x shim.shards (sidecar:
a replica may hold every shard, each with its workers) or 8 (service). */}}
{{- define "jd.slots" -}}
{{- if gt (int .Values.decider.maxConcurrentRequests) 0 -}}
{{ .Values.decider.maxConcurrentRequests }}
{{- else if eq .Values.layout "sidecar" -}}
{{ mul .Values.shim.workers (max 1 (int .Values.shim.shards)) }}
{{- else -}}
8
{{- end -}}
{{- end }}

{{/* Secret names for TLS. */}}
{{- define "jd.deciderSecret" -}}{{ default (printf "%s-tls" (include "jd.decider" .)) .Values.tls.deciderSecretName }}{{- end }}
{{- define "jd.shimSecret" -}}{{ default (printf "%s-tls" (include "jd.shim" .)) .Values.tls.shimSecretName }}{{- end }}

{{/* The restricted container securityContext both containers use. */}}
{{- define "jd.containerSecurityContext" -}}
readOnlyRootFilesystem: true
allowPrivilegeEscalation: false
capabilities:
  drop: ["ALL"]
{{- end }}

{{/* The pod securityContext; fsGroup lets both containers use the socket. */}}
{{- define "jd.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
{{- if eq .Values.layout "sidecar" }}
fsGroup: 65532
{{- end }}
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{/* The decider's memory and log flags, the same in both layouts. */}}
{{- define "jd.deciderArgs" -}}
- --metrics-addr=0.0.0.0:9090
- --log-format={{ .Values.decider.logFormat }}
- --max-request-bytes-in-flight={{ .Values.decider.maxRequestBytesInFlight }}
- --max-message-size={{ .Values.decider.maxMessageSize }}
- --max-concurrent-requests={{ include "jd.slots" . }}
{{- range .Values.decider.extraArgs }}
- {{ . | quote }}
{{- end }}
{{- end }}

{{/* The scraper's peer for NetworkPolicies. */}}
{{- define "jd.scraperPeer" -}}
- {{- with .Values.networkPolicy.scraper.namespaceSelector }}
  namespaceSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.networkPolicy.scraper.podSelector }}
  podSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end }}

{{- define "vram-exporter.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "vram-exporter.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if contains (include "vram-exporter.name" .) .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name (include "vram-exporter.name" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Selector labels: what the Service, the monitors and the DaemonSet select on. */}}
{{- define "vram-exporter.selectorLabels" -}}
app.kubernetes.io/name: {{ include "vram-exporter.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "vram-exporter.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "vram-exporter.selectorLabels" . }}
app.kubernetes.io/version: {{ default .Chart.AppVersion .Values.image.tag | trunc 63 | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "vram-exporter.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "vram-exporter.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "vram-exporter.webConfigSecret" -}}
{{- default (printf "%s-web-config" (include "vram-exporter.fullname" .)) .Values.webConfig.existingSecret -}}
{{- end -}}

{{- define "vram-exporter.scheme" -}}
{{- if and .Values.webConfig.enabled .Values.webConfig.tls }}https{{ else }}http{{ end -}}
{{- end -}}

{{/* runtimeClassName: the value if set, else the mode's. */}}
{{- define "vram-exporter.runtimeClassName" -}}
{{- if .Values.runtimeClassName -}}
{{- .Values.runtimeClassName -}}
{{- else if eq .Values.mode "gpuOperator" -}}
nvidia
{{- end -}}
{{- end -}}

{{/*
The relabelings both monitors share: the rules select job="vram_exporter" (a Service
name cannot hold "_"), and on-call reads the node name as instance in a page.
*/}}
{{- define "vram-exporter.relabelings" -}}
- action: replace
  targetLabel: job
  replacement: vram_exporter
- action: replace
  sourceLabels: [__meta_kubernetes_pod_node_name]
  targetLabel: instance
{{- with .extraRelabelings }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* The endpoint fields ServiceMonitor and PodMonitor share. */}}
{{- define "vram-exporter.endpoint" -}}
{{- $m := index . 1 -}}
{{- with index . 0 -}}
path: /metrics
scheme: {{ include "vram-exporter.scheme" . }}
interval: {{ $m.interval }}
scrapeTimeout: {{ $m.scrapeTimeout }}
{{- with $m.tlsConfig }}
tlsConfig:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $m.basicAuth }}
basicAuth:
  {{- toYaml . | nindent 2 }}
{{- end }}
relabelings:
  {{- include "vram-exporter.relabelings" $m | nindent 2 }}
{{- with $m.metricRelabelings }}
metricRelabelings:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}
{{- end -}}

{{/*
rdma-webhook.name: the base name of every object the chart makes (the
Deployment, the Service, the ServiceAccount, the cluster-wide roles and the
webhook configurations), the value `name`. Not the release's: the defaults
render what manifests/ applies, and `kubectl apply -k` and the chart name
the objects alike.
*/}}
{{- define "rdma-webhook.name" -}}
{{- .Values.name -}}
{{- end -}}

{{/* The selector labels: those of manifests/ (immutable on a Deployment). */}}
{{- define "rdma-webhook.selectorLabels" -}}
app.kubernetes.io/name: {{ include "rdma-webhook.name" . }}
{{- end -}}

{{/* Every object's labels: the selector's plus Helm's. */}}
{{- define "rdma-webhook.labels" -}}
{{ include "rdma-webhook.selectorLabels" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* The profiles ConfigMap's name: the chart's, or the existing one named. */}}
{{- define "rdma-webhook.profilesConfigMap" -}}
{{- if .Values.profiles.existingConfigMap -}}
{{- .Values.profiles.existingConfigMap -}}
{{- else -}}
{{- include "rdma-webhook.name" . }}-profiles
{{- end -}}
{{- end -}}

{{/* The TLS Secret's name in every mode. */}}
{{- define "rdma-webhook.tlsSecret" -}}
{{- .Values.certificates.secretName -}}
{{- end -}}

{{/* The Namespace/Certificate cert-manager's cainjector reads. */}}
{{- define "rdma-webhook.certManagerAnnotation" -}}
{{- if eq .Values.certificates.mode "cert-manager" }}
annotations:
  cert-manager.io/inject-ca-from: {{ .Release.Namespace }}/{{ include "rdma-webhook.name" . }}-serving-cert
{{- end }}
{{- end -}}

{{/*
rdma-webhook.clientConfig PATH: the Service, or webhook.url (a webhook
that runs outside the cluster: the test suite's on the host), and the
caBundle where the chart knows it (certificates.mode existing).
*/}}
{{- define "rdma-webhook.clientConfig" -}}
{{- $root := index . 0 -}}
{{- $path := index . 1 -}}
clientConfig:
  {{- if $root.Values.webhook.url }}
  url: {{ printf "%s%s" $root.Values.webhook.url $path | quote }}
  {{- else }}
  service:
    name: {{ include "rdma-webhook.name" $root }}
    namespace: {{ $root.Release.Namespace }}
    path: {{ $path }}
    port: 443
  {{- end }}
  {{- if and (eq $root.Values.certificates.mode "existing") $root.Values.certificates.caBundle }}
  caBundle: {{ $root.Values.certificates.caBundle }}
  {{- end }}
{{- end -}}

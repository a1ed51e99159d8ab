{{/* Names, labels and the image reference shared by the templates. */}}
{{- define "irc-proxy.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "irc-proxy.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "irc-proxy.selectorLabels" -}}
app.kubernetes.io/name: {{ include "irc-proxy.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "irc-proxy.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "irc-proxy.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "irc-proxy.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "irc-proxy.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "irc-proxy.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/* IRC_PROXY_* variables read from Secrets: the state/catalog database URL, AWS keys, and secretEnv. */}}
{{- define "irc-proxy.secretEnv" -}}
{{- with .Values.postgresql }}
{{- if .existingSecret }}
- name: IRC_PROXY_STATE__DATABASE_URL
  valueFrom:
    secretKeyRef: {name: {{ .existingSecret | quote }}, key: {{ .key | quote }}}
{{- range .localCatalogs }}
- name: {{ printf "IRC_PROXY_CATALOGS__%s__DATABASE_URL" (upper .) }}
  valueFrom:
    secretKeyRef: {name: {{ $.Values.postgresql.existingSecret | quote }}, key: {{ $.Values.postgresql.key | quote }}}
{{- end }}
{{- end }}
{{- end }}
{{- if .Values.aws.existingSecret }}
{{- range .Values.aws.glueCatalogs }}
- name: {{ printf "IRC_PROXY_CATALOGS__%s__ACCESS_KEY_ID" (upper .) }}
  valueFrom:
    secretKeyRef: {name: {{ $.Values.aws.existingSecret | quote }}, key: {{ $.Values.aws.accessKeyIdKey | quote }}}
- name: {{ printf "IRC_PROXY_CATALOGS__%s__SECRET_ACCESS_KEY" (upper .) }}
  valueFrom:
    secretKeyRef: {name: {{ $.Values.aws.existingSecret | quote }}, key: {{ $.Values.aws.secretAccessKeyKey | quote }}}
{{- end }}
{{- end }}
{{- range .Values.secretEnv }}
- name: {{ .name }}
  valueFrom:
    secretKeyRef: {name: {{ .secretName | quote }}, key: {{ .secretKey | quote }}}
{{- end }}
{{- end }}

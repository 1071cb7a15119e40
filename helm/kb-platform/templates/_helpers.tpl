{{/*
Helpers of the kb-platform chart. Component templates (gateway.yaml, documents.yaml, ...) stay
plain: they call these for names, labels, images, security contexts, probes and env wiring.
*/}}

{{- define "kb.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "kb.fullname" -}}
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

{{/* Name of one component's resources: (dict "root" $ "component" "gateway") */}}
{{- define "kb.componentName" -}}
{{- printf "%s-%s" (include "kb.fullname" .root | trunc 52 | trimSuffix "-") .component }}
{{- end }}

{{- define "kb.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ include "kb.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: kb-platform
{{- end }}

{{/* Labels of one component: (dict "root" $ "component" "gateway") */}}
{{- define "kb.componentLabels" -}}
{{ include "kb.labels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "kb.selectorLabels" -}}
app.kubernetes.io/name: {{ include "kb.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "kb.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "kb.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* Image of a component: (dict "root" $ "image" .Values.ingestion.image); image may be nil. */}}
{{- define "kb.image" -}}
{{- $img := .image | default dict }}
{{- $repository := $img.repository | default .root.Values.image.repository }}
{{- $tag := $img.tag | default .root.Values.image.tag | default .root.Chart.AppVersion }}
{{- printf "%s:%s" $repository (toString $tag) }}
{{- end }}

{{/* Service address host:port used in the *_GRPC_URL variables. */}}
{{- define "kb.grpcUrl" -}}
{{- printf "%s:%d" (include "kb.componentName" (dict "root" .root "component" .component)) (int64 .port) }}
{{- end }}

{{/* Secret holding DATABASE_URL and its key. */}}
{{- define "kb.databaseSecretName" -}}
{{- .Values.database.existingSecret | default (include "kb.fullname" .) }}
{{- end }}
{{- define "kb.databaseSecretKey" -}}
{{- if .Values.database.existingSecret }}{{ .Values.database.existingSecretKey }}{{ else }}DATABASE_URL{{ end }}
{{- end }}

{{/* DATABASE_URL from the Secret (gateway, documents). */}}
{{- define "kb.databaseEnv" -}}
- name: DATABASE_URL
  valueFrom:
    secretKeyRef:
      name: {{ include "kb.databaseSecretName" . }}
      key: {{ include "kb.databaseSecretKey" . }}
{{- end }}

{{/* Storage secrets (gateway, documents, ingestion): S3 keys with s3, the signing secret with local. */}}
{{- define "kb.storageEnv" -}}
{{- $s := .Values.storage }}
{{- if eq $s.driver "s3" }}
- name: S3_ACCESS_KEY
  valueFrom:
    secretKeyRef:
      name: {{ $s.s3.existingSecret | default (include "kb.fullname" .) }}
      key: {{ if $s.s3.existingSecret }}{{ $s.s3.accessKeyKey }}{{ else }}S3_ACCESS_KEY{{ end }}
- name: S3_SECRET_KEY
  valueFrom:
    secretKeyRef:
      name: {{ $s.s3.existingSecret | default (include "kb.fullname" .) }}
      key: {{ if $s.s3.existingSecret }}{{ $s.s3.secretKeyKey }}{{ else }}S3_SECRET_KEY{{ end }}
{{- else }}
- name: STORAGE_SIGNING_SECRET
  valueFrom:
    secretKeyRef:
      name: {{ $s.local.existingSecret | default (include "kb.fullname" .) }}
      key: {{ if $s.local.existingSecret }}{{ $s.local.existingSecretKey }}{{ else }}STORAGE_SIGNING_SECRET{{ end }}
{{- end }}
{{- end }}

{{/* Env of every container: the shared ConfigMap, plus extraEnv. */}}
{{- define "kb.envFrom" -}}
envFrom:
  - configMapRef:
      name: {{ include "kb.fullname" . }}
{{- end }}

{{/* Pod-level settings shared by every Deployment: (dict "root" $ "component" "gateway") */}}
{{- define "kb.podSpecCommon" -}}
serviceAccountName: {{ include "kb.serviceAccountName" .root }}
automountServiceAccountToken: false
securityContext:
  {{- toYaml .root.Values.podSecurityContext | nindent 2 }}
{{- with .root.Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .root.Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .root.Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .root.Values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/* The `metrics` container port (Prometheus /metrics): (dict "root" $ "component" "gateway"). */}}
{{- define "kb.metricsPort" -}}
{{- if .root.Values.metrics.enabled }}
- name: metrics
  containerPort: {{ (index .root.Values .component).metricsPort }}
  protocol: TCP
{{- end }}
{{- end }}

{{/* Pod metadata: labels, and checksums so that config or secret changes roll the pods. */}}
{{- define "kb.podMetadata" -}}
labels:
  {{- include "kb.selectorLabels" . | nindent 2 }}
  {{- with .root.Values.podLabels }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
annotations:
  {{- /* The Secret first: with missing values its error (no database) is the one reported. */}}
  checksum/secret: {{ include (print .root.Template.BasePath "/secret.yaml") .root | sha256sum }}
  checksum/config: {{ include (print .root.Template.BasePath "/configmap.yaml") .root | sha256sum }}
  {{- if and .root.Values.metrics.enabled .root.Values.metrics.podAnnotations }}
  prometheus.io/scrape: "true"
  prometheus.io/port: {{ (index .root.Values .component).metricsPort | quote }}
  prometheus.io/path: /metrics
  {{- end }}
  {{- with .podAnnotations }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- end }}

{{/* Native gRPC probes on a port (grpc.health.v1, overall status). Startup allows 150 s for
migrations and opening stores. */}}
{{- define "kb.grpcProbes" -}}
startupProbe:
  grpc:
    port: {{ . }}
  periodSeconds: 5
  failureThreshold: 30
livenessProbe:
  grpc:
    port: {{ . }}
  periodSeconds: 10
  timeoutSeconds: 5
  failureThreshold: 3
readinessProbe:
  grpc:
    port: {{ . }}
  periodSeconds: 5
  timeoutSeconds: 3
  failureThreshold: 2
{{- end }}

{{/* /tmp emptyDir volume and its mount (read-only root filesystem). */}}
{{- define "kb.tmpVolume" -}}
- name: tmp
  emptyDir:
    sizeLimit: {{ .Values.tmpSizeLimit }}
{{- with .Values.extraVolumes }}
{{ toYaml . }}
{{- end }}
{{- end }}
{{- define "kb.tmpVolumeMount" -}}
- name: tmp
  mountPath: /tmp
{{- with .Values.extraVolumeMounts }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* The local driver's shared volume (gateway, documents, ingestion), only with driver=local. */}}
{{- define "kb.objectsVolume" -}}
{{- if eq .Values.storage.driver "local" }}
- name: objects
  persistentVolumeClaim:
    claimName: {{ required "storage.local.existingClaim (a ReadWriteMany PVC) is required with storage.driver=local" .Values.storage.local.existingClaim }}
{{- end }}
{{- end }}
{{- define "kb.objectsVolumeMount" -}}
{{- if eq .Values.storage.driver "local" }}
- name: objects
  mountPath: {{ .Values.storage.local.dir }}
{{- end }}
{{- end }}

{{/* Container settings shared by every service container. */}}
{{- define "kb.containerCommon" -}}
imagePullPolicy: {{ .Values.image.pullPolicy }}
securityContext:
  {{- toYaml .Values.securityContext | nindent 2 }}
{{- include "kb.envFrom" . | nindent 0 }}
{{- end }}

{{- /* Model-provider and Qdrant API keys (LLM_API_KEY, EMBEDDINGS_API_KEY, RERANK_API_KEY,
QDRANT_API_KEY) from the chart's Secret, never the ConfigMap. `optional: true`: a key left empty
in values is absent from the Secret, and the variable is then unset in the pod (no key sent).
Usage: include "kb.providerKeyEnv" (dict "root" . "names" (list "LLM_API_KEY")) */ -}}
{{- define "kb.providerKeyEnv" -}}
{{- $root := .root -}}
{{- range .names }}
- name: {{ . }}
  valueFrom:
    secretKeyRef:
      name: {{ include "kb.fullname" $root }}
      key: {{ . }}
      optional: true
{{- end }}
{{- end }}

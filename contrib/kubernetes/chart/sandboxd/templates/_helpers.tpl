{{/* The release's objects are named for the release, as helm users expect. */}}
{{- define "sandboxd.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Selector labels: fixed for the life of the DaemonSet (a selector cannot change). */}}
{{- define "sandboxd.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "sandboxd.labels" -}}
{{ include "sandboxd.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "sandboxd.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end -}}

{{/* The node selector: the user's, and the gVisor label when runsc is wanted. */}}
{{- define "sandboxd.nodeSelector" -}}
{{- $sel := deepCopy (.Values.nodeSelector | default dict) -}}
{{- if has "runsc" .Values.runtimes -}}
{{- $sel = merge $sel .Values.runscNodeSelector -}}
{{- end -}}
{{- with $sel }}
{{- toYaml . }}
{{- end -}}
{{- end -}}

{{/* The E2B gateway's Service, and the host names it answers for: the Service's own names and e2b.allowHosts. */}}
{{- define "sandboxd.e2bName" -}}
{{- printf "%s-e2b" (include "sandboxd.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "sandboxd.e2bHosts" -}}
{{- $n := include "sandboxd.e2bName" . -}}
{{- $ns := .Release.Namespace -}}
{{- toYaml (concat (list $n (printf "%s.%s" $n $ns) (printf "%s.%s.svc" $n $ns) (printf "%s.%s.svc.cluster.local" $n $ns)) .Values.e2b.allowHosts) -}}
{{- end -}}

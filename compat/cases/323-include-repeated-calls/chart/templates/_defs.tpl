{{- define "n" }}{{ .Values.val }}{{ end -}}
{{- define "rnd" }}{{ randAlphaNum 12 }}{{ end -}}
{{- define "ctx" }}{{ .context.Values.val }}-{{ .suffix }}{{ end -}}
{{- define "tn" }}{{ .Template.Name }}{{ end -}}
{{- define "merged" }}{{ $d := dict }}{{ $_ := merge $d .a .b }}{{ toJson $d }}{{ end -}}
{{- define "setter" }}{{ $_ := set .Values "count" (add1 (.Values.count | default 0)) }}{{ .Values.count }}{{ end -}}
{{- define "lk" }}{{ .k }}{{ end -}}
{{- define "outer" }}{{ include "n" . }}/{{ include "setter" . }}{{ end -}}

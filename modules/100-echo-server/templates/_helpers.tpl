{{- define "echo.labels" -}}
app.kubernetes.io/name: echo-server
app.kubernetes.io/managed-by: antiopa
{{- end -}}

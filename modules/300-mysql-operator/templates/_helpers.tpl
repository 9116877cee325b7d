{{- define "mysql.labels" -}}
app.kubernetes.io/name: mysql
app.kubernetes.io/instance: {{ .name }}
mysql.otus.homework/instance: {{ .name }}
{{- end }}

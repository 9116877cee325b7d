{{ define "inc" }}
first
{{ .Values.x.y }}
{{ end }}
{{ define "bad" }}
{{ end }}
{{ end }}

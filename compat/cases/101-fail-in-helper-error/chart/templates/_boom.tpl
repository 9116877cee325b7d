{{ define "boom" }}
  {{ fail "boom in helper" }}
{{ end }}
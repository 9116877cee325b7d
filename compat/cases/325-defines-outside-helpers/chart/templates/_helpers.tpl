{{- define "over" }}_helpers.tpl{{ end -}}
{{- define "upper-wins" }}_helpers.tpl{{ end -}}
{{- define "r/templates/c-named.yaml" }}kind: FromTheDefine{{ end -}}

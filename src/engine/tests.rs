//! Data-driven execution tests. Every expected output or error text in
//! `testdata/exec_cases.json` was produced by the real helm v3.17.3 from a
//! throw-away chart `c` (release `x`): output cases render the template as
//! `define "T"` (so the text is returned as `include` sees it, before
//! Helm's `<no value>` stripping), error cases render it as
//! `templates/t.yaml`. Parse errors are compared after Helm's
//! `cleanupParseError` rewrite, which is all helm shows of them.
//!
//! Sprig is another module; the few Sprig functions the cases use are
//! small stand-ins here with Sprig's behaviour for these inputs.

use std::rc::Rc;

use super::funcs::{Env, FuncDef, FuncMap, FuncResult, Param};
use super::value::{Entries, Map, MapKind, Value};
use super::{Templates, gofmt};

fn json_to_value(j: &serde_json::Value, top: bool) -> Value {
    match j {
        serde_json::Value::Null => Value::Nil,
        serde_json::Value::Bool(b) => Value::Bool(*b),
        serde_json::Value::Number(n) => Value::Float(n.as_f64().unwrap_or(0.0)),
        serde_json::Value::String(s) => Value::str(s),
        serde_json::Value::Array(a) => {
            Value::list(a.iter().map(|x| json_to_value(x, false)).collect())
        }
        serde_json::Value::Object(o) => {
            let e: Entries = o
                .iter()
                .map(|(k, v)| (super::value::Key::from(k.as_str()), json_to_value(v, false)))
                .collect();
            Value::Map(Rc::new(Map::new(
                if top { MapKind::Values } else { MapKind::Any },
                e,
            )))
        }
    }
}

fn quote(_: &Env, a: &[Value]) -> FuncResult {
    let parts: Vec<String> = a
        .iter()
        .filter(|v| !v.is_nil())
        .map(|v| match v {
            Value::Str(s) => gofmt::quote(s),
            other => gofmt::quote(&gofmt::to_string_v(other)),
        })
        .collect();
    Ok(Value::string(parts.join(" ")))
}
fn list(_: &Env, a: &[Value]) -> FuncResult {
    Ok(Value::list(a.to_vec()))
}
fn add(_: &Env, a: &[Value]) -> FuncResult {
    let mut s = 0i64;
    for v in a {
        s += match v {
            Value::Int(i) | Value::I64(i) => *i,
            Value::Float(f) => *f as i64,
            _ => 0,
        };
    }
    Ok(Value::I64(s))
}
fn upper(_: &Env, a: &[Value]) -> FuncResult {
    Ok(Value::string(a[0].as_str().unwrap_or("").to_uppercase()))
}
fn fail(_: &Env, a: &[Value]) -> FuncResult {
    Err(format!(
        "HELM_ERR_START{}HELM_ERR_END",
        a[0].as_str().unwrap_or("")
    ))
}
fn nindent(_: &Env, a: &[Value]) -> FuncResult {
    let n = match a[0] {
        Value::Int(n) => n.max(0) as usize,
        _ => 0,
    };
    let pad = " ".repeat(n);
    Ok(Value::string(format!(
        "\n{pad}{}",
        a[1].as_str()
            .unwrap_or("")
            .replace('\n', &format!("\n{pad}"))
    )))
}

fn test_funcs() -> std::sync::Arc<FuncMap> {
    let mut m = FuncMap::default();
    super::funcs::builtins::register(&mut m);
    static DEFS: [FuncDef; 6] = [
        FuncDef {
            name: "quote",
            params: &[],
            variadic: Some(Param::Any),
            imp: quote,
        },
        FuncDef {
            name: "list",
            params: &[],
            variadic: Some(Param::Any),
            imp: list,
        },
        FuncDef {
            name: "add",
            params: &[],
            variadic: Some(Param::Any),
            imp: add,
        },
        FuncDef {
            name: "upper",
            params: &[Param::Str],
            variadic: None,
            imp: upper,
        },
        FuncDef {
            name: "fail",
            params: &[Param::Str],
            variadic: None,
            imp: fail,
        },
        FuncDef {
            name: "nindent",
            params: &[Param::Int, Param::Str],
            variadic: None,
            imp: nindent,
        },
    ];
    for d in &DEFS {
        m.insert(d);
    }
    std::sync::Arc::new(m)
}

fn map_of(pairs: Vec<(&str, Value)>, kind: MapKind) -> Value {
    Value::Map(Rc::new(Map::new(
        kind,
        pairs
            .into_iter()
            .map(|(k, v)| (super::value::Key::from(k), v))
            .collect(),
    )))
}

/// Helm's `cleanupParseError`.
fn cleanup_parse_error(file: &str, msg: &str) -> String {
    let tokens: Vec<&str> = msg.split(": ").collect();
    if tokens.len() == 1 {
        return format!("parse error in ({file}): {msg}");
    }
    format!(
        "parse error at ({}): {}",
        tokens[1],
        tokens[tokens.len() - 1]
    )
}

/// Helm's `cleanupExecError` (the `fail`/`required` rewrite).
fn cleanup_exec_error(msg: &str) -> String {
    let tokens: Vec<&str> = msg.splitn(3, ": ").collect();
    if let [_, loc, rest] = tokens[..]
        && let (Some(s), Some(e)) = (rest.find("HELM_ERR_START"), rest.rfind("HELM_ERR_END"))
    {
        return format!(
            "execution error at ({loc}): {}",
            &rest[s + "HELM_ERR_START".len()..e]
        );
    }
    msg.to_string()
}

/// Render one case as Helm would; returns output text or error text.
fn run(case: &serde_json::Value) -> Result<String, String> {
    let tmpl = case["tmpl"].as_str().unwrap_or("");
    let mode = case["mode"].as_str().unwrap_or("out");
    let mut files: Vec<(String, String)> = Vec::new();
    if let Some(o) = case["files"].as_object() {
        for (k, v) in o {
            files.push((
                format!("c/templates/{k}"),
                v.as_str().unwrap_or("").to_string(),
            ));
        }
    }
    if mode == "out" {
        files.push((
            "c/templates/_t.tpl".into(),
            format!("{{{{ define \"T\" }}}}{tmpl}{{{{ end }}}}"),
        ));
        files.push((
            "c/templates/t.yaml".into(),
            "out: {{ include \"T\" . }}\n".into(),
        ));
    } else {
        files.push(("c/templates/t.yaml".into(), tmpl.to_string()));
    }
    // Helm's parse order: same depth, reverse lexicographic.
    files.sort_by(|a, b| b.0.cmp(&a.0));
    let mut t = Templates::new(test_funcs());
    for (name, text) in &files {
        t.parse(name, text)
            .map_err(|e| cleanup_parse_error(name, &e.to_string()))?;
    }
    let data = map_of(
        vec![
            ("Values", json_to_value(&case["values"], true)),
            (
                "Release",
                map_of(
                    vec![
                        ("Name", Value::str("x")),
                        ("Namespace", Value::str("default")),
                    ],
                    MapKind::Any,
                ),
            ),
            (
                "Chart",
                map_of(vec![("Name", Value::str("c"))], MapKind::Any),
            ),
            (
                "Template",
                map_of(
                    vec![
                        ("Name", Value::str("c/templates/t.yaml")),
                        ("BasePath", Value::str("c/templates")),
                    ],
                    MapKind::Values,
                ),
            ),
        ],
        MapKind::Values,
    );
    let env = Env::reproducible(1, chrono::DateTime::UNIX_EPOCH.fixed_offset());
    let name = if mode == "out" {
        "T"
    } else {
        "c/templates/t.yaml"
    };
    let out = t
        .execute(name, &data, &env)
        .map_err(|e| cleanup_exec_error(&e.to_string()))?;
    Ok(out)
}

#[test]
fn exec_cases_match_helm() {
    let cases: serde_json::Value = serde_json::from_str(include_str!("testdata/exec_cases.json"))
        .unwrap_or(serde_json::Value::Null);
    let mut failures = Vec::new();
    let all = cases.as_array().cloned().unwrap_or_default();
    assert!(all.len() > 50);
    for case in &all {
        let name = case["name"].as_str().unwrap_or("?");
        let got = run(case);
        let want = match case.get("error") {
            Some(e) => Err(e.as_str().unwrap_or("").to_string()),
            None => Ok(case["out"].as_str().unwrap_or("").to_string()),
        };
        if got != want {
            failures.push(format!("{name}:\n   got {got:?}\n  want {want:?}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn empty_define_does_not_replace() {
    let mut t = Templates::new(test_funcs());
    let env = Env::new();
    assert!(t.parse("a", "{{ define \"x\" }}A{{ end }}").is_ok());
    assert!(t.parse("b", "{{ define \"x\" }}  {{ end }}").is_ok());
    assert_eq!(t.execute("x", &Value::Nil, &env).ok().as_deref(), Some("A"));
    assert!(t.parse("c", "{{ define \"x\" }}C{{ end }}").is_ok());
    assert_eq!(t.execute("x", &Value::Nil, &env).ok().as_deref(), Some("C"));
    // An empty definition does not replace another empty one either.
    assert!(
        t.parse(
            "d",
            "{{ define \"y\" }}{{ end }}{{ define \"z\" }}Z{{ end }}"
        )
        .is_ok()
    );
    assert!(t.parse("e", "{{ define \"y\" }} {{ end }}").is_ok());
    assert_eq!(t.execute("y", &Value::Nil, &env).ok().as_deref(), Some(""));
    assert_eq!(t.execute("x", &Value::Nil, &env).ok().as_deref(), Some("C"));
    assert!(t.contains("c"));
    assert!(!t.contains("zzz"));
}

#[test]
fn include_recursion_limit() {
    // The evaluator grows its stack on demand; a small thread stack is enough.
    let r = std::thread::Builder::new()
        .stack_size(256 << 10)
        .spawn(|| {
            let mut t = Templates::new(test_funcs());
            t.parse(
                "f",
                "{{ define \"r\" }}{{ include \"r\" . }}{{ end }}{{ include \"r\" . }}",
            )
            .map_err(|e| e.to_string())?;
            t.execute("f", &Value::Nil, &Env::new())
                .map_err(|e| e.to_string())
        })
        .map(|h| h.join());
    let msg = match r {
        Ok(Ok(Err(m))) => m,
        _ => String::new(),
    };
    assert!(
        msg.ends_with("error calling include: rendering template has a nested reference name: r: unable to execute template"),
        "{}",
        &msg[msg.len().saturating_sub(300)..]
    );
}

#[test]
fn error_fields_for_chart_layer() {
    let mut t = Templates::new(test_funcs());
    assert!(
        t.parse(
            "c/templates/_h.tpl",
            "{{ define \"f\" }}\n {{ fail \"boom\" }}{{ end }}"
        )
        .is_ok()
    );
    assert!(
        t.parse("c/templates/t.yaml", "x: {{ include \"f\" . }}")
            .is_ok()
    );
    let e = t
        .execute("c/templates/t.yaml", &Value::Nil, &Env::new())
        .err();
    let e = e.unwrap_or_else(|| super::Error::other(String::new()));
    assert!(e.is_exec());
    assert_eq!(e.file.as_deref(), Some("c/templates/t.yaml"));
    assert_eq!((e.line, e.col), (Some(1), Some(6)));
    assert_eq!(e.func_name.as_deref(), Some("fail"));
    assert_eq!(
        e.func_msg.as_deref(),
        Some("HELM_ERR_STARTboomHELM_ERR_END")
    );
}

/// Sprig v3.3.0's and Helm's function names, for parse-only checks.
const OTHER_FUNCS: &[&str] = &[
    "hello",
    "ago",
    "date",
    "date_in_zone",
    "date_modify",
    "dateInZone",
    "dateModify",
    "duration",
    "durationRound",
    "htmlDate",
    "htmlDateInZone",
    "must_date_modify",
    "mustDateModify",
    "mustToDate",
    "now",
    "toDate",
    "unixEpoch",
    "abbrev",
    "abbrevboth",
    "trunc",
    "trim",
    "upper",
    "lower",
    "title",
    "untitle",
    "substr",
    "repeat",
    "trimall",
    "trimAll",
    "trimSuffix",
    "trimPrefix",
    "nospace",
    "initials",
    "randAlphaNum",
    "randAlpha",
    "randAscii",
    "randNumeric",
    "swapcase",
    "shuffle",
    "snakecase",
    "camelcase",
    "kebabcase",
    "wrap",
    "wrapWith",
    "contains",
    "hasPrefix",
    "hasSuffix",
    "quote",
    "squote",
    "cat",
    "indent",
    "nindent",
    "replace",
    "plural",
    "sha1sum",
    "sha256sum",
    "sha512sum",
    "adler32sum",
    "toString",
    "atoi",
    "int64",
    "int",
    "float64",
    "seq",
    "toDecimal",
    "split",
    "splitList",
    "splitn",
    "toStrings",
    "until",
    "untilStep",
    "add1",
    "add",
    "sub",
    "div",
    "mod",
    "mul",
    "randInt",
    "add1f",
    "addf",
    "subf",
    "divf",
    "mulf",
    "biggest",
    "max",
    "min",
    "maxf",
    "minf",
    "ceil",
    "floor",
    "round",
    "join",
    "sortAlpha",
    "default",
    "empty",
    "coalesce",
    "all",
    "any",
    "compact",
    "mustCompact",
    "fromJson",
    "toJson",
    "toPrettyJson",
    "toRawJson",
    "mustFromJson",
    "mustToJson",
    "mustToPrettyJson",
    "mustToRawJson",
    "ternary",
    "deepCopy",
    "mustDeepCopy",
    "typeOf",
    "typeIs",
    "typeIsLike",
    "kindOf",
    "kindIs",
    "deepEqual",
    "env",
    "expandenv",
    "getHostByName",
    "base",
    "dir",
    "clean",
    "ext",
    "isAbs",
    "osBase",
    "osClean",
    "osDir",
    "osExt",
    "osIsAbs",
    "b64enc",
    "b64dec",
    "b32enc",
    "b32dec",
    "tuple",
    "list",
    "dict",
    "get",
    "set",
    "unset",
    "hasKey",
    "pluck",
    "keys",
    "pick",
    "omit",
    "merge",
    "mergeOverwrite",
    "mustMerge",
    "mustMergeOverwrite",
    "values",
    "append",
    "mustAppend",
    "prepend",
    "mustPrepend",
    "first",
    "mustFirst",
    "rest",
    "mustRest",
    "last",
    "mustLast",
    "initial",
    "mustInitial",
    "reverse",
    "mustReverse",
    "uniq",
    "mustUniq",
    "without",
    "mustWithout",
    "has",
    "mustHas",
    "slice",
    "mustSlice",
    "concat",
    "dig",
    "chunk",
    "mustChunk",
    "bcrypt",
    "htpasswd",
    "genPrivateKey",
    "derivePassword",
    "buildCustomCert",
    "genCA",
    "genCAWithKey",
    "genSelfSignedCert",
    "genSelfSignedCertWithKey",
    "genSignedCert",
    "genSignedCertWithKey",
    "encryptAES",
    "decryptAES",
    "randBytes",
    "uuidv4",
    "semver",
    "semverCompare",
    "fail",
    "regexMatch",
    "mustRegexMatch",
    "regexFindAll",
    "mustRegexFindAll",
    "regexFind",
    "mustRegexFind",
    "regexReplaceAll",
    "mustRegexReplaceAll",
    "regexReplaceAllLiteral",
    "mustRegexReplaceAllLiteral",
    "regexSplit",
    "mustRegexSplit",
    "regexQuoteMeta",
    "urlParse",
    "urlJoin",
    "toToml",
    "fromToml",
    "toYaml",
    "toYamlPretty",
    "fromYaml",
    "fromYamlArray",
    "fromJsonArray",
    "required",
    "lookup",
];

fn stub(_: &Env, _: &[Value]) -> FuncResult {
    Ok(Value::Nil)
}

/// Every template of the compatibility corpus parses (helm renders them
/// all). Run with `ANTIOPA_CORPUS=/work/shared/corpus cargo test -- --ignored`.
#[test]
#[ignore = "needs the shared corpus (ANTIOPA_CORPUS); tests/integration/corpus.rs covers it end to end"]
fn corpus_templates_parse() {
    let Ok(root) = std::env::var("ANTIOPA_CORPUS") else {
        return;
    };
    let mut m = FuncMap::default();
    super::funcs::builtins::register(&mut m);
    for n in OTHER_FUNCS {
        m.insert(Box::leak(Box::new(FuncDef {
            name: n,
            params: &[],
            variadic: Some(Param::Any),
            imp: stub,
        })));
    }
    let funcs = std::sync::Arc::new(m);
    let mut files = Vec::new();
    let mut stack = vec![std::path::PathBuf::from(root).join("charts")];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.to_string_lossy().contains("/templates/") {
                files.push(p);
            }
        }
    }
    let texts: Vec<(String, String)> = files
        .iter()
        .filter_map(|f| {
            Some((
                f.to_string_lossy().into_owned(),
                std::fs::read_to_string(f).ok()?,
            ))
        })
        .collect();
    let bytes: usize = texts.iter().map(|(_, t)| t.len()).sum();
    let mut failures = Vec::new();
    // Parsing only (the files are read first); the best of a few rounds,
    // as a throughput figure for parser work.
    let mut best = std::time::Duration::MAX;
    for _ in 0..5 {
        failures.clear();
        let start = std::time::Instant::now();
        for (name, text) in &texts {
            let mut t = Templates::new(funcs.clone());
            if let Err(e) = t.parse(name, text) {
                failures.push(e.to_string());
            }
        }
        best = best.min(start.elapsed());
    }
    eprintln!(
        "parsed {} files, {bytes} bytes in {best:?} ({:.1} ns/byte)",
        files.len(),
        best.as_nanos() as f64 / bytes as f64
    );
    assert!(files.len() > 100);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn deep_nesting_does_not_overflow() {
    // Parsing and evaluation grow the stack on demand (dropping the tree
    // recurses too, hence 1 MiB rather than less).
    let r = std::thread::Builder::new()
        .stack_size(1 << 20)
        .spawn(|| {
            let depth = 2000;
            let parens = format!("{}1{}", "(".repeat(depth), ")".repeat(depth));
            let ifs = format!(
                "{}x{}",
                "{{ if 1 }}".repeat(depth),
                "{{ end }}".repeat(depth)
            );
            let mut t = Templates::new(test_funcs());
            t.parse("d", &format!("{{{{ {parens} }}}}{ifs}"))
                .map_err(|e| e.to_string())?;
            t.execute("d", &Value::Nil, &Env::new())
                .map_err(|e| e.to_string())
        })
        .map(|h| h.join());
    assert!(matches!(r, Ok(Ok(Ok(ref s))) if s == "1x"), "{r:?}");
}

/// Rough throughput check of parse + execute on a chart-like template.
/// Run with `cargo test --release --lib engine::tests::bench -- --ignored --nocapture`.
#[test]
#[ignore = "throughput probe, meaningful only in --release; prints timings, asserts nothing new"]
fn bench_exec() {
    let helpers = r#"{{- define "c.name" -}}{{ default .Chart.Name .Values.nameOverride | printf "%s" }}{{- end }}
{{- define "c.labels" -}}
app.kubernetes.io/name: {{ include "c.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}"#;
    let body = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "c.name" . }}
  labels:
    {{- include "c.labels" . | nindent 4 }}
spec:
  replicas: {{ .Values.replicas }}
  template:
    spec:
      containers:
      {{- range $i, $c := .Values.containers }}
        - name: {{ $c.name | quote }}
          image: "{{ $c.image }}:{{ $c.tag | default "latest" }}"
          {{- with $c.env }}
          env:
          {{- range $k, $v := . }}
            - name: {{ $k }}
              value: {{ $v | quote }}
          {{- end }}
          {{- end }}
          {{- if and $c.ports (gt (len $c.ports) 0) }}
          ports:
          {{- range $c.ports }}
            - containerPort: {{ . }}
          {{- end }}
          {{- end }}
      {{- end }}
"#;
    fn default(_: &Env, a: &[Value]) -> FuncResult {
        Ok(if a[1].truthy() {
            a[1].clone()
        } else {
            a[0].clone()
        })
    }
    let funcs = {
        let mut m = (*test_funcs()).clone();
        m.insert(&FuncDef {
            name: "default",
            params: &[Param::Any, Param::Any],
            variadic: None,
            imp: default,
        });
        std::sync::Arc::new(m)
    };
    let values: serde_json::Value = serde_json::json!({
        "replicas": 3,
        "containers": (0..10).map(|i| serde_json::json!({
            "name": format!("c{i}"), "image": "nginx", "env": {"A": "1", "B": "2", "C": "3"}, "ports": [80, 443]
        })).collect::<Vec<_>>()
    });
    let data = map_of(
        vec![
            ("Values", json_to_value(&values, true)),
            (
                "Release",
                map_of(vec![("Name", Value::str("rel"))], MapKind::Any),
            ),
            (
                "Chart",
                map_of(vec![("Name", Value::str("chart"))], MapKind::Any),
            ),
        ],
        MapKind::Values,
    );
    let env = Env::new();
    let n = 2000;
    let start = std::time::Instant::now();
    let mut total = 0;
    for _ in 0..n {
        let mut t = Templates::new(funcs.clone());
        assert!(t.parse("c/templates/_helpers.tpl", helpers).is_ok());
        assert!(t.parse("c/templates/deploy.yaml", body).is_ok());
        total += t
            .execute("c/templates/deploy.yaml", &data, &env)
            .map(|s| s.len())
            .unwrap_or(0);
    }
    let el = start.elapsed();
    eprintln!(
        "{n} parse+execute in {el:?} ({:?} each), {total} bytes",
        el / n
    );
    let mut t = Templates::new(funcs.clone());
    assert!(t.parse("c/templates/_helpers.tpl", helpers).is_ok());
    assert!(t.parse("c/templates/deploy.yaml", body).is_ok());
    let start = std::time::Instant::now();
    for _ in 0..n {
        total += t
            .execute("c/templates/deploy.yaml", &data, &env)
            .map(|s| s.len())
            .unwrap_or(0);
    }
    eprintln!(
        "{n} execute in {:?} ({:?} each), {total} bytes in all",
        start.elapsed(),
        start.elapsed() / n
    );
}

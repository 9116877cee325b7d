//! The functions Helm v3.17 adds to Sprig's (pkg/engine/funcs.go and
//! engine.initFunMap), as `helm template` has them: YAML/JSON conversion,
//! `required` and `fail` with Helm's error markers, `lookup` without a
//! cluster (always an empty map), `getHostByName` without `--enable-dns`
//! (always ""), and no `env`/`expandenv`. `include` and `tpl` are built
//! into the engine.

use std::rc::Rc;

use crate::chart::convert::{value_to_yaml, value_to_yaml_direct, yaml_to_value};
use crate::engine::funcs::sprig::json;
use crate::engine::{Entries, Env, FuncDef, FuncMap, FuncResult, Key, Map, MapKind, Param, Value};
use crate::yaml::Yaml;

/// Helm wraps `required`/`fail` messages in these markers so that its error
/// clean-up can find the message inside Go's error chain.
pub const WARN_START: &str = "HELM_ERR_START";
pub const WARN_END: &str = "HELM_ERR_END";

/// Go's `warnWrap`.
pub fn warn_wrap(msg: &str) -> String {
    format!("{WARN_START}{msg}{WARN_END}")
}

/// The function table of a Helm render: Go builtins, Sprig, Helm's.
pub fn helm_func_map() -> FuncMap {
    let mut m = FuncMap::standard();
    register(&mut m);
    m
}

/// Add Helm's functions to `m` (replacing Sprig's `fail`, `toJson` and
/// `getHostByName`) and drop `env`/`expandenv`.
pub fn register(m: &mut FuncMap) {
    m.remove("env");
    m.remove("expandenv");
    const DEFS: &[FuncDef] = &[
        FuncDef {
            name: "toYaml",
            params: &[Param::Any],
            variadic: None,
            imp: to_yaml,
        },
        FuncDef {
            name: "toYamlPretty",
            params: &[Param::Any],
            variadic: None,
            imp: to_yaml_pretty,
        },
        FuncDef {
            name: "fromYaml",
            params: &[Param::Str],
            variadic: None,
            imp: from_yaml,
        },
        FuncDef {
            name: "fromYamlArray",
            params: &[Param::Str],
            variadic: None,
            imp: from_yaml_array,
        },
        FuncDef {
            name: "toJson",
            params: &[Param::Any],
            variadic: None,
            imp: to_json,
        },
        FuncDef {
            name: "toToml",
            params: &[Param::Any],
            variadic: None,
            imp: to_toml,
        },
        FuncDef {
            name: "fromToml",
            params: &[Param::RawStr],
            variadic: None,
            imp: from_toml,
        },
        FuncDef {
            name: "fromJson",
            params: &[Param::Str],
            variadic: None,
            imp: from_json,
        },
        FuncDef {
            name: "fromJsonArray",
            params: &[Param::Str],
            variadic: None,
            imp: from_json_array,
        },
        FuncDef {
            name: "required",
            params: &[Param::Str, Param::Any],
            variadic: None,
            imp: required,
        },
        FuncDef {
            name: "fail",
            params: &[Param::Str],
            variadic: None,
            imp: fail,
        },
        FuncDef {
            name: "lookup",
            params: &[Param::Str, Param::Str, Param::Str, Param::Str],
            variadic: None,
            imp: lookup,
        },
        FuncDef {
            name: "getHostByName",
            params: &[Param::Str],
            variadic: None,
            imp: get_host_by_name,
        },
    ];
    for d in DEFS {
        m.insert(d);
    }
}

fn str_arg(args: &[Value]) -> &str {
    args.first().and_then(Value::as_str).unwrap_or_default()
}

fn trim_newline(mut s: String) -> String {
    if s.ends_with('\n') {
        s.pop();
    }
    s
}

/// `toYaml`: sigs.k8s.io/yaml.Marshal without the final newline; "" when
/// the value cannot be marshalled.
fn to_yaml(_: &Env, args: &[Value]) -> FuncResult {
    let y = args.first().map(value_to_yaml).unwrap_or(Ok(Yaml::Null));
    Ok(Value::string(match y {
        // sigs.k8s.io/yaml turns the value's JSON into YAML by parsing it
        // with go-yaml, which refuses more than 10000 nested collections.
        Ok(y) if !deeper_than(&y, GO_YAML_MAX_DEPTH) => trim_newline(crate::yaml::to_yaml(&y)),
        _ => String::new(),
    }))
}

/// go-yaml v2's `max_depth`: "exceeded max depth of 10000".
const GO_YAML_MAX_DEPTH: usize = 10000;

/// Whether `y` nests more than `limit` collections (an empty one counts).
/// Stops descending past the limit. A loop over a stack of its own, not
/// recursion: the values it checks are the deep ones, and the caller's
/// thread may have a small stack.
fn deeper_than(y: &Yaml, limit: usize) -> bool {
    let mut todo: Vec<(&Yaml, usize)> = vec![(y, limit)];
    while let Some((y, limit)) = todo.pop() {
        let children: Box<dyn Iterator<Item = &Yaml>> = match y {
            Yaml::Seq(items) => Box::new(items.iter()),
            Yaml::Map(m) => Box::new(m.values()),
            _ => continue,
        };
        if limit == 0 {
            return true;
        }
        todo.extend(children.map(|c| (c, limit - 1)));
    }
    false
}

/// `toYamlPretty`: go-yaml v3's encoder with indent 2.
fn to_yaml_pretty(_: &Env, args: &[Value]) -> FuncResult {
    let y = args
        .first()
        .map(value_to_yaml_direct)
        .unwrap_or(Ok(Yaml::Null));
    Ok(Value::string(match y {
        Ok(y) => trim_newline(crate::yaml::to_yaml_pretty(&y)),
        Err(_) => String::new(),
    }))
}

/// encoding/json's error for a document of the wrong top-level type.
fn type_error(doc: &Yaml, target: &str) -> String {
    let what = match doc {
        Yaml::Null => "null",
        Yaml::Bool(_) => "bool",
        Yaml::Int(_) | Yaml::Float(_) => "number",
        Yaml::Str(_) => "string",
        Yaml::Seq(_) => "array",
        Yaml::Map(_) => "object",
    };
    format!("json: cannot unmarshal {what} into Go value of type {target}")
}

fn new_map(entries: Entries) -> Value {
    Value::Map(Rc::new(Map::new(MapKind::Any, entries)))
}

fn error_map(msg: String) -> Value {
    let mut e = Entries::new();
    e.insert(Key::from("Error"), Value::string(msg));
    new_map(e)
}

/// `fromYaml`: a map; errors go into the `Error` key, as Helm does.
fn from_yaml(_: &Env, args: &[Value]) -> FuncResult {
    Ok(match crate::yaml::from_yaml(str_arg(args)) {
        Ok(Yaml::Null) => new_map(Entries::new()),
        Ok(y @ Yaml::Map(_)) => yaml_to_value(&y),
        Ok(other) => error_map(format!(
            "error unmarshaling JSON: while decoding JSON: {}",
            type_error(&other, "map[string]interface {}")
        )),
        Err(e) => error_map(e.to_string()),
    })
}

/// `fromYamlArray`: a list; an error becomes the only element.
fn from_yaml_array(_: &Env, args: &[Value]) -> FuncResult {
    Ok(match crate::yaml::from_yaml(str_arg(args)) {
        Ok(Yaml::Null) => Value::list(Vec::new()),
        Ok(y @ Yaml::Seq(_)) => yaml_to_value(&y),
        Ok(other) => Value::list(vec![Value::string(format!(
            "error unmarshaling JSON: while decoding JSON: {}",
            type_error(&other, "[]interface {}")
        ))]),
        Err(e) => Value::list(vec![Value::string(e.to_string())]),
    })
}

/// `toJson`: encoding/json.Marshal (HTML-escaped); "" on failure.
fn to_json(_: &Env, args: &[Value]) -> FuncResult {
    // Helm's toJSON is `json.Marshal` of the value itself, not of its YAML
    // round trip (which `toYaml` takes): -0.0 stays `-0`, a struct's fields
    // keep their declaration order, invalid bytes of a Go string become
    // `\ufffd`, and a cycle is an error ("").
    let v = args.first().cloned().unwrap_or(Value::Nil);
    Ok(Value::string(
        crate::engine::funcs::sprig::json::to_json(&v, true, "").unwrap_or_default(),
    ))
}

/// `toToml`: BurntSushi/toml's encoder on the value itself (float64s stay
/// floats); its error text when the value has no TOML form.
fn to_toml(_: &Env, args: &[Value]) -> FuncResult {
    let y = args
        .first()
        .map(value_to_yaml_direct)
        .unwrap_or(Ok(Yaml::Null));
    Ok(Value::string(match y {
        Ok(y) => crate::yaml::to_toml(&y),
        Err(e) => e.to_string(),
    }))
}

/// `fromToml`: a map; parse errors go into the `Error` key. The argument's
/// raw bytes go to the decoder (which has its own text for invalid UTF-8);
/// a panic inside the decoder is a template error, as in Go.
fn from_toml(_: &Env, args: &[Value]) -> FuncResult {
    let input = args.first().and_then(Value::go_bytes).unwrap_or_default();
    Ok(match crate::yaml::from_toml(input) {
        Ok(m) => crate::chart::convert::mapping_to_value(&m, MapKind::Any),
        Err(crate::yaml::FromTomlError::Parse(e)) => error_map(e),
        Err(crate::yaml::FromTomlError::Panic(e)) => return Err(e),
    })
}

/// `fromJson`: a map; errors (Go's json texts, from Sprig's decoder) go
/// into the `Error` key.
fn from_json(_: &Env, args: &[Value]) -> FuncResult {
    Ok(match json::from_json(str_arg(args)) {
        Ok(Value::Nil) => new_map(Entries::new()),
        Ok(v @ Value::Map(_)) => v,
        Ok(other) => error_map(format!(
            "json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
            json::json_kind(&other)
        )),
        Err(e) => error_map(e),
    })
}

/// `fromJsonArray`: a list; an error becomes the only element.
fn from_json_array(_: &Env, args: &[Value]) -> FuncResult {
    Ok(match json::from_json(str_arg(args)) {
        Ok(Value::Nil) => Value::list(Vec::new()),
        Ok(v @ Value::List(_)) => v,
        Ok(other) => Value::list(vec![Value::string(format!(
            "json: cannot unmarshal {} into Go value of type []interface {{}}",
            json::json_kind(&other)
        ))]),
        Err(e) => Value::list(vec![Value::string(e)]),
    })
}

/// `required`: fails on nil and on the empty string.
fn required(_: &Env, args: &[Value]) -> FuncResult {
    let warn = str_arg(args);
    let val = args.get(1).cloned().unwrap_or_default();
    match &val {
        Value::Nil => Err(warn_wrap(warn)),
        Value::Str(s) if s.is_empty() => Err(warn_wrap(warn)),
        _ => Ok(val),
    }
}

/// Helm's `fail`, which replaces Sprig's.
fn fail(_: &Env, args: &[Value]) -> FuncResult {
    Err(warn_wrap(str_arg(args)))
}

/// `lookup apiVersion kind namespace name`: from the cluster when the
/// render was given one ([`crate::chart::lookup`]), else an empty map, as
/// in `helm template`.
fn lookup(env: &Env, args: &[Value]) -> FuncResult {
    // What the cluster holds is no function of the arguments.
    env.mark_impure();
    let Some(provider) = crate::chart::lookup::current() else {
        return Ok(new_map(Entries::new()));
    };
    let arg = |i: usize| match args.get(i) {
        Some(Value::Str(s)) => s.to_string(),
        Some(v) => crate::engine::gofmt::to_string_v(v),
        None => String::new(),
    };
    let found = provider.lookup(&arg(0), &arg(1), &arg(2), &arg(3))?;
    // The API server's JSON, read as Go's unstructured content is.
    let text = serde_json::to_string(&found).map_err(|e| e.to_string())?;
    let yaml = crate::yaml::load(&text, crate::yaml::Numbers::Json).map_err(|e| e.0)?;
    // `map[string]interface {}` (`dig` takes it, as in Helm).
    Ok(match &yaml {
        crate::yaml::Yaml::Map(_) => crate::chart::convert::yaml_to_value(&yaml),
        _ => new_map(Entries::new()),
    })
}

/// `getHostByName` without `--enable-dns`: always "".
fn get_host_by_name(_: &Env, _: &[Value]) -> FuncResult {
    Ok(Value::str(""))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::gofmt::to_string_v;

    fn call(name: &str, args: &[Value]) -> FuncResult {
        let mut m = FuncMap::default();
        register(&mut m);
        let f = m.get(name).map(|d| d.imp).unwrap_or(lookup);
        f(&Env::new(), args)
    }

    #[test]
    fn json_is_go_encoding_json() {
        // helm: toJson (dict "a" "<b>&" "n" 1000000.0) → {"a":"\u003cb\u003e\u0026","n":1000000}
        let mut e = Entries::new();
        e.insert(Key::from("a"), Value::str("<b>&"));
        e.insert(Key::from("n"), Value::Float(1e6));
        e.insert(Key::from("f"), Value::Float(1.5e-7));
        e.insert(Key::from("g"), Value::Float(1e21));
        let v = call("toJson", &[new_map(e)]).map(|v| to_string_v(&v));
        assert_eq!(
            v,
            Ok(r#"{"a":"\u003cb\u003e\u0026","f":1.5e-7,"g":1e+21,"n":1000000}"#.to_string())
        );
    }

    #[test]
    fn required_and_fail_wrap_their_message() {
        assert_eq!(
            call("required", &[Value::str("need x"), Value::Nil]).map(|_| ()),
            Err("HELM_ERR_STARTneed xHELM_ERR_END".into())
        );
        assert!(call("required", &[Value::str("m"), Value::str("")]).is_err());
        assert!(call("required", &[Value::str("m"), Value::Bool(false)]).is_ok());
        assert_eq!(
            call("fail", &[Value::str("boom")]).map(|_| ()),
            Err("HELM_ERR_STARTboomHELM_ERR_END".into())
        );
    }

    #[test]
    fn from_json_reports_errors_in_the_map() {
        let v = call("fromJson", &[Value::str("[1]")]).map(|v| to_string_v(&v));
        assert_eq!(v, Ok("map[Error:json: cannot unmarshal array into Go value of type map[string]interface {}]".into()));
        let v = call("fromJson", &[Value::str("{\"a\":1}")]).map(|v| to_string_v(&v));
        assert_eq!(v, Ok("map[a:1]".into()));
        let v = call("fromJsonArray", &[Value::str("[1,\"x\"]")]).map(|v| to_string_v(&v));
        assert_eq!(v, Ok("[1 x]".into()));
    }

    #[test]
    fn offline_functions() {
        assert_eq!(
            call(
                "lookup",
                &[
                    Value::str("v1"),
                    Value::str("Secret"),
                    Value::str("ns"),
                    Value::str("x")
                ]
            )
            .map(|v| to_string_v(&v)),
            Ok("map[]".into())
        );
        assert_eq!(
            call("getHostByName", &[Value::str("example.com")]).map(|v| to_string_v(&v)),
            Ok("".into())
        );
        let mut m = FuncMap::standard();
        register(&mut m);
        assert!(!m.contains("env") && !m.contains("expandenv"));
    }
}

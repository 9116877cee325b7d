//! Conversions between the YAML/JSON data model ([`Yaml`]) and template
//! values ([`Value`]).
//!
//! Reading: every number Helm reads from a YAML or JSON file is a Go
//! `float64`; integers only come from `--set` (Go `int64`). Maps become
//! `map[string]interface {}`, except the top of `.Values`, which Helm types
//! as `chartutil.Values`.
//!
//! Writing (`toYaml`, `toJson`, `.Files.AsConfig`): Helm marshals through
//! `encoding/json` first (sigs.k8s.io/yaml), so a float64 that JSON prints
//! without a fraction or exponent comes back as an integer, `[]byte` becomes
//! base64 text, and structs become their JSON fields.

use std::rc::Rc;

use base64::Engine as _;

use crate::engine::{Entries, Key, List, ListKind, Map, MapKind, Value};
use crate::yaml::{Mapping, Yaml};

/// A YAML node as a template value; maps are `map[string]interface {}`.
pub fn yaml_to_value(y: &Yaml) -> Value {
    match y {
        Yaml::Null => Value::Nil,
        Yaml::Bool(b) => Value::Bool(*b),
        Yaml::Int(i) => Value::I64(*i),
        Yaml::Float(f) => Value::Float(*f),
        Yaml::Str(s) => Value::str(s),
        Yaml::Seq(items) => Value::list(items.iter().map(yaml_to_value).collect()),
        Yaml::Map(m) => mapping_to_value(m, MapKind::Any),
    }
}

/// A mapping as a template map of the given Go type.
pub fn mapping_to_value(m: &Mapping, kind: MapKind) -> Value {
    let entries: Entries = m
        .iter()
        .map(|(k, v)| (Key::from(k.as_str()), yaml_to_value(v)))
        .collect();
    Value::Map(Rc::new(Map::new(kind, entries)))
}

/// A coalesced values tree as `.Values`: the top map is `chartutil.Values`.
pub fn values_to_value(m: &Mapping) -> Value {
    mapping_to_value(m, MapKind::Values)
}

/// Why a value cannot be marshalled (Go's `json: unsupported value`/type).
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum MarshalError {
    #[error("json: unsupported value: {0}")]
    UnsupportedValue(String),
    #[error("json: unsupported type: {0}")]
    UnsupportedType(String),
}

/// A template value as `encoding/json` followed by yaml.v2's decoding would
/// see it (the first half of sigs.k8s.io/yaml.Marshal): integral float64s
/// below 1e21 that fit an int64 become integers, `[]byte` becomes base64.
pub fn value_to_yaml(v: &Value) -> Result<Yaml, MarshalError> {
    to_yaml_model(v, true)
}

/// A template value as go-yaml v3 encodes it directly (Helm's
/// `toYamlPretty`, no JSON round trip): float64s stay floats.
pub fn value_to_yaml_direct(v: &Value) -> Result<Yaml, MarshalError> {
    to_yaml_model(v, false)
}

fn to_yaml_model(v: &Value, json_numbers: bool) -> Result<Yaml, MarshalError> {
    Ok(match v {
        Value::Nil => Yaml::Null,
        Value::Bool(b) => Yaml::Bool(*b),
        Value::Int(i) | Value::I64(i) => Yaml::Int(*i),
        Value::U64(u) => match i64::try_from(*u) {
            Ok(i) => Yaml::Int(i),
            Err(_) => Yaml::Float(*u as f64),
        },
        Value::Float(f) if json_numbers => float_to_yaml(*f)?,
        Value::Float(f) => Yaml::Float(*f),
        Value::Str(s) => Yaml::Str(s.to_string()),
        // A Go string that is not UTF-8: encoding/json (toYaml's first
        // step) turns each invalid byte into U+FFFD.
        Value::BStr(b) => Yaml::Str(crate::engine::value::go_lossy(b).into_owned()),
        Value::Bytes(b) => Yaml::Str(base64::engine::general_purpose::STANDARD.encode(b)),
        // Templates nest lists 10,000 deep (go-yaml's limit) and more: grow
        // the stack rather than overflow the caller's thread.
        // A nil slice: encoding/json's `null`.
        Value::List(l) if json_numbers && l.kind.is_nil() => Yaml::Null,
        Value::List(l) => Yaml::Seq(stacker::maybe_grow(64 * 1024, 1024 * 1024, || {
            l.items
                .iter()
                .map(|x| to_yaml_model(x, json_numbers))
                .collect::<Result<_, _>>()
        })?),
        Value::Map(m) => stacker::maybe_grow(64 * 1024, 1024 * 1024, || {
            let mut out = Mapping::new();
            for (k, item) in m.borrow().iter() {
                out.insert(k.to_string(), to_yaml_model(item, json_numbers)?);
            }
            Ok(Yaml::Map(out))
        })?,
        // A `MarshalJSON` result (semver versions, `time.Time`): what the
        // JSON round trip of toJson/toYaml sees; their `MarshalText`, which
        // go-yaml v3 uses, gives the same text.
        Value::Object(o) => match o.json_value().or_else(|| o.underlying()) {
            // …or a named slice or map type (`chartutil.VersionSet`,
            // `engine.files`): encoding/json sees the slice or map (a
            // file's bytes as base64).
            Some(v) => to_yaml_model(&v, json_numbers)?,
            // …or a struct (`.Chart`, `.Capabilities`): its fields (the
            // JSON round trip sorts them, as Go's toYaml does).
            None => match o.json_fields() {
                Some(fields) => {
                    let mut out = Mapping::new();
                    for (k, item) in fields {
                        out.insert(k.to_string(), to_yaml_model(&item, json_numbers)?);
                    }
                    Yaml::Map(out)
                }
                None => {
                    return Err(MarshalError::UnsupportedType(o.type_name().to_string()));
                }
            },
        },
    })
}

/// Go's `encoding/json` refuses NaN and infinities; a float it prints with
/// neither fraction nor exponent (|f| < 1e21, integral) reads back as an
/// integer when it fits one.
fn float_to_yaml(f: f64) -> Result<Yaml, MarshalError> {
    if !f.is_finite() {
        let mut s = String::new();
        crate::engine::gofmt::format_float(f, 'g', -1, &mut s);
        return Err(MarshalError::UnsupportedValue(s));
    }
    if let Some(i) = crate::gocompat::json::integral_float(f) {
        return Ok(Yaml::Int(i));
    }
    Ok(Yaml::Float(f))
}

/// A list of strings as Go's `[]string`.
pub fn str_list(items: impl IntoIterator<Item = String>) -> Value {
    Value::List(Rc::new(List {
        kind: ListKind::Str,
        items: items.into_iter().map(Value::from).collect(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_as_float64_and_set_values_as_int64() {
        assert_eq!(yaml_to_value(&Yaml::Float(8080.0)).type_name(), "float64");
        assert_eq!(yaml_to_value(&Yaml::Int(3)).type_name(), "int64");
    }

    #[test]
    fn top_of_values_is_chartutil_values_and_nested_maps_are_plain() {
        let mut inner = Mapping::new();
        inner.insert("b".into(), Yaml::Bool(true));
        let mut top = Mapping::new();
        top.insert("a".into(), Yaml::Map(inner));
        let v = values_to_value(&top);
        assert_eq!(v.type_name(), "chartutil.Values");
        let Value::Map(m) = &v else {
            panic!("not a map")
        };
        assert_eq!(
            m.get("a").map(|a| a.type_name().to_string()).as_deref(),
            Some("map[string]interface {}")
        );
    }

    #[test]
    fn marshal_turns_integral_floats_into_ints_like_json() {
        assert_eq!(value_to_yaml(&Value::Float(1e6)), Ok(Yaml::Int(1_000_000)));
        assert_eq!(value_to_yaml(&Value::Float(1.5)), Ok(Yaml::Float(1.5)));
        assert_eq!(value_to_yaml(&Value::Float(1e21)), Ok(Yaml::Float(1e21)));
        assert_eq!(value_to_yaml(&Value::Float(1e20)), Ok(Yaml::Float(1e20)));
        assert_eq!(
            value_to_yaml(&Value::Bytes(Rc::from(&b"hi"[..]))),
            Ok(Yaml::Str("aGk=".into()))
        );
        assert!(value_to_yaml(&Value::Float(f64::NAN)).is_err());
    }
}

//! The one place where values cross between the YAML model
//! (`crate::yaml::Yaml`, what Helm and the template engine use) and
//! `serde_json::Value` (what JSON patches, JSON Schema validation and hook
//! files use).
//!
//! Both are Go's JSON model after sigs.k8s.io/yaml: every number is a
//! float64. In JSON, integral floats that are exact in a float64 become
//! JSON integers, so `"type": "integer"` accepts `3` the way go-openapi's
//! `isFloatInt` rule does, and `json.Marshal(3.0)` prints `3` in both.

use crate::yaml::{self, Mapping, Yaml};
use serde_json::{Map, Value};

/// A values map (Go `utils.Values`, `map[string]interface{}`).
pub type Values = Map<String, Value>;

/// YAML → JSON (numbers by Go's rule: see [`crate::yaml::json::to_serde`]).
pub fn to_json(v: &Yaml) -> Value {
    crate::yaml::json::to_serde(v)
}

/// A YAML mapping → a JSON object.
pub fn map_to_json(m: &Mapping) -> Values {
    m.iter().map(|(k, v)| (k.clone(), to_json(v))).collect()
}

/// JSON → YAML: every number becomes a float64 again, as in Helm's values.
pub fn to_yaml(v: &Value) -> Yaml {
    match v {
        Value::Null => Yaml::Null,
        Value::Bool(b) => Yaml::Bool(*b),
        Value::Number(n) => Yaml::Float(n.as_f64().unwrap_or(0.0)),
        Value::String(s) => Yaml::Str(s.clone()),
        Value::Array(items) => Yaml::Seq(items.iter().map(to_yaml).collect()),
        Value::Object(m) => Yaml::Map(map_to_yaml(m)),
    }
}

/// A JSON object → a YAML mapping.
pub fn map_to_yaml(m: &Values) -> Mapping {
    m.iter().map(|(k, v)| (k.clone(), to_yaml(v))).collect()
}

/// `utils.NewValuesFromBytes`: sigs.k8s.io/yaml into `map[string]interface{}`
/// (a null document is an empty map). The error is the loader's text; callers
/// add addon-operator's "bad values data: …" context.
pub fn values_from_yaml(text: &str) -> Result<Values, yaml::LoadError> {
    yaml::from_yaml_map(text, "map[string]interface {}").map(|m| map_to_json(&m))
}

/// Any YAML document as JSON (sigs.k8s.io/yaml into `interface{}`).
pub fn value_from_yaml(text: &str) -> Result<Value, yaml::LoadError> {
    yaml::from_yaml(text).map(|v| to_json(&v))
}

/// Values as YAML text, the way sigs.k8s.io/yaml.Marshal writes them.
pub fn values_to_yaml(v: &Values) -> String {
    yaml::to_yaml(&Yaml::Map(map_to_yaml(v)))
}

/// Values as indented JSON (two spaces, keys sorted), for `antiopa module
/// values -o json`.
pub fn values_to_json(v: &Values) -> String {
    let mut s = serde_json::to_string_pretty(v).unwrap_or_else(|_| "{}".into());
    s.push('\n');
    s
}

/// The Go type name `%T` prints for a JSON value, for error texts.
pub fn go_type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(_) => "float64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

/// Go's `%v` of a float64 (`strconv.FormatFloat(f, 'g', -1, 64)`: the
/// shortest digits, exponent form when the exponent is < -4 or >= 6):
/// `10`, `0.5`, `1e+06`, `1e-05`.
pub fn go_float(f: f64) -> String {
    crate::gocompat::float::format_g(f, false)
}

/// Go's `%v` of a decoded JSON value: `[a b]`, `map[k:v]`, `<nil>`.
pub fn go_value(v: &Value) -> String {
    match v {
        Value::Null => "<nil>".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => go_float(n.as_f64().unwrap_or(0.0)),
        Value::String(s) => s.clone(),
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(go_value).collect();
            format!("[{}]", parts.join(" "))
        }
        Value::Object(m) => {
            let parts: Vec<String> = m
                .iter()
                .map(|(k, v)| format!("{k}:{}", go_value(v)))
                .collect();
            format!("map[{}]", parts.join(" "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_float_matches_fmt_v() {
        assert_eq!(go_float(10.0), "10");
        assert_eq!(go_float(0.5), "0.5");
        assert_eq!(go_float(1e21), "1e+21");
        assert_eq!(go_float(123456.0), "123456");
        assert_eq!(go_float(1234567.0), "1.234567e+06");
        assert_eq!(go_float(0.00001), "1e-05");
        assert_eq!(go_float(-2.5e-7), "-2.5e-07");
    }

    #[test]
    fn values_print_as_yaml_and_json() {
        let v = values_from_yaml("b: 1\na: {c: [x, 2.5]}\n").unwrap_or_default();
        assert_eq!(values_to_yaml(&v), "a:\n  c:\n  - x\n  - 2.5\nb: 1\n");
        assert_eq!(
            values_to_json(&v),
            "{\n  \"a\": {\n    \"c\": [\n      \"x\",\n      2.5\n    ]\n  },\n  \"b\": 1\n}\n"
        );
    }

    #[test]
    fn numbers_round_trip() {
        assert_eq!(to_json(&Yaml::Float(3.0)), serde_json::json!(3));
        assert_eq!(to_json(&Yaml::Float(1.5)), serde_json::json!(1.5));
        assert_eq!(to_yaml(&serde_json::json!(3)), Yaml::Float(3.0));
    }
}

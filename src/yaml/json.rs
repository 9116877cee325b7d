//! Go encoding/json's `json.Marshal` for the YAML data model (Helm's `toJson`
//! on loaded values): keys in byte order, HTML-safe string escaping, and
//! float64s in json's `'f'`/`'e'` layout.

use super::Yaml;
use super::emit::{RED_ZONE, STACK_SEGMENT};
use super::num::{format_g, format_json_float};

/// json.Marshal failed: NaN or ±Inf (`json: unsupported value: NaN`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("json: unsupported value: {0}")]
pub struct JsonError(pub String);

/// The value as a serde_json tree, numbers by Go's rule
/// ([`crate::gocompat::json::float_number`]): integral floats below int64's
/// limit are integers; NaN and ±Inf, which no JSON holds, are null (Helm's
/// loaders reject them before they get here).
pub fn to_serde(v: &Yaml) -> serde_json::Value {
    use serde_json::Value as J;
    match v {
        Yaml::Null => J::Null,
        Yaml::Bool(b) => J::Bool(*b),
        Yaml::Int(i) => J::from(*i),
        Yaml::Float(f) => crate::gocompat::json::float_number(*f).map_or(J::Null, J::Number),
        Yaml::Str(s) => J::String(s.clone()),
        // Deeply nested values: grow the stack, as the emitter does.
        Yaml::Seq(items) => J::Array(stacker::maybe_grow(RED_ZONE, STACK_SEGMENT, || {
            items.iter().map(to_serde).collect()
        })),
        Yaml::Map(m) => J::Object(stacker::maybe_grow(RED_ZONE, STACK_SEGMENT, || {
            m.iter().map(|(k, v)| (k.clone(), to_serde(v))).collect()
        })),
    }
}

/// `json.Marshal(v)` as text.
pub fn to_json(v: &Yaml) -> Result<String, JsonError> {
    let mut out = String::with_capacity(128);
    write_json(&mut out, v)?;
    Ok(out)
}

fn write_json(out: &mut String, v: &Yaml) -> Result<(), JsonError> {
    match v {
        Yaml::Null => out.push_str("null"),
        Yaml::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Yaml::Int(i) => out.push_str(&i.to_string()),
        Yaml::Float(f) => match format_json_float(*f) {
            Some(s) => out.push_str(&s),
            None => return Err(JsonError(format_g(*f, false))),
        },
        Yaml::Str(s) => write_json_string(out, s),
        Yaml::Seq(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                // Deeply nested values: grow the stack, as the emitter does.
                stacker::maybe_grow(RED_ZONE, STACK_SEGMENT, || write_json(out, item))?;
            }
            out.push(']');
        }
        Yaml::Map(m) => {
            out.push('{');
            for (i, (k, v)) in m.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json_string(out, k);
                out.push(':');
                stacker::maybe_grow(RED_ZONE, STACK_SEGMENT, || write_json(out, v))?;
            }
            out.push('}');
        }
    }
    Ok(())
}

/// encoding/json `appendString` with HTML escaping on.
pub fn write_json_string(out: &mut String, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || c == '<' || c == '>' || c == '&' => {
                let b = c as u32;
                out.push_str("\\u00");
                out.push(HEX[(b >> 4) as usize] as char);
                out.push(HEX[(b & 0xf) as usize] as char);
            }
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out.push('"');
}

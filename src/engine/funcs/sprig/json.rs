//! Go `encoding/json` for template values: the encoder behind `toJson`,
//! `toPrettyJson`, `toRawJson` (and Helm's `toJson`), and the decoder behind
//! `fromJson` with Go's syntax-error texts.
//!
//! Hand-written because the output must match Go byte for byte: `<`, `>`,
//! `&` escaped as `\u003c` … unless HTML escaping is off, U+2028/U+2029
//! always escaped, floats printed without an exponent between 1e-6 and 1e21
//! (`1e+21` and `1e-7` beyond), map keys in bytewise order, and
//! `MarshalIndent`'s layout (`"k": v`, empty `{}`/`[]` kept on one line).

use std::rc::Rc;

use crate::engine::value::{Entries, Value};

/// Encode `v` as Go's `json.Marshal` does (`escape_html` = true), as an
/// `Encoder` with `SetEscapeHTML(false)` does (false), and indented as
/// `json.MarshalIndent(v, "", indent)` when `indent` is not empty. The error
/// is Go's (`json: unsupported value: NaN`).
pub fn to_json(v: &Value, escape_html: bool, indent: &str) -> Result<String, String> {
    let mut out = String::new();
    encode(v, escape_html, indent, 0, &mut Vec::new(), &mut out)?;
    Ok(out)
}

fn newline(indent: &str, depth: usize, out: &mut String) {
    out.push('\n');
    for _ in 0..depth {
        out.push_str(indent);
    }
}

/// The identity of a map or slice, for cycle detection.
fn container_ptr(v: &Value) -> Option<*const ()> {
    match v {
        Value::List(l) => Some(Rc::as_ptr(l).cast()),
        Value::Map(m) => Some(m.id()),
        _ => None,
    }
}

fn encode(
    v: &Value,
    html: bool,
    indent: &str,
    depth: usize,
    ancestors: &mut Vec<*const ()>,
    out: &mut String,
) -> Result<(), String> {
    let Some(p) = container_ptr(v) else {
        return encode_inner(v, html, indent, depth, ancestors, out);
    };
    if ancestors.contains(&p) {
        // A map or slice containing itself (`set $d "self" $d`): Go detects
        // the pointer cycle (after 1000 levels) with this error.
        return Err(format!(
            "json: unsupported value: encountered a cycle via {}",
            v.type_name()
        ));
    }
    ancestors.push(p);
    // Values nested thousands deep: grow the stack rather than overflow it.
    let r = stacker::maybe_grow(64 * 1024, 1024 * 1024, || {
        encode_inner(v, html, indent, depth, ancestors, out)
    });
    ancestors.pop();
    r
}

fn encode_inner(
    v: &Value,
    html: bool,
    indent: &str,
    depth: usize,
    ancestors: &mut Vec<*const ()>,
    out: &mut String,
) -> Result<(), String> {
    match v {
        Value::Nil => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(i) | Value::I64(i) => out.push_str(&i.to_string()),
        Value::U64(u) => out.push_str(&u.to_string()),
        Value::Float(f) => encode_float(*f, out)?,
        Value::Str(s) => encode_string(s, html, out),
        Value::BStr(b) => {
            // encoding/json writes each invalid byte as `\ufffd`.
            out.push('"');
            for chunk in b.utf8_chunks() {
                encode_string_body(chunk.valid(), html, out);
                for _ in chunk.invalid() {
                    out.push_str("\\ufffd");
                }
            }
            out.push('"');
        }
        Value::Bytes(b) => {
            use base64::Engine;
            out.push('"');
            out.push_str(&base64::engine::general_purpose::STANDARD.encode(b));
            out.push('"');
        }
        Value::List(l) if l.kind.is_nil() => out.push_str("null"),
        Value::List(l) => {
            out.push('[');
            if l.items.is_empty() {
                out.push(']');
                return Ok(());
            }
            for (i, item) in l.items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                if !indent.is_empty() {
                    newline(indent, depth + 1, out);
                }
                encode(item, html, indent, depth + 1, ancestors, out)?;
            }
            if !indent.is_empty() {
                newline(indent, depth, out);
            }
            out.push(']');
        }
        Value::Map(m) => {
            let entries = m.borrow();
            let members = entries.iter().map(|(k, item)| (&**k, item));
            encode_members(members, html, indent, depth, ancestors, out)?;
        }
        Value::Object(o) => match o.json_value() {
            // Struct fields or a MarshalJSON result, as the object describes them.
            Some(jv) => encode(&jv, html, indent, depth, ancestors, out)?,
            // A struct: its fields in declaration order.
            None if o.json_fields().is_some() => {
                let fields = o.json_fields().unwrap_or_default();
                let members = fields.iter().map(|(k, item)| (*k, item));
                encode_members(members, html, indent, depth, ancestors, out)?;
            }
            // A named slice or map type (`chartutil.VersionSet`,
            // `engine.files`): encoding/json sees the slice or map.
            None if o.underlying().is_some() => {
                let u = o.underlying().unwrap_or(Value::Nil);
                encode(&u, html, indent, depth, ancestors, out)?
            }
            // What encoding/json cannot encode (`complex128`).
            None => return Err(format!("json: unsupported type: {}", o.type_name())),
        },
    }
    Ok(())
}

/// A JSON object of `members` in their order (a map's are sorted).
fn encode_members<'v>(
    members: impl Iterator<Item = (&'v str, &'v Value)>,
    html: bool,
    indent: &str,
    depth: usize,
    ancestors: &mut Vec<*const ()>,
    out: &mut String,
) -> Result<(), String> {
    out.push('{');
    let mut empty = true;
    for (i, (k, item)) in members.enumerate() {
        empty = false;
        if i > 0 {
            out.push(',');
        }
        if !indent.is_empty() {
            newline(indent, depth + 1, out);
        }
        encode_string(k, html, out);
        out.push(':');
        if !indent.is_empty() {
            out.push(' ');
        }
        encode(item, html, indent, depth + 1, ancestors, out)?;
    }
    if !indent.is_empty() && !empty {
        newline(indent, depth, out);
    }
    out.push('}');
    Ok(())
}

/// Go's `maxNestingDepth` for decoding.
const MAX_DECODE_DEPTH: usize = 10000;

/// Go's `floatEncoder` for float64.
fn encode_float(f: f64, out: &mut String) -> Result<(), String> {
    match crate::gocompat::float::format_json_float(f) {
        Some(s) => {
            out.push_str(&s);
            Ok(())
        }
        None => Err(format!(
            "json: unsupported value: {}",
            crate::gocompat::float::format_g(f, false)
        )),
    }
}

/// Go's `encodeState.string`.
fn encode_string(s: &str, html: bool, out: &mut String) {
    out.push('"');
    encode_string_body(s, html, out);
    out.push('"');
}

fn encode_string_body(s: &str, html: bool, out: &mut String) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\x08' => out.push_str("\\b"),
            '\x0c' => out.push_str("\\f"),
            '<' | '>' | '&' if html => {
                out.push_str("\\u00");
                out.push(HEX[(c as usize) >> 4] as char);
                out.push(HEX[(c as usize) & 0xf] as char);
            }
            c if (c as u32) < 0x20 => {
                out.push_str("\\u00");
                out.push(HEX[(c as usize) >> 4] as char);
                out.push(HEX[(c as usize) & 0xf] as char);
            }
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
}

/// Go's `json.Unmarshal` into an `interface {}`: objects become
/// `map[string]interface {}`, arrays `[]interface {}`, numbers `float64`.
/// Errors carry Go's text (`invalid character 'x' looking for beginning of
/// value`, `unexpected end of JSON input`).
pub fn from_json(s: &str) -> Result<Value, String> {
    let mut p = Parser {
        b: s.as_bytes(),
        pos: 0,
        depth: 0,
    };
    p.ws();
    let v = p.value()?;
    p.ws();
    if p.pos < p.b.len() {
        return Err(p.invalid("after top-level value"));
    }
    Ok(v)
}

/// The JSON kind of a decoded value as Go's `UnmarshalTypeError` names it
/// ("json: cannot unmarshal array into Go value of type map[string]interface
/// {}", which Helm's `fromJson` reports for non-objects).
pub fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Nil => "null",
        Value::Bool(_) => "bool",
        Value::Int(_) | Value::I64(_) | Value::U64(_) | Value::Float(_) => "number",
        Value::Str(_) | Value::BStr(_) | Value::Bytes(_) => "string",
        Value::List(_) => "array",
        Value::Map(_) | Value::Object(_) => "object",
    }
}

struct Parser<'a> {
    b: &'a [u8],
    pos: usize,
    depth: usize,
}

const EOF: &str = "unexpected end of JSON input";

/// Go's `quoteChar`.
fn quote_char(c: char) -> String {
    match c {
        '\'' => "'\\''".into(),
        '"' => "'\"'".into(),
        c => {
            let q = super::strings::go_quote(&c.to_string());
            format!("'{}'", &q[1..q.len() - 1])
        }
    }
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.pos).copied()
    }

    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\r' | b'\n') = self.peek() {
            self.pos += 1;
        }
    }

    /// The error for the character at `pos` in a state where the input may
    /// not end: Go's scanner feeds a space at end of input, so a truncated
    /// number, literal or escape reports `invalid character ' ' …`.
    fn invalid_at_eof_too(&self, context: &str) -> String {
        if self.pos >= self.b.len() {
            return format!("invalid character ' ' {context}");
        }
        self.invalid(context)
    }

    /// "invalid character X CONTEXT" for the character at `pos`, or the
    /// end-of-input error.
    fn invalid(&self, context: &str) -> String {
        // pos is always on a char boundary of the &str input.
        let rest = std::str::from_utf8(&self.b[self.pos..]).ok();
        match rest.and_then(|r| r.chars().next()) {
            Some(c) => format!("invalid character {} {context}", quote_char(c)),
            None => EOF.into(),
        }
    }

    fn value(&mut self) -> Result<Value, String> {
        match self.peek() {
            None => Err(EOF.into()),
            Some(b'{' | b'[') if self.depth >= MAX_DECODE_DEPTH => {
                Err(self.invalid("exceeded max depth"))
            }
            Some(b'{') => {
                self.depth += 1;
                let v = self.object();
                self.depth -= 1;
                v
            }
            Some(b'[') => {
                self.depth += 1;
                let v = self.array();
                self.depth -= 1;
                v
            }
            Some(b'"') => Ok(Value::string(self.string()?)),
            Some(b't') => self.literal("true", Value::Bool(true)),
            Some(b'f') => self.literal("false", Value::Bool(false)),
            Some(b'n') => self.literal("null", Value::Nil),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(_) => Err(self.invalid("looking for beginning of value")),
        }
    }

    fn literal(&mut self, word: &str, v: Value) -> Result<Value, String> {
        self.pos += 1;
        for expect in word.bytes().skip(1) {
            match self.peek() {
                Some(c) if c == expect => self.pos += 1,
                _ => {
                    return Err(self.invalid_at_eof_too(&format!(
                        "in literal {word} (expecting {})",
                        quote_char(expect as char)
                    )));
                }
            }
        }
        Ok(v)
    }

    fn number(&mut self) -> Result<Value, String> {
        let start = self.pos;
        if self.peek() == Some(b'-') {
            self.pos += 1;
            match self.peek() {
                Some(b'0'..=b'9') => {}
                _ => return Err(self.invalid_at_eof_too("in numeric literal")),
            }
        }
        if self.peek() == Some(b'0') {
            self.pos += 1;
        } else {
            while let Some(b'0'..=b'9') = self.peek() {
                self.pos += 1;
            }
        }
        if self.peek() == Some(b'.') {
            self.pos += 1;
            match self.peek() {
                Some(b'0'..=b'9') => {}
                _ => return Err(self.invalid_at_eof_too("after decimal point in numeric literal")),
            }
            while let Some(b'0'..=b'9') = self.peek() {
                self.pos += 1;
            }
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.pos += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.pos += 1;
            }
            match self.peek() {
                Some(b'0'..=b'9') => {}
                _ => return Err(self.invalid_at_eof_too("in exponent of numeric literal")),
            }
            while let Some(b'0'..=b'9') = self.peek() {
                self.pos += 1;
            }
        }
        let text = std::str::from_utf8(&self.b[start..self.pos]).unwrap_or("0");
        match text.parse::<f64>() {
            Ok(f) if f.is_finite() => Ok(Value::Float(f)),
            _ => Err(format!(
                "json: cannot unmarshal number {text} into Go value of type float64"
            )),
        }
    }

    fn string(&mut self) -> Result<String, String> {
        self.pos += 1; // opening quote
        let mut out = String::new();
        loop {
            let Some(c) = self.peek() else {
                return Err(EOF.into());
            };
            match c {
                b'"' => {
                    self.pos += 1;
                    return Ok(out);
                }
                b'\\' => {
                    self.pos += 1;
                    let Some(e) = self.peek() else {
                        return Err(self.invalid_at_eof_too("in string escape code"));
                    };
                    self.pos += 1;
                    match e {
                        b'"' => out.push('"'),
                        b'\\' => out.push('\\'),
                        b'/' => out.push('/'),
                        b'b' => out.push('\x08'),
                        b'f' => out.push('\x0c'),
                        b'n' => out.push('\n'),
                        b'r' => out.push('\r'),
                        b't' => out.push('\t'),
                        b'u' => {
                            let r = self.hex4()?;
                            if (0xd800..0xdc00).contains(&r) {
                                // A surrogate pair, if a low surrogate follows.
                                if self.b[self.pos..].starts_with(b"\\u") {
                                    let save = self.pos;
                                    self.pos += 2;
                                    let r2 = self.hex4()?;
                                    if (0xdc00..0xe000).contains(&r2) {
                                        let c = 0x10000 + ((r - 0xd800) << 10) + (r2 - 0xdc00);
                                        out.push(char::from_u32(c).unwrap_or('\u{fffd}'));
                                        continue;
                                    }
                                    self.pos = save;
                                }
                                out.push('\u{fffd}');
                            } else {
                                out.push(char::from_u32(r).unwrap_or('\u{fffd}'));
                            }
                        }
                        _ => {
                            self.pos -= 1;
                            return Err(self.invalid("in string escape code"));
                        }
                    }
                }
                c if c < 0x20 => return Err(self.invalid("in string literal")),
                _ => {
                    // Copy one UTF-8 character.
                    let rest = std::str::from_utf8(&self.b[self.pos..]).unwrap_or("");
                    match rest.chars().next() {
                        Some(ch) => {
                            out.push(ch);
                            self.pos += ch.len_utf8();
                        }
                        None => return Err(EOF.into()),
                    }
                }
            }
        }
    }

    fn hex4(&mut self) -> Result<u32, String> {
        let mut r = 0u32;
        for _ in 0..4 {
            match self.peek() {
                Some(c) if c.is_ascii_hexdigit() => {
                    r = r * 16 + (c as char).to_digit(16).unwrap_or(0);
                    self.pos += 1;
                }
                _ => return Err(self.invalid_at_eof_too("in \\u hexadecimal character escape")),
            }
        }
        Ok(r)
    }

    fn array(&mut self) -> Result<Value, String> {
        self.pos += 1;
        let mut items = Vec::new();
        self.ws();
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Ok(Value::list(items));
        }
        loop {
            self.ws();
            items.push(self.value()?);
            self.ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(Value::list(items));
                }
                None => return Err(EOF.into()),
                Some(_) => return Err(self.invalid("after array element")),
            }
        }
    }

    fn object(&mut self) -> Result<Value, String> {
        self.pos += 1;
        let mut entries = Entries::new();
        self.ws();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(Value::map(entries));
        }
        loop {
            self.ws();
            match self.peek() {
                Some(b'"') => {}
                None => return Err(EOF.into()),
                Some(_) => return Err(self.invalid("looking for beginning of object key string")),
            }
            let key = self.string()?;
            self.ws();
            match self.peek() {
                Some(b':') => self.pos += 1,
                None => return Err(EOF.into()),
                Some(_) => return Err(self.invalid("after object key")),
            }
            self.ws();
            let v = self.value()?;
            entries.insert(crate::engine::Key::from(key), v);
            self.ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(Value::map(entries));
                }
                None => return Err(EOF.into()),
                Some(_) => return Err(self.invalid("after object key:value pair")),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::gofmt::to_string_v;

    fn j(v: &Value) -> String {
        to_json(v, true, "").unwrap_or_else(|e| e)
    }

    #[test]
    fn floats_like_go() {
        assert_eq!(j(&Value::Float(1e21)), "1e+21");
        assert_eq!(j(&Value::Float(1e20)), "100000000000000000000");
        assert_eq!(j(&Value::Float(0.000001)), "0.000001");
        assert_eq!(j(&Value::Float(0.0000001)), "1e-7");
        assert_eq!(j(&Value::Float(-1.5)), "-1.5");
        assert_eq!(j(&Value::Float(0.0)), "0");
        assert_eq!(
            j(&Value::Float(f64::INFINITY)),
            "json: unsupported value: +Inf"
        );
    }

    #[test]
    fn strings_like_go() {
        assert_eq!(
            j(&Value::str("a<b>&\u{2028}\u{1}\x08\"\\")),
            r#""a\u003cb\u003e\u0026\u2028\u0001\b\"\\""#
        );
        assert_eq!(
            to_json(&Value::str("<\u{2029}"), false, "").unwrap_or_default(),
            "\"<\\u2029\""
        );
        assert_eq!(j(&Value::Bytes(Rc::from(&b"hi"[..]))), "\"aGk=\"");
    }

    #[test]
    fn decode_errors_like_go() {
        assert_eq!(from_json("").unwrap_err(), "unexpected end of JSON input");
        assert_eq!(from_json("{").unwrap_err(), "unexpected end of JSON input");
        assert_eq!(
            from_json("x").unwrap_err(),
            "invalid character 'x' looking for beginning of value"
        );
        assert_eq!(
            from_json("{a}").unwrap_err(),
            "invalid character 'a' looking for beginning of object key string"
        );
        assert_eq!(
            from_json("[1 2]").unwrap_err(),
            "invalid character '2' after array element"
        );
        assert_eq!(
            from_json("{\"a\" 1}").unwrap_err(),
            "invalid character '1' after object key"
        );
        assert_eq!(
            from_json("{\"a\":1 \"b\"}").unwrap_err(),
            "invalid character '\"' after object key:value pair"
        );
        assert_eq!(
            from_json("01").unwrap_err(),
            "invalid character '1' after top-level value"
        );
        // Go's scanner feeds a space at end of input.
        assert_eq!(
            from_json("tru").unwrap_err(),
            "invalid character ' ' in literal true (expecting 'e')"
        );
        assert_eq!(
            from_json("[1,]").unwrap_err(),
            "invalid character ']' looking for beginning of value"
        );
        assert_eq!(
            from_json(r#"{"a":1,}"#).unwrap_err(),
            "invalid character '}' looking for beginning of object key string"
        );
        assert_eq!(
            from_json("1.").unwrap_err(),
            "invalid character ' ' after decimal point in numeric literal"
        );
        assert_eq!(
            from_json("-").unwrap_err(),
            "invalid character ' ' in numeric literal"
        );
        assert_eq!(
            from_json("nul").unwrap_err(),
            "invalid character ' ' in literal null (expecting 'l')"
        );
        assert_eq!(
            from_json("nulx").unwrap_err(),
            "invalid character 'x' in literal null (expecting 'l')"
        );
        assert_eq!(
            from_json(r#""\u12""#).unwrap_err(),
            r#"invalid character '"' in \u hexadecimal character escape"#
        );
        assert_eq!(
            from_json(r#""\"#).unwrap_err(),
            "invalid character ' ' in string escape code"
        );
        assert_eq!(
            from_json("\"a").unwrap_err(),
            "unexpected end of JSON input"
        );
        assert_eq!(
            from_json(r#"{"a" : 1} x"#).unwrap_err(),
            "invalid character 'x' after top-level value"
        );
        assert_eq!(from_json(" ").unwrap_err(), "unexpected end of JSON input");
        assert_eq!(
            from_json("1e400").unwrap_err(),
            "json: cannot unmarshal number 1e400 into Go value of type float64"
        );
        let v = from_json(r#"["\ud83d\ude00", "\ud800", 1E2, -0, 0.5e-3]"#).unwrap_or_default();
        assert_eq!(
            to_json(&v, true, "").unwrap_or_default(),
            "[\"😀\",\"\u{fffd}\",100,-0,0.0005]"
        );
        assert_eq!(
            from_json("trux").unwrap_err(),
            "invalid character 'x' in literal true (expecting 'e')"
        );
        assert_eq!(
            from_json("\"\n\"").unwrap_err(),
            "invalid character '\\n' in string literal"
        );
        assert_eq!(
            from_json("-x").unwrap_err(),
            "invalid character 'x' in numeric literal"
        );
    }

    #[test]
    fn cycles_and_depth() {
        let m = Value::empty_map();
        if let Value::Map(inner) = &m {
            inner.insert("self", m.clone());
        }
        assert_eq!(
            to_json(&m, true, "").unwrap_err(),
            "json: unsupported value: encountered a cycle via map[string]interface {}"
        );
        if let Value::Map(inner) = &m {
            inner.remove("self");
        }
        // Go's nesting limit; run with a main-thread-sized stack.
        let t = std::thread::Builder::new().stack_size(64 << 20).spawn(|| {
            let deep = "[".repeat(10001);
            from_json(&deep).unwrap_err()
        });
        let msg = t.ok().and_then(|h| h.join().ok()).unwrap_or_default();
        assert_eq!(msg, "invalid character '[' exceeded max depth");
    }

    #[test]
    fn decode_values() {
        let v = from_json(r#" {"b": [1.5, "\u00e9\ud83d\ude00", false], "a": {"x": null}} "#)
            .unwrap_or_default();
        assert_eq!(to_string_v(&v), "map[a:map[x:<nil>] b:[1.5 é😀 false]]");
    }
}

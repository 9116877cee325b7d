//! The JSON documents gojsonschema works on: Go's `encoding/json` decoding
//! with `Decoder.UseNumber` (numbers keep their literal text, so `1.0` is
//! an integer for `checkJSONInteger` and limits compare as exact
//! rationals), Go's syntax-error texts (Helm prints them for a broken
//! `values.schema.json`), and `json.Marshal` for the `enum`/`const`
//! comparisons (`marshalWithoutNumber`).
//!
//! Hand-written rather than serde_json because serde_json keeps neither
//! the number literals nor Go's error texts, and accepts no trailing
//! garbage (Go's `Decoder.Decode` reads one value and ignores the rest).

use std::borrow::Cow;

use crate::engine::funcs::sprig::strings::go_quote;
use crate::yaml::json::write_json_string;

/// A decoded JSON value, borrowing its strings from the input where it
/// can. Objects are Go maps: the last of duplicate keys wins; they iterate
/// by key (Go ranges over maps in random order).
#[derive(Clone, Debug, PartialEq)]
pub enum J<'a> {
    Null,
    Bool(bool),
    /// A number's literal text (`json.Number`).
    Num(Cow<'a, str>),
    /// A float64 of the values (its literal would be Go's shortest form).
    Float(f64),
    /// An integer of the values.
    Int(i64),
    Str(Cow<'a, str>),
    Arr(Vec<J<'a>>),
    Obj(Obj<'a>),
}

/// A JSON object: its members sorted by key, each key once. Go decodes
/// into a map, where the last of duplicate keys wins and ranging is in
/// random order, so any fixed order will do; ours is a `BTreeMap`'s. A
/// sorted vector rather than a `BTreeMap`: schemas are mostly objects of
/// one to three members, for which a B-tree node allocates some 600 bytes
/// (vault's 48 KB schema became half a megabyte of nodes, every page of it
/// a page fault on the path to rendering).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Obj<'a>(Vec<(Cow<'a, str>, J<'a>)>);

impl<'a> Obj<'a> {
    pub fn new() -> Obj<'a> {
        Obj(Vec::new())
    }

    /// The object of `members` in document order.
    fn from_members(mut members: Vec<(Cow<'a, str>, J<'a>)>) -> Obj<'a> {
        if members.windows(2).all(|w| w[0].0 < w[1].0) {
            return Obj(members);
        }
        // Stable: of equal keys the last in the document stays last.
        members.sort_by(|a, b| a.0.cmp(&b.0));
        let mut out: Vec<(Cow<'a, str>, J<'a>)> = Vec::with_capacity(members.len());
        for (k, v) in members {
            match out.last_mut() {
                Some(last) if last.0 == k => last.1 = v,
                _ => out.push((k, v)),
            }
        }
        Obj(out)
    }

    pub fn get(&self, key: &str) -> Option<&J<'a>> {
        self.0
            .binary_search_by(|(k, _)| (**k).cmp(key))
            .ok()
            .map(|i| &self.0[i].1)
    }

    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The members by key.
    pub fn iter(&self) -> impl Iterator<Item = (&Cow<'a, str>, &J<'a>)> {
        self.into_iter()
    }

    pub fn keys(&self) -> impl Iterator<Item = &Cow<'a, str>> {
        self.0.iter().map(|(k, _)| k)
    }

    pub fn values(&self) -> impl Iterator<Item = &J<'a>> {
        self.0.iter().map(|(_, v)| v)
    }

    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut J<'a>> {
        self.0.iter_mut().map(|(_, v)| v)
    }

    /// The members by key, values to change.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (&Cow<'a, str>, &mut J<'a>)> {
        self.0.iter_mut().map(|(k, v)| (&*k, v))
    }

    /// Set `key` to `value`, replacing what it had.
    pub fn insert(&mut self, key: Cow<'a, str>, value: J<'a>) {
        match self.0.binary_search_by(|(k, _)| (**k).cmp(&*key)) {
            Ok(i) => self.0[i].1 = value,
            Err(i) => self.0.insert(i, (key, value)),
        }
    }
}

impl<'a> FromIterator<(Cow<'a, str>, J<'a>)> for Obj<'a> {
    fn from_iter<I: IntoIterator<Item = (Cow<'a, str>, J<'a>)>>(members: I) -> Obj<'a> {
        Obj::from_members(members.into_iter().collect())
    }
}

impl<'o, 'a> IntoIterator for &'o Obj<'a> {
    type Item = (&'o Cow<'a, str>, &'o J<'a>);
    type IntoIter = std::iter::Map<
        std::slice::Iter<'o, (Cow<'a, str>, J<'a>)>,
        fn(&'o (Cow<'a, str>, J<'a>)) -> (&'o Cow<'a, str>, &'o J<'a>),
    >;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter().map(|(k, v)| (k, v))
    }
}

/// Go's `maxNestingDepth` in encoding/json's scanner.
const MAX_DEPTH: usize = 10000;

/// What a decoded document contains, so that reference handling can be
/// skipped for schemas without any.
#[derive(Clone, Copy, Debug, Default)]
pub struct Keys {
    /// Some object has a `$ref` key.
    pub has_ref: bool,
    /// Some object has an `$id` or `id` key.
    pub has_id: bool,
}

/// `json.NewDecoder(r).UseNumber().Decode(&v)`: the first value of `b`.
pub fn decode(b: &[u8]) -> Result<(J<'_>, Keys), String> {
    let mut p = Parser {
        b,
        i: 0,
        depth: 0,
        keys: Keys::default(),
    };
    p.skip_ws();
    if p.i >= b.len() {
        return Err("EOF".into());
    }
    let v = p.value()?;
    Ok((v, p.keys))
}

struct Parser<'a> {
    b: &'a [u8],
    i: usize,
    depth: usize,
    keys: Keys,
}

/// encoding/json's `quoteChar`.
fn quote_char(c: u8) -> String {
    match c {
        b'\'' => "'\\''".into(),
        b'"' => "'\"'".into(),
        _ => {
            let q = go_quote(&char::from(c).to_string());
            format!("'{}'", &q[1..q.len() - 1])
        }
    }
}

impl<'a> Parser<'a> {
    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.b.get(self.i) {
            self.i += 1;
        }
    }

    /// The byte at the cursor; running out mid-value is Go's
    /// `io.ErrUnexpectedEOF`.
    fn peek(&self) -> Result<u8, String> {
        self.b
            .get(self.i)
            .copied()
            .ok_or_else(|| "unexpected EOF".to_string())
    }

    fn err(&self, c: u8, context: &str) -> String {
        format!("invalid character {} {context}", quote_char(c))
    }

    fn value(&mut self) -> Result<J<'a>, String> {
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || self.value_inner())
    }

    fn value_inner(&mut self) -> Result<J<'a>, String> {
        let c = self.peek()?;
        match c {
            b'{' => {
                self.nest(c)?;
                self.i += 1;
                let mut m = Vec::new();
                self.skip_ws();
                if self.peek()? == b'}' {
                    self.i += 1;
                    self.depth -= 1;
                    return Ok(J::Obj(Obj::new()));
                }
                loop {
                    self.skip_ws();
                    let c = self.peek()?;
                    if c != b'"' {
                        return Err(self.err(c, "looking for beginning of object key string"));
                    }
                    let k = self.string()?;
                    self.skip_ws();
                    let c = self.peek()?;
                    if c != b':' {
                        return Err(self.err(c, "after object key"));
                    }
                    self.i += 1;
                    self.skip_ws();
                    let v = self.value()?;
                    match &*k {
                        "$ref" => self.keys.has_ref = true,
                        "$id" | "id" => self.keys.has_id = true,
                        _ => {}
                    }
                    m.push((k, v));
                    self.skip_ws();
                    match self.peek()? {
                        b',' => self.i += 1,
                        b'}' => {
                            self.i += 1;
                            self.depth -= 1;
                            return Ok(J::Obj(Obj::from_members(m)));
                        }
                        c => return Err(self.err(c, "after object key:value pair")),
                    }
                }
            }
            b'[' => {
                self.nest(c)?;
                self.i += 1;
                let mut a = Vec::new();
                self.skip_ws();
                if self.peek()? == b']' {
                    self.i += 1;
                    self.depth -= 1;
                    return Ok(J::Arr(a));
                }
                loop {
                    self.skip_ws();
                    a.push(self.value()?);
                    self.skip_ws();
                    match self.peek()? {
                        b',' => self.i += 1,
                        b']' => {
                            self.i += 1;
                            self.depth -= 1;
                            return Ok(J::Arr(a));
                        }
                        c => return Err(self.err(c, "after array element")),
                    }
                }
            }
            b'"' => Ok(J::Str(self.string()?)),
            b't' => self.literal("true", J::Bool(true)),
            b'f' => self.literal("false", J::Bool(false)),
            b'n' => self.literal("null", J::Null),
            b'-' | b'0'..=b'9' => self.number(),
            c => Err(self.err(c, "looking for beginning of value")),
        }
    }

    fn nest(&mut self, c: u8) -> Result<(), String> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.err(c, "exceeded max depth"));
        }
        Ok(())
    }

    fn literal(&mut self, word: &str, v: J<'a>) -> Result<J<'a>, String> {
        let w = word.as_bytes();
        self.i += 1;
        for &want in &w[1..] {
            let c = self.peek()?;
            if c != want {
                return Err(self.err(
                    c,
                    &format!("in literal {word} (expecting {})", quote_char(want)),
                ));
            }
            self.i += 1;
        }
        Ok(v)
    }

    fn digits(&mut self) {
        while let Some(b'0'..=b'9') = self.b.get(self.i) {
            self.i += 1;
        }
    }

    fn number(&mut self) -> Result<J<'a>, String> {
        let start = self.i;
        if self.b[self.i] == b'-' {
            self.i += 1;
            let c = self.peek()?;
            if !c.is_ascii_digit() {
                return Err(self.err(c, "in numeric literal"));
            }
        }
        if self.b[self.i] == b'0' {
            self.i += 1;
        } else {
            self.digits();
        }
        if self.b.get(self.i) == Some(&b'.') {
            self.i += 1;
            let c = self.peek()?;
            if !c.is_ascii_digit() {
                return Err(self.err(c, "after decimal point in numeric literal"));
            }
            self.digits();
        }
        if let Some(b'e' | b'E') = self.b.get(self.i) {
            self.i += 1;
            if let Some(b'+' | b'-') = self.b.get(self.i) {
                self.i += 1;
            }
            let c = self.peek()?;
            if !c.is_ascii_digit() {
                return Err(self.err(c, "in exponent of numeric literal"));
            }
            self.digits();
        }
        // The literal is ASCII by construction.
        Ok(J::Num(String::from_utf8_lossy(&self.b[start..self.i])))
    }

    fn hex4(&mut self) -> Result<u32, String> {
        let mut v = 0;
        for _ in 0..4 {
            let c = self.peek()?;
            let d = (c as char)
                .to_digit(16)
                .ok_or_else(|| self.err(c, "in \\u hexadecimal character escape"))?;
            v = v * 16 + d;
            self.i += 1;
        }
        Ok(v)
    }

    /// A string literal; invalid UTF-8 and lone surrogates become U+FFFD as
    /// in Go's `unquote`.
    fn string(&mut self) -> Result<Cow<'a, str>, String> {
        self.i += 1;
        // Without escapes the string is borrowed from the input.
        let start = self.i;
        let run = self.b[start..]
            .iter()
            .position(|&c| c == b'"' || c == b'\\' || c < 0x20)
            .unwrap_or(self.b.len() - start);
        if self.b.get(start + run) == Some(&b'"')
            && let Ok(s) = std::str::from_utf8(&self.b[start..start + run])
        {
            self.i = start + run + 1;
            return Ok(Cow::Borrowed(s));
        }
        let mut out: Vec<u8> = Vec::new();
        loop {
            let c = self.peek()?;
            match c {
                b'"' => {
                    self.i += 1;
                    return Ok(Cow::Owned(String::from_utf8(out).unwrap_or_else(|e| {
                        String::from_utf8_lossy(e.as_bytes()).into_owned()
                    })));
                }
                b'\\' => {
                    self.i += 1;
                    let e = self.peek()?;
                    self.i += 1;
                    let ch = match e {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => {
                            let u = self.hex4()?;
                            if (0xD800..0xDC00).contains(&u)
                                && self.b.get(self.i) == Some(&b'\\')
                                && self.b.get(self.i + 1) == Some(&b'u')
                            {
                                let save = self.i;
                                self.i += 2;
                                let lo = self.hex4()?;
                                if (0xDC00..0xE000).contains(&lo) {
                                    char::from_u32(0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00))
                                        .unwrap_or('\u{fffd}')
                                } else {
                                    // Not a pair: the high half is replaced
                                    // and the next escape read on its own.
                                    self.i = save;
                                    '\u{fffd}'
                                }
                            } else {
                                char::from_u32(u).unwrap_or('\u{fffd}')
                            }
                        }
                        _ => {
                            self.i -= 1;
                            return Err(self.err(e, "in string escape code"));
                        }
                    };
                    let mut buf = [0u8; 4];
                    out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                }
                c if c < 0x20 => return Err(self.err(c, "in string literal")),
                _ => {
                    // A run of plain bytes at once.
                    let run = self.b[self.i..]
                        .iter()
                        .position(|&c| c == b'"' || c == b'\\' || c < 0x20)
                        .unwrap_or(self.b.len() - self.i);
                    out.extend_from_slice(&self.b[self.i..self.i + run]);
                    self.i += run;
                }
            }
        }
    }
}

/// Go's `json.Marshal` of a float64 (the YAML side's encoding/json port;
/// decoded numbers are finite, other values print as Rust does).
fn go_json_float(f: f64) -> String {
    crate::yaml::format_json_float(f).unwrap_or_else(|| format!("{f}"))
}

/// gojsonschema's `marshalWithoutNumber`: marshal, decode without
/// `UseNumber` (numbers become float64), marshal again. Map keys come out
/// sorted, numbers in float64 form (`1.0` and `1` are equal).
pub fn marshal_without_number(v: &J<'_>) -> Result<String, String> {
    let mut out = String::new();
    marshal(v, &mut out)?;
    Ok(out)
}

fn marshal(v: &J<'_>, out: &mut String) -> Result<(), String> {
    stacker::maybe_grow(64 * 1024, 1024 * 1024, || marshal_inner(v, out))
}

fn marshal_inner(v: &J<'_>, out: &mut String) -> Result<(), String> {
    match v {
        J::Null => out.push_str("null"),
        J::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        J::Num(lit) => {
            let f: f64 = lit.parse().unwrap_or(f64::INFINITY);
            if !f.is_finite() {
                return Err(format!(
                    "json: cannot unmarshal number {lit} into Go value of type float64"
                ));
            }
            out.push_str(&go_json_float(f));
        }
        J::Float(f) => out.push_str(&go_json_float(*f)),
        // Decoded again as float64.
        J::Int(i) => out.push_str(&go_json_float(*i as f64)),
        J::Str(s) => write_json_string(out, s),
        J::Arr(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                marshal(x, out)?;
            }
            out.push(']');
        }
        J::Obj(m) => {
            out.push('{');
            for (i, (k, x)) in m.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json_string(out, k);
                out.push(':');
                marshal(x, out)?;
            }
            out.push('}');
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Texts of Go 1.23's encoding/json for these inputs.
    #[test]
    fn go_decoder_errors() {
        let e = |s: &str| decode(s.as_bytes()).unwrap_err();
        fn ok(s: &[u8]) -> J<'_> {
            decode(s).unwrap().0
        }
        assert_eq!(e(""), "EOF");
        assert_eq!(e("  {\"a\": "), "unexpected EOF");
        assert_eq!(
            e("{\"a\": 1,}"),
            "invalid character '}' looking for beginning of object key string"
        );
        assert_eq!(e("{\"a\" 1}"), "invalid character '1' after object key");
        assert_eq!(
            e("{\"a\": 1 \"b\"}"),
            "invalid character '\"' after object key:value pair"
        );
        assert_eq!(e("[1 2]"), "invalid character '2' after array element");
        assert_eq!(
            e("[1,]"),
            "invalid character ']' looking for beginning of value"
        );
        assert_eq!(
            e("tru "),
            "invalid character ' ' in literal true (expecting 'e')"
        );
        assert_eq!(e("\"a\tb\""), "invalid character '\\t' in string literal");
        assert_eq!(e("-x"), "invalid character 'x' in numeric literal");
        assert_eq!(
            e("1.e"),
            "invalid character 'e' after decimal point in numeric literal"
        );
        assert_eq!(
            e("'"),
            "invalid character '\\'' looking for beginning of value"
        );
        // One value is read; what follows is not looked at.
        assert_eq!(ok(b"{} trailing"), J::Obj(Obj::new()));
        // Members by key; of duplicate keys the last wins, as in a Go map.
        let J::Obj(o) = ok(br#"{"b": 1, "a": 2, "b": 3, "c": {}, "a": 4}"#) else {
            panic!("not an object")
        };
        let members: Vec<(&str, &J)> = o.iter().map(|(k, v)| (&**k, v)).collect();
        let num = |n: &'static str| J::Num(n.into());
        let empty = J::Obj(Obj::new());
        assert_eq!(
            members,
            vec![("a", &num("4")), ("b", &num("3")), ("c", &empty)]
        );
        assert_eq!(o.get("b"), Some(&num("3")));
        assert_eq!(o.get("d"), None);
        assert_eq!(
            ok(b"[1.0, 2e3]"),
            J::Arr(vec![J::Num("1.0".into()), J::Num("2e3".into())])
        );
    }

    #[test]
    fn marshal_like_go() {
        let v = decode(br#"{"b":[1.0,1e21,1e-7,0.000001,"<&>"],"a":null}"#)
            .unwrap()
            .0;
        assert_eq!(
            marshal_without_number(&v).unwrap(),
            r#"{"a":null,"b":[1,1e+21,1e-7,0.000001,"\u003c\u0026\u003e"]}"#
        );
    }
}

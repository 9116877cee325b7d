//! `--set`-style values and the values command-line options: a port of Helm
//! v3.17's `pkg/strvals/parser.go` (`ParseInto`, `ParseIntoString`,
//! `ParseJSON`, `ParseIntoFile`) and `pkg/cli/values/options.go`
//! (`Options.MergeValues`, `mergeMaps`).
//!
//! Hand-ported because the grammar is Helm's own (`a.b[0]=x,c={1,2}`, `\`
//! escapes, int64 typing of integers) and its error texts, including the
//! Go panic messages Helm recovers from on type clashes, are user-visible.

use std::path::Path;

use crate::yaml::{Mapping, Yaml};

/// Helm's `MaxIndex`.
const MAX_INDEX: usize = 65536;
/// Helm's `MaxNestedNameLevel`.
const MAX_NESTED_NAME_LEVEL: usize = 30;

/// A parse failure: Go's `io.EOF` (which ends parsing quietly at the top)
/// or a message.
#[derive(Debug, Clone, PartialEq)]
enum PErr {
    Eof,
    Msg(String),
}

impl PErr {
    fn text(&self) -> String {
        match self {
            PErr::Eof => "EOF".into(),
            PErr::Msg(m) => m.clone(),
        }
    }
}

fn msg(s: impl Into<String>) -> PErr {
    PErr::Msg(s.into())
}

/// How a scalar value is turned into a value (`RunesValueReader`).
enum Reader<'a> {
    /// `--set` (`typedVal` with string=false) or `--set-string` (true).
    Typed(bool),
    /// `--set-file`: the value is a file path; the file's text is the value.
    File(&'a dyn Fn(&str) -> Result<Yaml, String>),
    /// `--set-json`: values are JSON documents.
    Json,
}

struct Parser<'a> {
    sc: Vec<char>,
    pos: usize,
    reader: Reader<'a>,
}

/// Go's dynamic type name, for the panic messages Helm reports.
fn go_type(v: &Yaml) -> &'static str {
    match v {
        Yaml::Null => "nil",
        Yaml::Bool(_) => "bool",
        Yaml::Int(_) => "int64",
        Yaml::Float(_) => "float64",
        Yaml::Str(_) => "string",
        Yaml::Seq(_) => "[]interface {}",
        Yaml::Map(_) => "map[string]interface {}",
    }
}

fn conversion_panic(v: &Yaml, want: &str) -> PErr {
    msg(format!(
        "unable to parse key: interface conversion: interface {{}} is {}, not {want}",
        go_type(v)
    ))
}

/// Go's `%q` of a string.
fn q(s: &str) -> String {
    crate::chart::metadata::go_quote(s)
}

/// Go's `typedVal`.
fn typed_val(v: &str, st: bool) -> Yaml {
    if st {
        return Yaml::Str(v.to_string());
    }
    if v.eq_ignore_ascii_case("true") {
        return Yaml::Bool(true);
    }
    if v.eq_ignore_ascii_case("false") {
        return Yaml::Bool(false);
    }
    if v.eq_ignore_ascii_case("null") {
        return Yaml::Null;
    }
    if v == "0" {
        return Yaml::Int(0);
    }
    if !v.is_empty()
        && !v.starts_with('0')
        && let Ok(i) = v.parse::<i64>()
    {
        return Yaml::Int(i);
    }
    Yaml::Str(v.to_string())
}

impl<'a> Parser<'a> {
    fn new(s: &str, reader: Reader<'a>) -> Self {
        Parser {
            sc: s.chars().collect(),
            pos: 0,
            reader,
        }
    }

    fn read_rune(&mut self) -> Option<char> {
        let r = self.sc.get(self.pos).copied();
        if r.is_some() {
            self.pos += 1;
        }
        r
    }

    fn unread_rune(&mut self) {
        self.pos = self.pos.saturating_sub(1);
    }

    /// `runesUntil`: read up to a stop rune, `\` escaping the next rune.
    fn runes_until(&mut self, stop: &[char]) -> (String, Option<char>, Option<PErr>) {
        let mut v = String::new();
        loop {
            match self.read_rune() {
                None => return (v, None, Some(PErr::Eof)),
                Some(r) if stop.contains(&r) => return (v, Some(r), None),
                Some('\\') => match self.read_rune() {
                    None => return (v, None, Some(PErr::Eof)),
                    Some(n) => v.push(n),
                },
                Some(r) => v.push(r),
            }
        }
    }

    fn value_of(&self, rs: &str) -> Result<Yaml, PErr> {
        match &self.reader {
            Reader::Typed(st) => Ok(typed_val(rs, *st)),
            Reader::File(f) => f(rs).map_err(PErr::Msg),
            Reader::Json => Ok(typed_val(rs, false)),
        }
    }

    fn parse(&mut self, data: &mut Mapping) -> Result<(), PErr> {
        loop {
            match self.key(data, 0) {
                Ok(()) => continue,
                Err(PErr::Eof) => return Ok(()),
                Err(e) => return Err(e),
            }
        }
    }

    fn key(&mut self, data: &mut Mapping, mut nested: usize) -> Result<(), PErr> {
        let (k, last, err) = self.runes_until(&['=', '[', ',', '.']);
        if let Some(err) = err {
            if k.is_empty() {
                return Err(err);
            }
            return Err(msg(format!("key {} has no value", q(&k))));
        }
        match last {
            Some('[') => {
                let i = self
                    .key_index()
                    .map_err(|e| msg(format!("error parsing index: {}", e.text())))?;
                let list = match data.get(&k) {
                    None => Vec::new(),
                    Some(Yaml::Seq(l)) => l.clone(),
                    Some(other) => return Err(conversion_panic(other, "[]interface {}")),
                };
                let (list, res) = self.list_item(list, i, nested);
                set(data, &k, Yaml::Seq(list));
                res
            }
            Some('=') => {
                if matches!(self.reader, Reader::Json) {
                    if self.empty_val() {
                        set(data, &k, Yaml::Null);
                        return Ok(());
                    }
                    let v = self.json_value()?;
                    set(data, &k, v);
                    self.empty_val();
                    return Ok(());
                }
                match self.val_list() {
                    Ok(vl) => {
                        set(data, &k, Yaml::Seq(vl));
                        Ok(())
                    }
                    Err(ListErr::Eof) => {
                        set(data, &k, Yaml::Str(String::new()));
                        Err(PErr::Eof)
                    }
                    Err(ListErr::NotList) => {
                        let (rs, _, _) = self.runes_until(&[',']);
                        let v = self.value_of(&rs);
                        match v {
                            Ok(v) => {
                                set(data, &k, v);
                                Ok(())
                            }
                            Err(e) => {
                                set(data, &k, Yaml::Null);
                                Err(e)
                            }
                        }
                    }
                    Err(ListErr::Other(e)) => Err(e),
                }
            }
            Some(',') => {
                set(data, &k, Yaml::Str(String::new()));
                Err(msg(format!(
                    "key {} has no value (cannot end with ,)",
                    q(&k)
                )))
            }
            Some('.') => {
                nested += 1;
                if nested > MAX_NESTED_NAME_LEVEL {
                    return Err(msg(format!(
                        "value name nested level is greater than maximum supported nested level of {MAX_NESTED_NAME_LEVEL}"
                    )));
                }
                let mut inner = match data.get(&k) {
                    None => Mapping::new(),
                    Some(Yaml::Map(m)) => m.clone(),
                    Some(other) => {
                        return Err(conversion_panic(other, "map[string]interface {}"));
                    }
                };
                let e = self.key(&mut inner, nested);
                if e.is_ok() && inner.is_empty() {
                    return Err(msg(format!("key map {} has no value", q(&k))));
                }
                if !inner.is_empty() {
                    set(data, &k, Yaml::Map(inner));
                }
                e
            }
            _ => Ok(()),
        }
    }

    /// Decode one JSON document at the current position (Go's
    /// `json.Decoder.Decode` followed by skipping `InputOffset` bytes).
    fn json_value(&mut self) -> Result<Yaml, PErr> {
        let rest: String = self.sc[self.pos..].iter().collect();
        let mut it = serde_json::Deserializer::from_str(&rest).into_iter::<serde_json::Value>();
        match it.next() {
            Some(Ok(v)) => {
                let used = it.byte_offset();
                self.pos += rest[..used].chars().count();
                Ok(from_json(&v))
            }
            Some(Err(e)) => Err(msg(e.to_string())),
            None => Err(PErr::Eof),
        }
    }

    /// `keyIndex`: the number inside `[...]`.
    fn key_index(&mut self) -> Result<i64, PErr> {
        let (v, _, err) = self.runes_until(&[']']);
        if let Some(e) = err {
            return Err(e);
        }
        atoi(&v)
    }

    /// `listItem`: returns the (possibly updated) list and the error.
    fn list_item(
        &mut self,
        list: Vec<Yaml>,
        i: i64,
        nested: usize,
    ) -> (Vec<Yaml>, Result<(), PErr>) {
        if i < 0 {
            return (list, Err(msg(format!("negative {i} index not allowed"))));
        }
        let (k, last, err) = self.runes_until(&['[', '.', '=']);
        if !k.is_empty() {
            let runes: Vec<String> = k.chars().map(|c| format!("'{c}'")).collect();
            return (
                list,
                Err(msg(format!(
                    "unexpected data at end of array index: [{}]",
                    runes.join(" ")
                ))),
            );
        }
        if let Some(e) = err {
            return (list, Err(e));
        }
        match last {
            Some('=') => {
                if matches!(self.reader, Reader::Json) {
                    if self.empty_val() {
                        return set_index(list, i, Yaml::Null);
                    }
                    let v = match self.json_value() {
                        Ok(v) => v,
                        Err(e) => return (list, Err(e)),
                    };
                    let (list, r) = set_index(list, i, v);
                    if r.is_err() {
                        return (list, r);
                    }
                    self.empty_val();
                    return (list, Ok(()));
                }
                match self.val_list() {
                    Ok(vl) => set_index(list, i, Yaml::Seq(vl)),
                    Err(ListErr::Eof) => set_index(list, i, Yaml::Str(String::new())),
                    Err(ListErr::NotList) => {
                        let (rs, _, _) = self.runes_until(&[',']);
                        match self.value_of(&rs) {
                            Ok(v) => set_index(list, i, v),
                            Err(e) => (list, Err(e)),
                        }
                    }
                    Err(ListErr::Other(e)) => (list, Err(e)),
                }
            }
            Some('[') => {
                let next_i = match self.key_index() {
                    Ok(n) => n,
                    Err(e) => {
                        return (list, Err(msg(format!("error parsing index: {}", e.text()))));
                    }
                };
                let idx = i as usize;
                let crt = match list.get(idx) {
                    None | Some(Yaml::Null) => Vec::new(),
                    Some(Yaml::Seq(l)) => l.clone(),
                    Some(other) => {
                        // Go panics in the type assertion; key()'s recover
                        // reports it.
                        let e = conversion_panic(other, "[]interface {}");
                        return (list, Err(e));
                    }
                };
                let (list2, r) = self.list_item(crt, next_i, nested);
                if r.is_err() {
                    return (list, r);
                }
                set_index(list, i, Yaml::Seq(list2))
            }
            Some('.') => {
                let idx = i as usize;
                let mut inner = match list.get(idx) {
                    Some(Yaml::Map(m)) => m.clone(),
                    _ => Mapping::new(),
                };
                if let Err(e) = self.key(&mut inner, nested) {
                    return (list, Err(e));
                }
                set_index(list, i, Yaml::Map(inner))
            }
            other => (
                Vec::new(),
                Err(msg(format!(
                    "parse error: unexpected token {}",
                    other.map_or(0, |c| c as u32)
                ))),
            ),
        }
    }

    /// `emptyVal`: skip spaces; true at end of input or at a `,`.
    fn empty_val(&mut self) -> bool {
        loop {
            match self.read_rune() {
                None => return true,
                Some(',') => return true,
                Some(r) if r.is_whitespace() => continue,
                Some(_) => {
                    self.unread_rune();
                    return false;
                }
            }
        }
    }

    /// `valList`: a `{a,b}` list.
    fn val_list(&mut self) -> Result<Vec<Yaml>, ListErr> {
        match self.read_rune() {
            None => return Err(ListErr::Eof),
            Some('{') => {}
            Some(_) => {
                self.unread_rune();
                return Err(ListErr::NotList);
            }
        }
        let mut list = Vec::new();
        loop {
            let (rs, last, err) = self.runes_until(&[',', '}']);
            if let Some(e) = err {
                return Err(ListErr::Other(match e {
                    PErr::Eof => msg("list must terminate with '}'"),
                    other => other,
                }));
            }
            match last {
                Some('}') => {
                    match self.read_rune() {
                        Some(',') | None => {}
                        Some(_) => self.unread_rune(),
                    }
                    let v = self.value_of(&rs).map_err(ListErr::Other)?;
                    list.push(v);
                    return Ok(list);
                }
                _ => {
                    let v = self.value_of(&rs).map_err(ListErr::Other)?;
                    list.push(v);
                }
            }
        }
    }
}

enum ListErr {
    Eof,
    NotList,
    Other(PErr),
}

/// Go's `set`: an empty key is ignored.
fn set(data: &mut Mapping, key: &str, val: Yaml) {
    if !key.is_empty() {
        data.insert(key.to_string(), val);
    }
}

/// `setIndex`: grow the list with nulls as needed.
fn set_index(mut list: Vec<Yaml>, index: i64, val: Yaml) -> (Vec<Yaml>, Result<(), PErr>) {
    if index < 0 {
        return (
            list,
            Err(msg(format!("negative {index} index not allowed"))),
        );
    }
    let idx = index as usize;
    if idx > MAX_INDEX {
        return (
            list,
            Err(msg(format!(
                "index of {index} is greater than maximum supported index of {MAX_INDEX}"
            ))),
        );
    }
    if list.len() <= idx {
        list.resize(idx + 1, Yaml::Null);
    }
    list[idx] = val;
    (list, Ok(()))
}

fn from_json(v: &serde_json::Value) -> Yaml {
    match v {
        serde_json::Value::Null => Yaml::Null,
        serde_json::Value::Bool(b) => Yaml::Bool(*b),
        // encoding/json decodes numbers into float64.
        serde_json::Value::Number(n) => Yaml::Float(n.as_f64().unwrap_or(0.0)),
        serde_json::Value::String(s) => Yaml::Str(s.clone()),
        serde_json::Value::Array(a) => Yaml::Seq(a.iter().map(from_json).collect()),
        serde_json::Value::Object(o) => {
            Yaml::Map(o.iter().map(|(k, v)| (k.clone(), from_json(v))).collect())
        }
    }
}

/// `strvals.ParseInto`: a `--set` expression into `dest`.
pub fn parse_into(s: &str, dest: &mut Mapping) -> Result<(), String> {
    Parser::new(s, Reader::Typed(false))
        .parse(dest)
        .map_err(|e| e.text())
}

/// `strvals.ParseIntoString`: a `--set-string` expression into `dest`.
pub fn parse_into_string(s: &str, dest: &mut Mapping) -> Result<(), String> {
    Parser::new(s, Reader::Typed(true))
        .parse(dest)
        .map_err(|e| e.text())
}

/// `strvals.ParseJSON`: a `--set-json` expression into `dest`.
pub fn parse_json(s: &str, dest: &mut Mapping) -> Result<(), String> {
    Parser::new(s, Reader::Json)
        .parse(dest)
        .map_err(|e| e.text())
}

/// `strvals.ParseIntoFile`: a `--set-file` expression into `dest`; `reader`
/// turns a path into the value.
pub fn parse_into_file(
    s: &str,
    dest: &mut Mapping,
    reader: &dyn Fn(&str) -> Result<Yaml, String>,
) -> Result<(), String> {
    Parser::new(s, Reader::File(reader))
        .parse(dest)
        .map_err(|e| e.text())
}

/// `literalParser` (`pkg/strvals/literal_parser.go`): `--set-literal`
/// keeps everything after the first `=` as one string, with no `,`
/// splitting, `{}` lists or `\` escapes; keys still nest with `.` and
/// `[i]`.
struct LiteralParser {
    sc: Vec<char>,
    pos: usize,
}

impl LiteralParser {
    /// `runesUntilLiteral`: like `runesUntil` without escapes.
    fn runes_until(&mut self, stop: &[char]) -> (String, Option<char>, Option<PErr>) {
        let mut v = String::new();
        loop {
            match self.sc.get(self.pos).copied() {
                None => return (v, None, Some(PErr::Eof)),
                Some(r) => {
                    self.pos += 1;
                    if stop.contains(&r) {
                        return (v, Some(r), None);
                    }
                    v.push(r);
                }
            }
        }
    }

    fn parse(&mut self, data: &mut Mapping) -> Result<(), PErr> {
        loop {
            match self.key(data, 0) {
                Ok(()) => continue,
                Err(PErr::Eof) => return Ok(()),
                Err(e) => return Err(e),
            }
        }
    }

    /// `val`: the rest of the input, verbatim.
    fn val(&mut self) -> String {
        self.runes_until(&[]).0
    }

    fn key(&mut self, data: &mut Mapping, mut nested: usize) -> Result<(), PErr> {
        let (k, last, err) = self.runes_until(&['=', '[', '.']);
        if let Some(err) = err {
            if k.is_empty() {
                return Err(err);
            }
            return Err(msg(format!("key {} has no value", q(&k))));
        }
        match last {
            Some('=') => {
                let v = self.val();
                set(data, &k, Yaml::Str(v));
                Ok(())
            }
            Some('.') => {
                nested += 1;
                if nested > MAX_NESTED_NAME_LEVEL {
                    return Err(msg(format!(
                        "value name nested level is greater than maximum supported nested level of {MAX_NESTED_NAME_LEVEL}"
                    )));
                }
                // Go type-asserts an existing entry (panicking, then
                // recovered by key(), when it is not a map).
                let mut inner = match data.get(&k) {
                    None => Mapping::new(),
                    Some(Yaml::Map(m)) => m.clone(),
                    Some(other) => return Err(conversion_panic(other, "map[string]interface {}")),
                };
                let e = self.key(&mut inner, nested);
                if e.is_ok() && inner.is_empty() {
                    return Err(msg(format!("key map {} has no value", q(&k))));
                }
                if !inner.is_empty() {
                    set(data, &k, Yaml::Map(inner));
                }
                e
            }
            _ => {
                // '['
                let i = self
                    .key_index()
                    .map_err(|e| msg(format!("error parsing index: {}", e.text())))?;
                let list = match data.get(&k) {
                    None => Vec::new(),
                    Some(Yaml::Seq(l)) => l.clone(),
                    Some(other) => return Err(conversion_panic(other, "[]interface {}")),
                };
                let (list, res) = self.list_item(list, i, nested);
                set(data, &k, Yaml::Seq(list));
                res
            }
        }
    }

    fn key_index(&mut self) -> Result<i64, PErr> {
        let (v, _, err) = self.runes_until(&[']']);
        if let Some(e) = err {
            return Err(e);
        }
        atoi(&v)
    }

    fn list_item(
        &mut self,
        list: Vec<Yaml>,
        i: i64,
        nested: usize,
    ) -> (Vec<Yaml>, Result<(), PErr>) {
        if i < 0 {
            return (list, Err(msg(format!("negative {i} index not allowed"))));
        }
        let (k, last, err) = self.runes_until(&['[', '.', '=']);
        if !k.is_empty() {
            let runes: Vec<String> = k.chars().map(|c| format!("'{c}'")).collect();
            return (
                list,
                Err(msg(format!(
                    "unexpected data at end of array index: [{}]",
                    runes.join(" ")
                ))),
            );
        }
        if let Some(e) = err {
            return (list, Err(e));
        }
        match last {
            Some('=') => {
                let v = self.val();
                set_index(list, i, Yaml::Str(v))
            }
            Some('.') => {
                let mut list = list;
                let idx = usize::try_from(i).unwrap_or(usize::MAX);
                let mut inner = match list.get(idx) {
                    Some(Yaml::Map(m)) => m.clone(),
                    Some(_) => {
                        // Indices out of order: Go resets the slot to an
                        // empty map.
                        list[idx] = Yaml::Map(Mapping::new());
                        Mapping::new()
                    }
                    None => Mapping::new(),
                };
                if let Err(e) = self.key(&mut inner, nested) {
                    return (list, Err(e));
                }
                set_index(list, i, Yaml::Map(inner))
            }
            _ => {
                // '['
                let next_i = match self.key_index() {
                    Ok(n) => n,
                    Err(e) => {
                        return (list, Err(msg(format!("error parsing index: {}", e.text()))));
                    }
                };
                let idx = usize::try_from(i).unwrap_or(usize::MAX);
                let crt = match list.get(idx) {
                    None | Some(Yaml::Null) => Vec::new(),
                    Some(Yaml::Seq(l)) => l.clone(),
                    Some(other) => {
                        let e = conversion_panic(other, "[]interface {}");
                        return (list, Err(e));
                    }
                };
                let (list2, r) = self.list_item(crt, next_i, nested);
                if r.is_err() {
                    return (list, r);
                }
                set_index(list, i, Yaml::Seq(list2))
            }
        }
    }
}

/// `strconv.Atoi` with its error text.
fn atoi(v: &str) -> Result<i64, PErr> {
    v.parse::<i64>().map_err(|e| {
        let why = if matches!(
            e.kind(),
            std::num::IntErrorKind::PosOverflow | std::num::IntErrorKind::NegOverflow
        ) {
            "value out of range"
        } else {
            "invalid syntax"
        };
        msg(format!("strconv.Atoi: parsing {}: {why}", q(v)))
    })
}

/// `strvals.ParseLiteralInto`: a `--set-literal` expression into `dest`.
pub fn parse_literal_into(s: &str, dest: &mut Mapping) -> Result<(), String> {
    LiteralParser {
        sc: s.chars().collect(),
        pos: 0,
    }
    .parse(dest)
    .map_err(|e| e.text())
}

/// `strvals.Parse`: a `--set` expression into a new map.
pub fn parse(s: &str) -> Result<Mapping, String> {
    let mut m = Mapping::new();
    parse_into(s, &mut m)?;
    Ok(m)
}

/// The values command-line options of `helm install/template`
/// (`values.Options`).
#[derive(Clone, Debug, Default)]
pub struct ValueOptions {
    /// `-f/--values`, in order.
    pub values_files: Vec<String>,
    /// `--set`.
    pub set: Vec<String>,
    /// `--set-string`.
    pub set_string: Vec<String>,
    /// `--set-file`.
    pub set_file: Vec<String>,
    /// `--set-json`.
    pub set_json: Vec<String>,
    /// `--set-literal`.
    pub set_literal: Vec<String>,
}

/// A values error; `Display` is Helm's message.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct OptionsError(pub String);

/// Go's `os.ReadFile` error text.
fn read_file(path: &str) -> Result<Vec<u8>, String> {
    if path.trim() == "-" {
        let mut buf = Vec::new();
        use std::io::Read;
        std::io::stdin()
            .read_to_end(&mut buf)
            .map_err(|e| format!("read /dev/stdin: {e}"))?;
        return Ok(buf);
    }
    // Go's os.ReadFile: the open fails, or (a directory) the read does.
    std::fs::read(Path::new(path)).map_err(|e| {
        let op = if e.kind() == std::io::ErrorKind::IsADirectory {
            "read"
        } else {
            "open"
        };
        crate::gocompat::os::path_error(op, Path::new(path), &e)
    })
}

impl ValueOptions {
    /// `Options.MergeValues`: `-f` files in order (merged with `mergeMaps`),
    /// then `--set-json`, `--set`, `--set-string`, `--set-file`,
    /// `--set-literal`.
    pub fn merge(&self) -> Result<Mapping, OptionsError> {
        let mut base = Mapping::new();
        for path in &self.values_files {
            let bytes = read_file(path).map_err(OptionsError)?;
            // go-yaml rejects invalid UTF-8 before parsing.
            let text = crate::yaml::check_input(&bytes)
                .map_err(|e| OptionsError(format!("failed to parse {path}: {e}")))?;
            let doc = crate::chart::load::parse_yaml(text)
                .map_err(|e| OptionsError(format!("failed to parse {path}: {e}")))?;
            let current = match doc {
                Yaml::Map(m) => m,
                Yaml::Null => Mapping::new(),
                other => {
                    let kind = match other {
                        Yaml::Bool(_) => "bool",
                        Yaml::Int(_) | Yaml::Float(_) => "number",
                        Yaml::Str(_) => "string",
                        _ => "array",
                    };
                    return Err(OptionsError(format!(
                        "failed to parse {path}: error unmarshaling JSON: while decoding JSON: json: cannot unmarshal {kind} into Go value of type map[string]interface {{}}"
                    )));
                }
            };
            base = merge_maps(base, current);
        }
        for v in &self.set_json {
            parse_json(v, &mut base)
                .map_err(|_| OptionsError(format!("failed parsing --set-json data {v}")))?;
        }
        for v in &self.set {
            parse_into(v, &mut base)
                .map_err(|e| OptionsError(format!("failed parsing --set data: {e}")))?;
        }
        for v in &self.set_string {
            parse_into_string(v, &mut base)
                .map_err(|e| OptionsError(format!("failed parsing --set-string data: {e}")))?;
        }
        for v in &self.set_file {
            let reader = |p: &str| -> Result<Yaml, String> {
                let bytes = read_file(p)?;
                Ok(Yaml::Str(String::from_utf8_lossy(&bytes).into_owned()))
            };
            parse_into_file(v, &mut base, &reader)
                .map_err(|e| OptionsError(format!("failed parsing --set-file data: {e}")))?;
        }
        for v in &self.set_literal {
            parse_literal_into(v, &mut base)
                .map_err(|e| OptionsError(format!("failed parsing --set-literal data: {e}")))?;
        }
        Ok(base)
    }
}

/// `mergeMaps`: `b` over `a`, recursing where both sides hold maps.
pub fn merge_maps(a: Mapping, b: Mapping) -> Mapping {
    let mut out = a;
    for (k, v) in b {
        if let Yaml::Map(vm) = v {
            if let Some(Yaml::Map(bv)) = out.remove(&k) {
                out.insert(k, Yaml::Map(merge_maps(bv, vm)));
            } else {
                out.insert(k, Yaml::Map(vm));
            }
            continue;
        }
        out.insert(k, v);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(m: &Mapping) -> String {
        serde_json::to_string(&crate::yaml::json::to_serde(&Yaml::Map(m.clone()))).unwrap()
    }

    #[test]
    fn set_syntax() {
        let m =
            parse("a=1,b=true,c=null,d=0,e=007,f=x\\,y,g\\.h=2,i={1,x},j[1]=z,k.l.m=3").unwrap();
        assert_eq!(m.get("a"), Some(&Yaml::Int(1)));
        assert_eq!(m.get("b"), Some(&Yaml::Bool(true)));
        assert_eq!(m.get("c"), Some(&Yaml::Null));
        assert_eq!(m.get("d"), Some(&Yaml::Int(0)));
        assert_eq!(m.get("e"), Some(&Yaml::Str("007".into())));
        assert_eq!(m.get("f"), Some(&Yaml::Str("x,y".into())));
        assert_eq!(m.get("g.h"), Some(&Yaml::Int(2)));
        assert_eq!(
            m.get("i"),
            Some(&Yaml::Seq(vec![Yaml::Int(1), Yaml::Str("x".into())]))
        );
        assert_eq!(
            m.get("j"),
            Some(&Yaml::Seq(vec![Yaml::Null, Yaml::Str("z".into())]))
        );
        assert_eq!(
            json(&m),
            r#"{"a":1,"b":true,"c":null,"d":0,"e":"007","f":"x,y","g.h":2,"i":[1,"x"],"j":[null,"z"],"k":{"l":{"m":3}}}"#
        );
        let mut s = Mapping::new();
        parse_into_string("a=1,b=true", &mut s).unwrap();
        assert_eq!(json(&s), r#"{"a":"1","b":"true"}"#);
        let mut js = Mapping::new();
        parse_json(r#"a={"b":[1,2]},c=null"#, &mut js).unwrap();
        assert_eq!(json(&js), r#"{"a":{"b":[1,2]},"c":null}"#);
        let mut l = Mapping::new();
        parse_into("a[0].b=1,a[0].c=2,a[1][0]=x", &mut l).unwrap();
        assert_eq!(json(&l), r#"{"a":[{"b":1,"c":2},["x"]]}"#);
    }

    #[test]
    fn set_errors() {
        assert_eq!(parse("a").unwrap_err(), "key \"a\" has no value");
        assert_eq!(
            parse("a,b=1").unwrap_err(),
            "key \"a\" has no value (cannot end with ,)"
        );
        assert_eq!(parse("a.=1").unwrap_err(), "key map \"a\" has no value");
        assert_eq!(parse("a={1,2").unwrap_err(), "list must terminate with '}'");
        assert_eq!(
            parse("a[-1]=1").unwrap_err(),
            "negative -1 index not allowed"
        );
        assert_eq!(
            parse("a[x]=1").unwrap_err(),
            "error parsing index: strconv.Atoi: parsing \"x\": invalid syntax"
        );
        assert_eq!(
            parse("a=1,a.b=2").unwrap_err(),
            "unable to parse key: interface conversion: interface {} is int64, not map[string]interface {}"
        );
        let opts = ValueOptions {
            set: vec!["a".into()],
            ..Default::default()
        };
        assert_eq!(
            opts.merge().unwrap_err().to_string(),
            "failed parsing --set data: key \"a\" has no value"
        );
    }

    #[test]
    fn merge_order() {
        let t = tempfile::tempdir().unwrap();
        let f1 = t.path().join("1.yaml");
        let f2 = t.path().join("2.yaml");
        std::fs::write(&f1, "a:\n  b: 1\n  c: 2\nl: [1]\n").unwrap();
        std::fs::write(&f2, "a:\n  c: 3\nl: [2]\n").unwrap();
        let opts = ValueOptions {
            values_files: vec![f1.display().to_string(), f2.display().to_string()],
            set: vec!["a.d=4,s=1".into()],
            set_string: vec!["s=2".into()],
            set_json: vec!["a={\"e\":5}".into()],
            set_file: vec![format!("f={}", f2.display())],
            // --set-literal comes last and keeps `,` and `\` as they are.
            set_literal: vec!["s=x,y\\z".into(), "k[1].m=1,2".into()],
        };
        let m = opts.merge().unwrap();
        assert_eq!(
            json(&m),
            r#"{"a":{"d":4,"e":5},"f":"a:\n  c: 3\nl: [2]\n","k":[null,{"m":"1,2"}],"l":[2],"s":"x,y\\z"}"#
        );
        let missing = ValueOptions {
            values_files: vec!["/nonexistent.yaml".into()],
            ..Default::default()
        };
        assert_eq!(
            missing.merge().unwrap_err().to_string(),
            "open /nonexistent.yaml: no such file or directory"
        );
    }

    /// `helm template --set <expr>` with `{{ toJson .Values }}` (helm
    /// v3.17.3); integers are int64 (`kindOf` said so).
    #[test]
    fn set_matches_helm() {
        let cases: &[(&str, &str)] = &[
            ("a=1", r#"{"a":1}"#),
            ("a=1.5", r#"{"a":"1.5"}"#),
            ("a=0x10", r#"{"a":"0x10"}"#),
            ("a=-3", r#"{"a":-3}"#),
            ("a=+3", r#"{"a":3}"#),
            ("a=9223372036854775808", r#"{"a":"9223372036854775808"}"#),
            ("a=TRUE", r#"{"a":true}"#),
            ("a=Null", r#"{"a":null}"#),
            ("a=", r#"{"a":""}"#),
            ("a={}", r#"{"a":[""]}"#),
            ("a={a,b},c=1", r#"{"a":["a","b"],"c":1}"#),
            ("a[2]=x", r#"{"a":[null,null,"x"]}"#),
            ("a[0][1]=y", r#"{"a":[[null,"y"]]}"#),
            ("a[0].b=1,a[0].c=2", r#"{"a":[{"b":1,"c":2}]}"#),
            ("a.b\\.c=1", r#"{"a":{"b.c":1}}"#),
            ("a=x\\=y", r#"{"a":"x=y"}"#),
            ("a=b=c", r#"{"a":"b=c"}"#),
            ("a[0]=1,a[0].b=2", r#"{"a":[{"b":2}]}"#),
            ("a.b=1,a=2", r#"{"a":2}"#),
            ("a[1]", r#"{"a":[]}"#),
            ("a=[1]", r#"{"a":"[1]"}"#),
            ("a={1,{2}", r#"{"a":[1,"{2"]}"#),
            (
                "a=1,,b=2",
                "failed parsing --set data: key \"\" has no value (cannot end with ,)",
            ),
            ("a.b", "failed parsing --set data: key \"b\" has no value"),
            (
                "a=1,a.b=1",
                "failed parsing --set data: unable to parse key: interface conversion: interface {} is int64, not map[string]interface {}",
            ),
            (
                "a[0]=1,a.b=2",
                "failed parsing --set data: unable to parse key: interface conversion: interface {} is []interface {}, not map[string]interface {}",
            ),
            ("a=x,b", "failed parsing --set data: key \"b\" has no value"),
        ];
        for (expr, want) in cases {
            let opts = ValueOptions {
                set: vec![expr.to_string()],
                ..Default::default()
            };
            let got = match opts.merge() {
                Ok(m) => json(&m),
                Err(e) => e.to_string(),
            };
            assert_eq!(&got, want, "--set {expr}");
        }
    }
}

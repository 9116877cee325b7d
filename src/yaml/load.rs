//! `fromYaml` and values loading: sigs.k8s.io/yaml.Unmarshal into
//! `interface{}`, i.e. go-yaml v2's `Unmarshal` (YAML 1.1 resolution, merge
//! keys, aliases, last duplicate wins, first document only) followed by the
//! JSON round trip (keys become strings, numbers become float64, NaN/Inf are
//! rejected).
//!
//! Parsing uses `saphyr-parser`'s event stream, or for plain block YAML the
//! same events from [`super::fast`]'s byte scanner; the decoding rules are a port
//! of go-yaml v2's `decode.go` (`scalar`, `mapping`, `merge`, `alias`) and
//! sigs.k8s.io/yaml's `convertToJSONableObject`. saphyr's error messages are
//! mapped to libyaml's wording and go-yaml's "line N:" rule so Helm's error
//! texts come out the same for the common mistakes.

use super::fast::{Bail, Fast};
use super::num::format_g;
use super::resolve::{Resolved, resolve_plain};
use super::{Mapping, Yaml};
use saphyr_parser::{Event, Parser, ScalarStyle, ScanError, Span, StrInput, Tag};
use std::borrow::Cow;
use std::collections::HashMap;

/// A load failure, with the exact text Helm shows (for example
/// `error converting YAML to JSON: yaml: line 3: mapping values are not allowed in this context`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct LoadError(pub String);

/// A scalar as sigs.k8s.io/yaml stores it into a Go `string` struct field
/// (Chart.yaml's `version`, `appVersion`, …): convertToJSONableObject turns
/// ints into decimal text, floats into `FormatFloat(f, 'g', -1, 32)` (so
/// `1.10` becomes "1.1" and `1.0` becomes "1") and bools into
/// "true"/"false". Use it on values loaded with [`Numbers::Yaml`], which
/// keeps yaml.v2's int/float distinction. `None` for null, lists and maps.
pub fn go_string_field(v: &Yaml) -> Option<String> {
    match v {
        Yaml::Str(s) => Some(s.clone()),
        Yaml::Int(i) => Some(i.to_string()),
        Yaml::Float(f) => Some(format_g(*f, true)),
        Yaml::Bool(b) => Some(b.to_string()),
        Yaml::Null | Yaml::Seq(_) | Yaml::Map(_) => None,
    }
}

/// How numbers come out of the loader.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Numbers {
    /// sigs.k8s.io/yaml: every number is a float64 (`Yaml::Float`), and NaN/Inf
    /// are an error (json.Marshal refuses them).
    Json,
    /// Plain yaml.v2: integers stay `Yaml::Int` (uint64 beyond i64 becomes a
    /// float), floats stay floats, NaN/Inf allowed.
    Yaml,
}

/// sigs.k8s.io/yaml.Unmarshal(text, &interface{}): the first document in
/// Helm's JSON model. An empty or null document is `Yaml::Null`.
pub fn from_yaml(text: &str) -> Result<Yaml, LoadError> {
    load(text, Numbers::Json)
}

/// yaml.v2 decoding of the first document with the chosen number model.
/// Errors carry Helm's full text for the JSON mode ("error converting YAML to
/// JSON: …"); in `Numbers::Yaml` mode they are go-yaml's own ("yaml: …").
pub fn load(text: &str, numbers: Numbers) -> Result<Yaml, LoadError> {
    load_with(text, numbers, None)
}

/// What [`from_yaml_pruned`] does with a mapping entry, by key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Keep {
    /// Leave the entry out of the result.
    Skip,
    /// Decode the value whole.
    Whole,
    /// The value is a mapping whose entries are chosen again (one level
    /// deeper); any other value is decoded whole.
    Descend,
}

/// Chooses mapping entries by key and depth (see [`from_yaml_pruned`]).
pub type KeepFn<'k> = &'k dyn Fn(&str, usize) -> Keep;

/// [`from_yaml`] for a caller that reads a few fields of a big document
/// (Helm's manifest heads: `apiVersion`, `kind`, `metadata.name`,
/// `metadata.annotations` of every rendered CRD). The whole document is
/// still parsed, so every syntax or decoding error is the same as
/// [`from_yaml`]'s, but entries of the top mapping (depth 0) and of
/// descended mappings (depth 1, …) are kept only as `keep(key, depth)`
/// says; skipped values are never built. Documents whose meaning could
/// depend on a skipped value (anchors, aliases, merge keys, NaN/Inf, keys
/// JSON cannot take) are decoded whole and then pruned the same way.
pub fn from_yaml_pruned(text: &str, keep: &dyn Fn(&str, usize) -> Keep) -> Result<Yaml, LoadError> {
    load_with(text, Numbers::Json, Some(keep))
}

fn load_with(text: &str, numbers: Numbers, keep: Option<KeepFn<'_>>) -> Result<Yaml, LoadError> {
    let wrap = |m: String| match numbers {
        Numbers::Json => LoadError(format!("error converting YAML to JSON: {m}")),
        Numbers::Yaml => LoadError(m),
    };
    // readerc.go: yaml.v2 refuses input characters outside YAML's printable
    // set before parsing anything.
    if !all_yaml_chars(text) {
        return Err(wrap("yaml: control characters are not allowed".into()));
    }
    // Plain block YAML (nearly every values file and manifest) goes
    // through the fast scanner; whatever it gives up on, saphyr reads.
    if let Some(v) = load_fast(text, numbers, keep) {
        return Ok(v);
    }
    load_saphyr(text, numbers, keep).map_err(wrap)
}

/// The document read by the fast scanner: `None` when it gave up, or when
/// the document holds an error (saphyr's path words those).
pub(super) fn load_fast(text: &str, numbers: Numbers, keep: Option<KeepFn<'_>>) -> Option<Yaml> {
    let fast = Fast::new(text).ok()?;
    Loader::new(text, Events::Fast(fast), numbers, keep)
        .document()
        .ok()
}

/// The document read by saphyr, any YAML; errors as go-yaml words them
/// (without the JSON step's prefix).
pub(super) fn load_saphyr(text: &str, numbers: Numbers, keep: Option<KeepFn<'_>>) -> Res<Yaml> {
    let mut patched: Option<String> = None;
    // saphyr follows YAML 1.2 in refusing a tab as the separator after an
    // indicator (`a:\tb`, `-\tx`), which libyaml accepts. Such a tab is pure
    // separation, so it is replaced by a space and the text parsed again.
    // Likewise saphyr requires lines inside a flow collection (`args: [` …
    // `]`) or a multi-line quoted scalar to be indented deeper than the
    // enclosing block, which libyaml does not check; leading white space on
    // such lines is insignificant (line folding drops it), so the line is
    // indented further and the text parsed again.
    for _ in 0..256 {
        let src = patched.as_deref().unwrap_or(text);
        let mut l = Loader::new(
            src,
            Events::Saphyr(Box::new(Parser::new_from_str(src))),
            numbers,
            keep,
        );
        let result = l.document();
        if l.skim_aborted
            && let Some(keep) = keep
        {
            // Decode whole, then prune to the entries skimming would keep.
            return load_saphyr(src, numbers, None).map(|v| prune(v, keep, 0));
        }
        match result {
            Ok(v) => return Ok(v),
            Err(e) => match (l.tab_after_indicator, l.indent_pad) {
                (Some(at), _) => {
                    let mut t = src.to_string();
                    t.replace_range(at..at + 1, " ");
                    patched = Some(t);
                }
                (None, Some((at, n))) => {
                    let mut t = src.to_string();
                    t.insert_str(at, &" ".repeat(n));
                    patched = Some(t);
                }
                (None, None) => return Err(e),
            },
        }
    }
    Err("yaml: did not find expected key".into())
}

/// Files as bytes: libyaml's reader decodes UTF-8 itself and reports the
/// first bad sequence ("invalid leading UTF-8 octet", "invalid trailing
/// UTF-8 octet", "incomplete UTF-8 octet sequence", …) or control character,
/// in file order, before any parsing.
pub fn check_input(bytes: &[u8]) -> Result<&str, LoadError> {
    // Fast path for the usual file: valid UTF-8 (which already excludes
    // surrogates, overlong forms and values past U+10FFFF) whose characters
    // are all allowed. Only a file that fails it is walked byte by byte to
    // find the first problem, as libyaml reports it.
    if let Ok(text) = std::str::from_utf8(bytes)
        && all_yaml_chars(text)
    {
        return Ok(text);
    }
    let fail = |m: &str| LoadError(format!("error converting YAML to JSON: yaml: {m}"));
    let mut i = 0;
    while i < bytes.len() {
        let o = bytes[i];
        let width = if o & 0x80 == 0 {
            1
        } else if o & 0xe0 == 0xc0 {
            2
        } else if o & 0xf0 == 0xe0 {
            3
        } else if o & 0xf8 == 0xf0 {
            4
        } else {
            return Err(fail("invalid leading UTF-8 octet"));
        };
        if width > bytes.len() - i {
            return Err(fail("incomplete UTF-8 octet sequence"));
        }
        let mut value: u32 = match width {
            1 => (o & 0x7f) as u32,
            2 => (o & 0x1f) as u32,
            3 => (o & 0x0f) as u32,
            _ => (o & 0x07) as u32,
        };
        for k in 1..width {
            let t = bytes[i + k];
            if t & 0xc0 != 0x80 {
                return Err(fail("invalid trailing UTF-8 octet"));
            }
            value = (value << 6) + (t & 0x3f) as u32;
        }
        let ok_len = match width {
            1 => true,
            2 => value >= 0x80,
            3 => value >= 0x800,
            _ => value >= 0x10000,
        };
        if !ok_len {
            return Err(fail("invalid length of a UTF-8 sequence"));
        }
        if (0xd800..=0xdfff).contains(&value) || value > 0x10ffff {
            return Err(fail("invalid Unicode character"));
        }
        if !char::from_u32(value).is_some_and(is_yaml_char) {
            return Err(fail("control characters are not allowed"));
        }
        i += width;
    }
    std::str::from_utf8(bytes).map_err(|_| fail("invalid leading UTF-8 octet"))
}

/// [`from_yaml_map`] for a file's bytes (see [`check_input`]).
pub fn from_yaml_map_bytes(bytes: &[u8], go_type: &str) -> Result<Mapping, LoadError> {
    from_yaml_map(check_input(bytes)?, go_type)
}

/// Whether every character passes [`is_yaml_char`]: a byte loop over
/// blocks of ASCII text (this runs over every values file and rendered
/// manifest), the character decoder only for the blocks that hold
/// something else. One `é` in a comment must not send the whole file
/// through the decoder (vault's values.yaml: 2.3 M instructions that way).
fn all_yaml_chars(text: &str) -> bool {
    // Each block is folded without short-circuit, so the compiler
    // vectorises the check (it runs over megabytes of rendered CRDs).
    const BLOCK: usize = 64;
    let ascii_ok = |b: u8| (0x20..=0x7e).contains(&b) | (b == 0x09) | (b == 0x0a) | (b == 0x0d);
    let bytes = text.as_bytes();
    // `at` is always a character boundary: the start, the end of a block
    // of ASCII bytes, or the end of a decoded character.
    let mut at = 0;
    while at < bytes.len() {
        let end = (at + BLOCK).min(bytes.len());
        if bytes[at..end].iter().fold(true, |ok, &b| ok & ascii_ok(b)) {
            at = end;
            continue;
        }
        for c in text[at..].chars() {
            if !is_yaml_char(c) {
                return false;
            }
            at += c.len_utf8();
            if at >= end {
                break;
            }
        }
    }
    true
}

/// libyaml's reader check: TAB, LF, CR, printable ASCII, NEL, and the
/// printable Unicode ranges.
fn is_yaml_char(c: char) -> bool {
    let v = c as u32;
    matches!(v, 0x09 | 0x0a | 0x0d | 0x20..=0x7e | 0x85 | 0xa0..=0xd7ff | 0xe000..=0xfffd)
        || v >= 0x10000
}

/// sigs.k8s.io/yaml.Unmarshal into a `map[string]interface{}` (Helm's
/// `fromYaml`, values files with `go_type` "chartutil.Values"): a null
/// document gives an empty map, a non-mapping document the json decoder's error.
pub fn from_yaml_map(text: &str, go_type: &str) -> Result<Mapping, LoadError> {
    match from_yaml(text)? {
        Yaml::Null => Ok(Mapping::new()),
        Yaml::Map(m) => Ok(m),
        other => Err(LoadError(format!(
            "error unmarshaling JSON: while decoding JSON: json: cannot unmarshal {} into Go value of type {go_type}",
            json_kind(&other)
        ))),
    }
}

/// sigs.k8s.io/yaml.Unmarshal into a `[]interface{}` (Helm's `fromYamlArray`).
pub fn from_yaml_array(text: &str) -> Result<Vec<Yaml>, LoadError> {
    match from_yaml(text)? {
        Yaml::Null => Ok(Vec::new()),
        Yaml::Seq(s) => Ok(s),
        other => Err(LoadError(format!(
            "error unmarshaling JSON: while decoding JSON: json: cannot unmarshal {} into Go value of type []interface {{}}",
            json_kind(&other)
        ))),
    }
}

/// encoding/json's name for a JSON value kind in UnmarshalTypeError.
fn json_kind(v: &Yaml) -> &'static str {
    match v {
        Yaml::Null => "null",
        Yaml::Bool(_) => "bool",
        Yaml::Int(_) | Yaml::Float(_) => "number",
        Yaml::Str(_) => "string",
        Yaml::Seq(_) => "array",
        Yaml::Map(_) => "object",
    }
}

pub(super) type Res<T> = Result<T, String>;

/// Where a [`Loader`] takes its events from.
enum Events<'a> {
    /// The plain block subset, fast (see [`super::fast`]).
    Fast(Fast<'a>),
    /// Any YAML, with libyaml-like errors.
    /// (Boxed: the fast scanner is the usual one and much smaller.)
    Saphyr(Box<Parser<'a, StrInput<'a>>>),
}

struct Loader<'a> {
    events: Events<'a>,
    src: &'a str,
    /// Completed anchored nodes by saphyr anchor id (decoded values).
    anchors: HashMap<usize, Yaml>,
    /// Anchors whose node is still being read (an alias to one of them is a
    /// self-reference).
    in_progress: Vec<usize>,
    numbers: Numbers,
    decode_count: usize,
    alias_count: usize,
    /// (char index, byte offset) of the last position converted.
    cursor: (usize, usize),
    /// The source is ASCII: char indices are byte offsets.
    ascii: bool,
    /// Byte offset of a tab after `:`/`-`/`?` that saphyr refused.
    tab_after_indicator: Option<usize>,
    /// (byte offset of a line start, spaces to insert there): a line inside
    /// a flow collection or quoted scalar that saphyr found under-indented.
    indent_pad: Option<(usize, usize)>,
    /// go-yaml parses the whole document before decoding it, so a syntax
    /// error anywhere wins over a decoding error (bad `!!int`, merge of a
    /// non-map, …); the first decoding error waits here.
    decode_err: Option<String>,
    /// Likewise sigs.k8s.io's key conversion runs after decoding.
    key_err: Option<String>,
    /// A NaN or ±Inf was decoded somewhere. Only then is the finished tree
    /// walked for the JSON step's check (it may since have been dropped by a
    /// later duplicate key); the walk cost as much as parsing on big CRDs.
    non_finite: std::cell::Cell<bool>,
    /// Set by [`from_yaml_pruned`]: which mapping entries to build.
    keep: Option<KeepFn<'a>>,
    /// Skimming met something that needs the whole tree (see
    /// [`from_yaml_pruned`]); the document is decoded again in full.
    skim_aborted: bool,
}

/// The entries `keep` chooses, as [`from_yaml_pruned`] would skim them.
fn prune(v: Yaml, keep: &dyn Fn(&str, usize) -> Keep, depth: usize) -> Yaml {
    match v {
        Yaml::Map(m) => Yaml::Map(
            m.into_iter()
                .filter_map(|(k, v)| match keep(&k, depth) {
                    Keep::Skip => None,
                    Keep::Whole => Some((k, v)),
                    Keep::Descend => {
                        let v = prune(v, keep, depth + 1);
                        Some((k, v))
                    }
                })
                .collect(),
        ),
        other => other,
    }
}

const SKIM_ABORT: &str = "skim aborted";

/// A decoded scalar before the JSON step (Go types of yaml.v2 decoding).
enum Raw {
    Null,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Float(f64),
    Str(String),
}

impl<'a> Loader<'a> {
    fn new(src: &'a str, events: Events<'a>, numbers: Numbers, keep: Option<KeepFn<'a>>) -> Self {
        Loader {
            events,
            src,
            anchors: HashMap::new(),
            in_progress: Vec::new(),
            numbers,
            decode_count: 0,
            alias_count: 0,
            cursor: (0, 0),
            ascii: src.is_ascii(),
            tab_after_indicator: None,
            indent_pad: None,
            decode_err: None,
            key_err: None,
            non_finite: std::cell::Cell::new(false),
            keep,
            skim_aborted: false,
        }
    }

    fn next(&mut self) -> Res<(Event<'a>, Span)> {
        let parser = match &mut self.events {
            Events::Fast(f) => {
                return f
                    .next_event()
                    .map_err(|Bail| "yaml: outside the fast subset".into());
            }
            Events::Saphyr(p) => p,
        };
        match parser.next_event() {
            Some(Ok(ev)) => Ok(ev),
            Some(Err(e)) => Err(self.scan_error(&e)),
            None => Ok((Event::StreamEnd, Span::default())),
        }
    }

    fn document(&mut self) -> Res<Yaml> {
        loop {
            let (ev, span) = self.next()?;
            match ev {
                Event::StreamStart | Event::Nothing => continue,
                Event::StreamEnd => return Ok(Yaml::Null),
                Event::DocumentStart(_) => {
                    let (ev, span) = self.next()?;
                    if matches!(ev, Event::DocumentEnd | Event::StreamEnd) {
                        return Ok(Yaml::Null);
                    }
                    let v = self.top_node(ev, span)?;
                    return self.finish_value(v);
                }
                other => {
                    let v = self.top_node(other, span)?;
                    return self.finish_value(v);
                }
            }
        }
    }

    fn top_node(&mut self, ev: Event<'a>, span: Span) -> Res<Yaml> {
        match self.keep {
            Some(keep) => self.pruned_node(ev, span, keep, 0),
            None => self.node(ev, span),
        }
    }

    /// Stops skimming: the document is decoded again in full.
    fn abort_skim(&mut self) -> String {
        self.skim_aborted = true;
        SKIM_ABORT.into()
    }

    /// `node` for a mapping whose entries `keep` chooses at `depth`; the
    /// events of skipped values go through [`Self::skip`], which makes every
    /// check `node` makes but builds nothing.
    fn pruned_node(
        &mut self,
        ev: Event<'a>,
        span: Span,
        keep: &dyn Fn(&str, usize) -> Keep,
        depth: usize,
    ) -> Res<Yaml> {
        let Event::MappingStart(anchor, _) = ev else {
            return self.node(ev, span);
        };
        self.count(1, false)?;
        if anchor > 0 {
            return Err(self.abort_skim());
        }
        let mut map = Mapping::new();
        loop {
            let (ev, span) = self.next()?;
            match ev {
                Event::MappingEnd => break,
                Event::Scalar(ref v, ScalarStyle::Plain, 0, _) if v == "<<" => {
                    return Err(self.abort_skim());
                }
                ev => {
                    let key = self.key(ev, span)?;
                    let (ev, span) = self.next()?;
                    let k = match key {
                        Ok(k) => k,
                        Err(Some(_)) => return Err(self.abort_skim()),
                        Err(None) => {
                            self.skip(ev, span)?;
                            continue;
                        }
                    };
                    match keep(&k, depth) {
                        Keep::Skip => self.skip(ev, span)?,
                        Keep::Whole => {
                            let v = self.node(ev, span)?;
                            map.insert(k, v);
                        }
                        Keep::Descend => {
                            let v = self.pruned_node(ev, span, keep, depth + 1)?;
                            map.insert(k, v);
                        }
                    }
                }
            }
        }
        if self.non_finite.get() || !self.anchors.is_empty() {
            return Err(self.abort_skim());
        }
        Ok(Yaml::Map(map))
    }

    /// Reads a value's events as `node` would, with the same checks and
    /// deferred decoding errors, without building it. Anything whose effect
    /// reaches beyond the value (anchors, aliases, merges) or that the JSON
    /// step judges on the finished tree (NaN/Inf) stops skimming.
    fn skip(&mut self, ev: Event<'a>, span: Span) -> Res<()> {
        self.count(1, false)?;
        match ev {
            Event::Scalar(value, style, anchor, tag) => {
                if anchor > 0 {
                    return Err(self.abort_skim());
                }
                if style == ScalarStyle::DoubleQuoted && value.contains('/') {
                    self.check_escapes(span)?;
                }
                // Quoted untagged scalars are strings: nothing to check.
                if tag.is_some() || style == ScalarStyle::Plain {
                    match scalar(value, style, tag.as_deref()) {
                        Err(e) => self.defer(e),
                        Ok(Raw::Float(f)) if !f.is_finite() => return Err(self.abort_skim()),
                        Ok(_) => {}
                    }
                }
                Ok(())
            }
            Event::Alias(_) => Err(self.abort_skim()),
            Event::SequenceStart(anchor, _) => {
                if anchor > 0 {
                    return Err(self.abort_skim());
                }
                loop {
                    let (ev, span) = self.next()?;
                    match ev {
                        Event::SequenceEnd => return Ok(()),
                        ev => self.skip(ev, span)?,
                    }
                }
            }
            Event::MappingStart(anchor, _) => {
                if anchor > 0 {
                    return Err(self.abort_skim());
                }
                loop {
                    let (ev, span) = self.next()?;
                    match ev {
                        Event::MappingEnd => return Ok(()),
                        Event::Scalar(ref v, ScalarStyle::Plain, 0, _) if v == "<<" => {
                            return Err(self.abort_skim());
                        }
                        ev => {
                            let key = self.key(ev, span)?;
                            if let Err(Some(_)) = key {
                                return Err(self.abort_skim());
                            }
                            let (ev, span) = self.next()?;
                            self.skip(ev, span)?;
                        }
                    }
                }
            }
            Event::StreamEnd | Event::DocumentEnd => Ok(()),
            _ => Err("yaml: did not find expected node content".into()),
        }
    }

    /// The JSON step's whole-document check: json.Marshal refuses NaN/Inf.
    fn finish_value(&mut self, v: Yaml) -> Res<Yaml> {
        if let Some(e) = self.decode_err.take() {
            return Err(e);
        }
        if let Some(e) = self.key_err.take() {
            return Err(e);
        }
        if self.numbers == Numbers::Json && self.non_finite.get() {
            find_non_finite(&v)?;
        }
        Ok(v)
    }

    /// Records a decoding error (the first one wins) and lets parsing go on.
    fn defer(&mut self, e: String) {
        if self.decode_err.is_none() {
            self.decode_err = Some(e);
        }
    }

    fn count(&mut self, n: usize, alias: bool) -> Res<()> {
        self.decode_count += n;
        if alias {
            self.alias_count += n;
        }
        // decode.go: allowedAliasRatio
        if self.alias_count > 100 && self.decode_count > 1000 {
            let d = self.decode_count as f64;
            let allowed = if self.decode_count <= 400_000 {
                0.99
            } else if self.decode_count >= 4_000_000 {
                0.10
            } else {
                0.99 - 0.89 * ((d - 400_000.0) / 3_600_000.0)
            };
            if self.alias_count as f64 / d > allowed {
                return Err("yaml: document contains excessive aliasing".into());
            }
        }
        Ok(())
    }

    fn node(&mut self, ev: Event<'a>, span: Span) -> Res<Yaml> {
        self.count(1, false)?;
        match ev {
            Event::Scalar(value, style, anchor, tag) => {
                if style == ScalarStyle::DoubleQuoted && value.contains('/') {
                    self.check_escapes(span)?;
                }
                let raw = scalar(value, style, tag.as_deref()).unwrap_or_else(|e| {
                    self.defer(e);
                    Raw::Null
                });
                let v = self.raw_value(raw);
                if anchor > 0 {
                    self.anchors.insert(anchor, v.clone());
                }
                Ok(v)
            }
            Event::Alias(id) => self.alias(id, span),
            Event::SequenceStart(anchor, _) => {
                if anchor > 0 {
                    self.in_progress.push(anchor);
                }
                let mut items = Vec::new();
                loop {
                    let (ev, span) = self.next()?;
                    match ev {
                        Event::SequenceEnd => break,
                        ev => items.push(self.node(ev, span)?),
                    }
                }
                let v = Yaml::Seq(items);
                self.register(anchor, &v);
                Ok(v)
            }
            Event::MappingStart(anchor, _) => {
                if anchor > 0 {
                    self.in_progress.push(anchor);
                }
                let mut map = Mapping::new();
                loop {
                    let (ev, span) = self.next()?;
                    match ev {
                        Event::MappingEnd => break,
                        Event::Scalar(ref v, ScalarStyle::Plain, 0, ref tag)
                            if v == "<<" && tag.as_deref().is_none_or(is_merge_tag) =>
                        {
                            let (ev, span) = self.next()?;
                            let via_alias = matches!(ev, Event::Alias(_));
                            let src = self.node(ev, span)?;
                            // decode.go merge: an alias must name a mapping
                            // (not a sequence of them).
                            if via_alias && !matches!(src, Yaml::Map(_)) {
                                self.defer(MERGE_WANT.into());
                            } else if let Err(e) = merge(&mut map, src) {
                                self.defer(e);
                            }
                        }
                        ev => {
                            let key = self.key(ev, span)?;
                            let (ev, span) = self.next()?;
                            let value = self.node(ev, span)?;
                            match key {
                                Ok(k) => {
                                    map.insert(k, value);
                                }
                                Err(Some(prefix)) => {
                                    if self.key_err.is_none() {
                                        self.key_err = Some(format!(
                                            "{prefix}, value: {}",
                                            go_sharp_v(&value)
                                        ));
                                    }
                                }
                                Err(None) => {}
                            }
                        }
                    }
                }
                let v = Yaml::Map(map);
                self.register(anchor, &v);
                Ok(v)
            }
            Event::StreamEnd | Event::DocumentEnd => Ok(Yaml::Null),
            _ => Err("yaml: did not find expected node content".into()),
        }
    }

    /// Byte offset of saphyr's character index `ci`, walking forward from the
    /// last conversion (events arrive in source order).
    fn byte_at(&mut self, ci: usize) -> usize {
        if self.ascii {
            return ci.min(self.src.len());
        }
        let (mut c, mut b) = self.cursor;
        if ci < c {
            (c, b) = (0, 0);
        }
        for ch in self.src[b..].chars() {
            if c == ci {
                break;
            }
            c += 1;
            b += ch.len_utf8();
        }
        self.cursor = (c, b);
        b
    }

    /// libyaml (YAML 1.1) has no `\/` escape, which saphyr (YAML 1.2)
    /// accepts: reject it with libyaml's scanner error.
    fn check_escapes(&mut self, span: Span) -> Res<()> {
        let start = self.byte_at(span.start.index());
        let end = self.byte_at(span.end.index()).max(start);
        let text = &self.src[start..end];
        let b = text.as_bytes();
        let mut i = 0;
        while i + 1 < b.len() {
            if b[i] == b'\\' {
                if b[i + 1] == b'/' {
                    let line = self.src[..start + i].matches('\n').count() + 1;
                    return Err(if line <= 1 {
                        "yaml: found unknown escape character".into()
                    } else {
                        format!("yaml: line {line}: found unknown escape character")
                    });
                }
                i += 2;
            } else {
                i += 1;
            }
        }
        Ok(())
    }

    fn register(&mut self, anchor: usize, v: &Yaml) {
        if anchor > 0 {
            self.in_progress.retain(|a| *a != anchor);
            self.anchors.insert(anchor, v.clone());
        }
    }

    fn alias(&mut self, id: usize, span: Span) -> Res<Yaml> {
        if self.in_progress.contains(&id) {
            let e = format!(
                "yaml: anchor '{}' value contains itself",
                self.alias_name(span)
            );
            self.defer(e);
            return Ok(Yaml::Null);
        }
        match self.anchors.get(&id) {
            Some(v) => {
                let v = v.clone();
                self.count(node_count(&v), true)?;
                Ok(v)
            }
            None => Err(format!(
                "yaml: unknown anchor '{}' referenced",
                self.alias_name(span)
            )),
        }
    }

    /// The anchor name written after `*` at the alias's position.
    fn alias_name(&self, span: Span) -> String {
        let start = char_to_byte(self.src, span.start.index());
        let rest = &self.src[start..];
        let rest = rest.strip_prefix('*').unwrap_or(rest);
        rest.chars()
            .take_while(|c| !c.is_whitespace() && !",[]{}".contains(*c))
            .collect()
    }

    /// A mapping key as sigs.k8s.io/yaml turns it into a JSON object key:
    /// `Ok(key)`, or `Err(Some(prefix))` for a key JSON cannot take (the
    /// message still needs the value), or `Err(None)` when a decoding error
    /// was recorded instead.
    fn key(&mut self, ev: Event<'a>, span: Span) -> Res<Result<String, Option<String>>> {
        let raw = match ev {
            Event::Scalar(value, style, anchor, tag) => {
                self.count(1, false)?;
                if style == ScalarStyle::DoubleQuoted && value.contains('/') {
                    self.check_escapes(span)?;
                }
                let raw = match scalar(value, style, tag.as_deref()) {
                    Ok(r) => r,
                    Err(e) => {
                        self.defer(e);
                        return Ok(Err(None));
                    }
                };
                if anchor > 0 {
                    let v = self.raw_value_keep(&raw);
                    self.anchors.insert(anchor, v);
                }
                raw
            }
            ev => match self.node(ev, span)? {
                v @ (Yaml::Seq(_) | Yaml::Map(_)) => {
                    self.defer(format!("yaml: invalid map key: {}", go_sharp_v(&v)));
                    return Ok(Err(None));
                }
                Yaml::Str(s) => Raw::Str(s),
                Yaml::Bool(b) => Raw::Bool(b),
                Yaml::Int(i) => Raw::Int(i),
                Yaml::Float(f) => Raw::Float(f),
                Yaml::Null => Raw::Null,
            },
        };
        Ok(key_string(raw).map_err(Some))
    }

    fn raw_value(&self, raw: Raw) -> Yaml {
        match raw {
            Raw::Null => Yaml::Null,
            Raw::Bool(b) => Yaml::Bool(b),
            Raw::Int(i) => match self.numbers {
                Numbers::Json => Yaml::Float(i as f64),
                Numbers::Yaml => Yaml::Int(i),
            },
            Raw::Uint(u) => Yaml::Float(u as f64),
            Raw::Float(f) => {
                if !f.is_finite() {
                    self.non_finite.set(true);
                }
                Yaml::Float(f)
            }
            Raw::Str(s) => Yaml::Str(s),
        }
    }

    fn raw_value_keep(&self, raw: &Raw) -> Yaml {
        let copy = match raw {
            Raw::Null => Raw::Null,
            Raw::Bool(b) => Raw::Bool(*b),
            Raw::Int(i) => Raw::Int(*i),
            Raw::Uint(u) => Raw::Uint(*u),
            Raw::Float(f) => Raw::Float(*f),
            Raw::Str(s) => Raw::Str(s.clone()),
        };
        self.raw_value(copy)
    }

    /// Maps a saphyr error to libyaml's problem text and go-yaml's
    /// `parser.fail` line rule: scanner errors report the 1-based line,
    /// parser errors the 0-based line of the problem mark, and no "line N: "
    /// part at all when that number is 0.
    fn scan_error(&mut self, e: &ScanError) -> String {
        let info = e.info();
        if info.contains("whitespace") || info.contains("tab") {
            let at = char_to_byte(self.src, e.marker().index());
            let line_start = self.src[..at].rfind('\n').map_or(0, |i| i + 1);
            let b = self.src.as_bytes();
            self.tab_after_indicator = (line_start..b.len().saturating_sub(1))
                .take_while(|&i| b[i] != b'\n')
                .find(|&i| matches!(b[i], b':' | b'-' | b'?') && b[i + 1] == b'\t')
                .map(|i| i + 1);
        }
        if info.starts_with("invalid indentation") && !info.contains("anchor") {
            self.indent_pad = under_indented_line(
                self.src,
                char_to_byte(self.src, e.marker().index()),
                info.contains("quoted"),
            );
        }
        if info.contains("unknown anchor") {
            let span = Span::new(*e.marker(), *e.marker());
            return format!(
                "yaml: unknown anchor '{}' referenced",
                self.alias_name(span)
            );
        }
        let mut line1 = e.marker().line();
        let at = char_to_byte(self.src, e.marker().index());
        let (mut msg, mut scanner) = map_message(info);
        let line_start = self.src[..at].rfind('\n').map_or(0, |i| i + 1);
        let before = self.src[line_start..at].trim_end();
        if msg == "found unexpected end of stream" {
            // libyaml reports the end of the input, not the scalar's start.
            line1 = self.src.matches('\n').count() + 1;
        } else if info.contains("misplaced bracket")
            && !before.is_empty()
            && !before.ends_with([':', '-', ',', '[', '{'])
        {
            // A closing bracket after a complete block value: libyaml's
            // block-mapping parser wants the next key.
            msg = "did not find expected key";
        } else if msg == "did not find expected key" && self.src[line_start..].starts_with('\t') {
            // libyaml's scanner stops at the tab first (block scalar
            // indentation).
            msg = "found a tab character where an indentation space is expected";
            scanner = true;
        } else if info.contains("plain scalar, found a tab") {
            // The tab is on a continuation line of the plain scalar.
            if let Some(t) = self.src[at..].find('\t') {
                line1 = self.src[..at + t].matches('\n').count() + 1;
            }
            msg = "found a tab character that violates indentation";
            scanner = true;
        } else if info.contains("illegal placement of ':'") {
            msg = match innermost_flow(&self.src[..at]) {
                Some('{') => "did not find expected ',' or '}'",
                _ => "did not find expected ',' or ']'",
            };
            scanner = false;
        }
        let line = if scanner {
            line1
        } else {
            line1.saturating_sub(1)
        };
        // go-yaml: a problem on the first line prints no position (its
        // 0-based line is 0) for scanner errors; same for parser errors.
        if line1 <= 1 {
            format!("yaml: {msg}")
        } else {
            format!("yaml: line {line}: {msg}")
        }
    }
}

/// The line to indent further after saphyr's "invalid indentation" inside a
/// flow collection (`at` is on the offending line) or "… in quoted scalar"
/// (`at` is the opening quote; the offending line is the first later one
/// indented no deeper than the quote's line). Returns (line start, spaces)
/// so that the line ends one column deeper than the nearest earlier content
/// line (the quote's line for quoted scalars). Lines starting with a document
/// marker are left alone: libyaml fails on those too.
fn under_indented_line(src: &str, at: usize, quoted: bool) -> Option<(usize, usize)> {
    let indent = |l: &str| l.len() - l.trim_start_matches(' ').len();
    let line_start = src[..at].rfind('\n').map_or(0, |i| i + 1);
    let (start, need) = if quoted {
        let line_end = src[at..].find('\n').map_or(src.len(), |i| at + i);
        let need = indent(&src[line_start..line_end]) + 1;
        let mut pos = line_end + 1;
        loop {
            if pos >= src.len() {
                return None;
            }
            let end = src[pos..].find('\n').map_or(src.len(), |i| pos + i);
            let line = &src[pos..end];
            if !line.trim().is_empty() && indent(line) < need {
                break (pos, need);
            }
            pos = end + 1;
        }
    } else {
        let need = src[..line_start]
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
            .map_or(0, indent)
            + 1;
        (line_start, need)
    };
    let line = &src[start..];
    if line.starts_with("---") || line.starts_with("...") {
        return None;
    }
    Some((start, need.saturating_sub(indent(line)).max(1)))
}

/// Merges a `<<` value into `map` (decode.go `merge`): a mapping, or a
/// sequence of mappings where earlier ones win; merged keys overwrite keys
/// already set because go-yaml decodes them into the same map.
const MERGE_WANT: &str = "yaml: map merge requires map or sequence of maps as the value";

fn merge(map: &mut Mapping, src: Yaml) -> Res<()> {
    const WANT: &str = MERGE_WANT;
    match src {
        Yaml::Map(m) => {
            map.extend(m);
            Ok(())
        }
        Yaml::Seq(items) => {
            if !items.iter().all(|i| matches!(i, Yaml::Map(_))) {
                return Err(WANT.into());
            }
            for item in items.into_iter().rev() {
                if let Yaml::Map(m) = item {
                    map.extend(m);
                }
            }
            Ok(())
        }
        _ => Err(WANT.into()),
    }
}

fn is_merge_tag(t: &Tag) -> bool {
    t.is_yaml_core_schema() && t.suffix == "merge"
}

/// decode.go `scalar` for an `interface{}` target.
fn scalar(value: Cow<'_, str>, style: ScalarStyle, tag: Option<&Tag>) -> Res<Raw> {
    let Some(tag) = tag else {
        if style != ScalarStyle::Plain {
            return Ok(Raw::Str(value.into_owned()));
        }
        return Ok(match resolve_plain(&value) {
            Resolved::Null => Raw::Null,
            Resolved::Bool(b) => Raw::Bool(b),
            Resolved::Int(i) => Raw::Int(i),
            Resolved::Uint(u) => Raw::Uint(u),
            Resolved::Float(f) => Raw::Float(f),
            Resolved::Timestamp | Resolved::Merge | Resolved::Str => Raw::Str(value.into_owned()),
        });
    };
    if !tag.is_yaml_core_schema() {
        // Non-specific `!` and application tags: yaml.v2 keeps the text.
        return Ok(Raw::Str(value.into_owned()));
    }
    let want = tag.suffix.as_str();
    match want {
        "str" => return Ok(Raw::Str(value.into_owned())),
        "binary" => return decode_binary(&value),
        "bool" | "int" | "float" | "null" | "timestamp" => {}
        _ => return Ok(Raw::Str(value.into_owned())),
    }
    // resolve(tag, in): resolve as if implicit, then check the result
    // against the explicit tag (an int is accepted as a float).
    let r = resolve_plain(&value);
    let ok = matches!(
        (want, &r),
        ("bool", Resolved::Bool(_))
            | ("int", Resolved::Int(_) | Resolved::Uint(_))
            | ("float", Resolved::Float(_))
            | ("null", Resolved::Null)
            | ("timestamp", Resolved::Timestamp)
    );
    if !ok {
        if want == "float" {
            match r {
                Resolved::Int(i) => return Ok(Raw::Float(i as f64)),
                Resolved::Uint(u) => return Ok(Raw::Float(u as f64)),
                _ => {}
            }
        }
        return Err(format!(
            "yaml: cannot decode {} `{}` as a !!{}",
            r.short_tag(),
            value,
            want
        ));
    }
    Ok(match r {
        Resolved::Null => Raw::Null,
        Resolved::Bool(b) => Raw::Bool(b),
        Resolved::Int(i) => Raw::Int(i),
        Resolved::Uint(u) => Raw::Uint(u),
        Resolved::Float(f) => Raw::Float(f),
        _ => Raw::Str(value.into_owned()),
    })
}

/// `!!binary`: Go's base64.StdEncoding (which skips '\r' and '\n'); the
/// bytes become a Go string, and json.Marshal turns each invalid UTF-8 byte
/// into U+FFFD.
fn decode_binary(value: &str) -> Res<Raw> {
    use base64::Engine;
    let cleaned: String = value.chars().filter(|c| *c != '\r' && *c != '\n').collect();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(cleaned.as_bytes())
        .map_err(|_| "yaml: !!binary value contains invalid base64 data".to_string())?;
    let mut s = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        s.push_str(chunk.valid());
        for _ in chunk.invalid() {
            s.push('\u{fffd}');
        }
    }
    Ok(Raw::Str(s))
}

/// convertToJSONableObject's key conversion.
fn key_string(raw: Raw) -> Res<String> {
    Ok(match raw {
        Raw::Str(s) => s,
        Raw::Int(i) => i.to_string(),
        Raw::Float(f) => match format_g(f, true).as_str() {
            "+Inf" => ".inf".into(),
            "-Inf" => "-.inf".into(),
            "NaN" => ".nan".into(),
            s => s.to_string(),
        },
        Raw::Bool(b) => b.to_string(),
        Raw::Uint(u) => {
            return Err(format!("unsupported map key of type: uint64, key: 0x{u:x}"));
        }
        Raw::Null => {
            return Err("unsupported map key of type: %!s(<nil>), key: <nil>".into());
        }
    })
}

fn find_non_finite(v: &Yaml) -> Res<()> {
    match v {
        Yaml::Float(f) if !f.is_finite() => {
            Err(format!("json: unsupported value: {}", format_g(*f, false)))
        }
        Yaml::Seq(items) => items.iter().try_for_each(find_non_finite),
        Yaml::Map(m) => m.values().try_for_each(find_non_finite),
        _ => Ok(()),
    }
}

fn node_count(v: &Yaml) -> usize {
    match v {
        Yaml::Seq(items) => 1 + items.iter().map(node_count).sum::<usize>(),
        Yaml::Map(m) => 1 + m.values().map(|v| 1 + node_count(v)).sum::<usize>(),
        _ => 1,
    }
}

/// Go's `%#v` for the values go-yaml and sigs.k8s.io/yaml print in key errors.
fn go_sharp_v(v: &Yaml) -> String {
    match v {
        Yaml::Null => "interface {}(nil)".into(),
        Yaml::Bool(b) => b.to_string(),
        Yaml::Int(i) => i.to_string(),
        Yaml::Float(f) => format_g(*f, false),
        Yaml::Str(s) => format!("{s:?}"),
        Yaml::Seq(items) => format!(
            "[]interface {{}}{{{}}}",
            items.iter().map(go_sharp_v).collect::<Vec<_>>().join(", ")
        ),
        Yaml::Map(m) => format!(
            "map[interface {{}}]interface {{}}{{{}}}",
            m.iter()
                .map(|(k, v)| format!("{k:?}:{}", go_sharp_v(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

fn char_to_byte(s: &str, ci: usize) -> usize {
    if s.is_ascii() {
        return ci.min(s.len());
    }
    s.char_indices().nth(ci).map_or(s.len(), |(b, _)| b)
}

/// The innermost unclosed flow bracket in `text` (quotes and comments
/// skipped roughly), for naming the flow collection an error is in.
fn innermost_flow(text: &str) -> Option<char> {
    let mut stack = Vec::new();
    let mut quote: Option<char> = None;
    let mut comment = false;
    for c in text.chars() {
        if comment {
            comment = c != '\n';
            continue;
        }
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None => match c {
                '"' | '\'' => quote = Some(c),
                '#' => comment = true,
                '[' | '{' => stack.push(c),
                ']' | '}' => {
                    stack.pop();
                }
                _ => {}
            },
        }
    }
    stack.pop()
}

/// saphyr message → (libyaml problem text, is a scanner error).
fn map_message(info: &str) -> (&str, bool) {
    const TABLE: &[(&str, &str, bool)] = &[
        (
            "mapping values are not allowed",
            "mapping values are not allowed in this context",
            true,
        ),
        ("unknown escape", "found unknown escape character", true),
        (
            "unexpected end of stream",
            "found unexpected end of stream",
            true,
        ),
        ("unexpected EOF", "found unexpected end of stream", true),
        (
            "tabs disallowed",
            "found character that cannot start any token",
            true,
        ),
        (
            "unexpected character",
            "found character that cannot start any token",
            true,
        ),
        (
            "cannot start any token",
            "found character that cannot start any token",
            true,
        ),
        (
            "expected ',' or ']'",
            "did not find expected ',' or ']'",
            false,
        ),
        (
            "expected ',' or '}'",
            "did not find expected ',' or '}'",
            false,
        ),
        (
            "misplaced bracket",
            "did not find expected node content",
            false,
        ),
        (
            "expected node content",
            "did not find expected node content",
            false,
        ),
        (
            "invalid trailing content",
            "did not find expected key",
            false,
        ),
        (
            "did not find expected '-'",
            "did not find expected '-' indicator",
            false,
        ),
        (
            "block sequence entries are not allowed",
            "block sequence entries are not allowed in this context",
            true,
        ),
        (
            "block sequence",
            "did not find expected '-' indicator",
            false,
        ),
        (
            "did not find expected key",
            "did not find expected key",
            false,
        ),
        ("block mapping", "did not find expected key", false),
        ("simple key", "could not find expected ':'", true),
    ];
    for (needle, text, scanner) in TABLE {
        if info.contains(needle) {
            return (text, *scanner);
        }
    }
    (info, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_char_check_finds_a_control_character_anywhere() {
        let line = "key: value\tand text\r\n".repeat(20);
        assert!(all_yaml_chars(&line));
        assert!(all_yaml_chars(&format!("{line}é ✓ \u{85}")));
        assert!(all_yaml_chars(&format!("é{line}✓{line}\u{10348}")));
        for at in [0, 63, 64, 100, line.len()] {
            for bad in ['\u{0}', '\u{7f}', '\u{1b}', '\u{fffe}'] {
                let mut t = line.clone();
                t.insert(at, bad);
                assert!(!all_yaml_chars(&t), "{bad:?} at {at}");
                // After a non-ASCII character earlier in the text, and
                // with one straddling the block boundary.
                for prefix in ["✓", "ab✓"] {
                    let t = format!("{prefix}{t}");
                    assert!(!all_yaml_chars(&t), "{bad:?} at {at} after {prefix}");
                }
            }
        }
    }

    /// The block-wise check says what checking every character says,
    /// wherever ASCII, multi-byte and refused characters fall.
    #[test]
    fn yaml_char_check_agrees_with_the_per_character_rule() {
        let alphabet = [
            'a',
            ' ',
            '\n',
            'é',
            '✓',
            '\u{10348}',
            '\u{85}',
            '\u{1b}',
            '\u{fffe}',
        ];
        let mut seed = 0x2545_f491_u32;
        for len in [1, 20, 63, 64, 65, 130, 300] {
            for _ in 0..200 {
                let text: String = (0..len)
                    .map(|_| {
                        seed ^= seed << 13;
                        seed ^= seed >> 17;
                        seed ^= seed << 5;
                        // Mostly ASCII letters, as in real files.
                        let r = seed as usize % 64;
                        if r < alphabet.len() { alphabet[r] } else { 'x' }
                    })
                    .collect();
                assert_eq!(
                    all_yaml_chars(&text),
                    text.chars().all(is_yaml_char),
                    "{text:?}"
                );
            }
        }
    }

    /// `from_yaml_pruned` must give what `from_yaml` gives, pruned, and the
    /// very same error, whatever the skipped parts hold.
    #[test]
    fn pruned_loading_matches_whole_loading() {
        let keep = |k: &str, depth: usize| match (depth, k) {
            (0, "kind") => Keep::Whole,
            (0, "metadata") => Keep::Descend,
            (1, "name") => Keep::Whole,
            _ => Keep::Skip,
        };
        let docs = [
            "kind: A\nmetadata:\n  name: n\n  labels: {a: b}\nspec: {x: [1, 2, {y: z}]}\n",
            "kind: A\nkind: B\nspec:\n  - a\n  - b: c\n",
            "kind: 1.5\nmetadata: null\n",
            "kind: A\nmetadata: [1]\n",
            "- kind: A\n",
            "",
            // syntax and decoding errors inside skipped values
            "kind: A\nspec:\n  a: [1, 2\n",
            "kind: A\nspec:\n  a: !!int x\n",
            "kind: A\nspec:\n  a: \"\\/\"\n",
            "kind: A\nspec:\n  ? [a, b]\n  : c\n",
            "kind: A\nspec:\n  a:\tb\n",
            // NaN/Inf, kept only if it survives
            "kind: A\nspec:\n  a: .nan\n",
            "kind: A\nspec:\n  a: .nan\n  a: 1\n",
            "kind: A\nspec: .inf\nspec: 2\n",
            // anchors, aliases and merges reaching the kept fields
            "spec: &k B\nkind: *k\n",
            "base: &b {kind: C}\n<<: *b\n",
            "kind: A\nmetadata:\n  <<: {name: m}\n",
            "kind: A\nspec: *nope\n",
            "kind: A\nspec: &a [*a]\n",
            "kind: A\nspec: {1.5: x, true: y, null: z}\n",
        ];
        for doc in docs {
            let whole = from_yaml(doc).map(|v| prune(v, &keep, 0));
            assert_eq!(from_yaml_pruned(doc, &keep), whole, "{doc:?}");
        }
    }

    fn j(s: &str) -> Yaml {
        match from_yaml(s) {
            Ok(v) => v,
            Err(e) => panic!("{s:?}: {e}"),
        }
    }

    #[test]
    fn yaml_numbers_and_string_fields() {
        let v = load(
            "version: 1.10\napp: 1.0\nnum: 12345678\nb: yes\n",
            Numbers::Yaml,
        )
        .unwrap_or_default();
        let Yaml::Map(m) = v else { panic!() };
        assert_eq!(m["num"], Yaml::Int(12345678));
        assert_eq!(go_string_field(&m["version"]).as_deref(), Some("1.1"));
        assert_eq!(go_string_field(&m["app"]).as_deref(), Some("1"));
        assert_eq!(go_string_field(&m["num"]).as_deref(), Some("12345678"));
        assert_eq!(go_string_field(&m["b"]).as_deref(), Some("true"));
    }

    #[test]
    fn merge_alias_must_be_a_map() {
        let e = from_yaml("l: &l [{a: 1}]\nm:\n  <<: *l\n");
        assert_eq!(
            e,
            Err(LoadError(
                "error converting YAML to JSON: yaml: map merge requires map or sequence of maps as the value".into()
            ))
        );
    }

    #[test]
    fn reader_errors() {
        // Texts from helm 3.17.3 on values files with these bytes.
        let e = |b: &[u8]| from_yaml_map_bytes(b, "m").err().map(|e| e.0);
        assert_eq!(
            e(b"a: caf\xe9\n").as_deref(),
            Some("error converting YAML to JSON: yaml: incomplete UTF-8 octet sequence")
        );
        assert_eq!(
            e(b"a: x\nb: \xe2\x82\n").as_deref(),
            Some("error converting YAML to JSON: yaml: invalid trailing UTF-8 octet")
        );
        assert_eq!(
            e(b"a: ok\nb: \xff\xfe\n").as_deref(),
            Some("error converting YAML to JSON: yaml: invalid leading UTF-8 octet")
        );
        assert_eq!(e(b"a: ok\n"), None);
    }

    #[test]
    fn flow_and_quoted_lines_need_no_indentation() {
        // helm 3.17.3 (libyaml) loads these values files; the results are
        // those of the same documents properly indented (bitnami/chainloop's
        // values.yaml closes `args: [` with `]` at the key's column).
        let cases = [
            (
                "a:\n  args: [\n    \"x\",\n    \"y\"\n  ]\n  b: 1\n",
                "a: {args: [x, \"y\"], b: 1}",
            ),
            ("a:\n  args: [\n\"x\"\n]\n", "a: {args: [x]}"),
            (
                "a:\n  args: [\n  \"x\", \"y\"\n ]\n",
                "a: {args: [x, \"y\"]}",
            ),
            ("a:\n  args: {\n  k: v\n  }\n", "a: {args: {k: v}}"),
            ("a:\n  args: [\n\"x\"]\n  b: 2\n", "a: {args: [x], b: 2}"),
            ("a:\n  args: \"x\n y\"\n", "a: {args: x y}"),
            (
                "a:\n  b:\n    c: 'p\n q\n\n  r'\n",
                "a: {b: {c: \"p q\\nr\"}}",
            ),
            ("a:\n  - [1,\n 2]\n", "a: [[1, 2]]"),
        ];
        for (text, same) in cases {
            assert_eq!(from_yaml(text), Ok(j(same)), "{text:?}");
        }
        // A document marker inside a flow collection stays an error.
        assert!(from_yaml("a: [\n---\n]\n").is_err());
    }

    #[test]
    fn basic() {
        let v = j("a: yes\nb: 0755\nc: 1_000\nd: 0x1F\ne: ~\nf: [x, y, n]\n");
        let Yaml::Map(m) = v else { panic!() };
        assert_eq!(m["a"], Yaml::Bool(true));
        assert_eq!(m["b"], Yaml::Float(493.0));
        assert_eq!(m["c"], Yaml::Float(1000.0));
        assert_eq!(m["d"], Yaml::Float(31.0));
        assert_eq!(m["e"], Yaml::Null);
        assert_eq!(
            m["f"],
            Yaml::Seq(vec![
                Yaml::Str("x".into()),
                Yaml::Bool(true),
                Yaml::Bool(false)
            ])
        );
    }
}

//! `toYaml`: sigs.k8s.io/yaml.Marshal, byte for byte.
//!
//! Marshal is `json.Marshal` → `yaml.v2.Unmarshal` of that JSON → `yaml.v2.Marshal`.
//! The JSON step is reproduced per node (numbers take their encoding/json text
//! and are re-resolved by yaml.v2, so `3.0` becomes the int `3` and `1e21`
//! stays a float). The writer is a port of go-yaml v2's `encode.go`
//! (`stringv`, `floatv`, natural key order from `sorter.go`) and the parts of
//! libyaml's `emitterc.go` reachable from block mappings and sequences:
//! `analyze_scalar`, `select_scalar_style`, the plain / single / double /
//! literal writers with 80-column folding, `? ` keys over 128 bytes, and
//! `[]` / `{}` for empty collections. It writes straight into one `String`.

use super::Yaml;
use super::num::{format_g, format_json_float};
use super::resolve::{Resolved, is_base60_float, resolve_plain};
use std::cmp::Ordering;

/// Why Marshal failed (Helm's `toYaml` turns any of these into "").
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EmitError {
    /// encoding/json rejects NaN and ±Inf.
    #[error("error marshaling into JSON: json: unsupported value: {0}")]
    UnsupportedValue(String),
    /// A character yaml.v2's reader refuses when it re-reads the JSON text.
    #[error("yaml: control characters are not allowed")]
    ControlCharacter,
}

/// Stack left before a nested collection is written on a new stack segment,
/// and that segment's size (see `emit_node`).
pub(crate) const RED_ZONE: usize = 64 * 1024;
pub(crate) const STACK_SEGMENT: usize = 1024 * 1024;

/// sigs.k8s.io/yaml.Marshal: the YAML text including its final "\n".
/// Helm's `toYaml` is `try_to_yaml(v).map(|s| s.trim_end_matches('\n') once)`
/// with errors turned into "" — see [`to_yaml`] for that form.
pub fn try_to_yaml(v: &Yaml) -> Result<String, EmitError> {
    let mut e = Emitter::new(Flavor::V2);
    e.emit_node(v, Ctx::Root);
    e.finish();
    // json.Marshal fails first (NaN/Inf); then yaml.v2's reader refuses DEL
    // and U+FFFE/U+FFFF, which json writes raw ("control characters are not
    // allowed"). Both are noticed while writing, saving a pass.
    if let Some(nan) = e.nan {
        return Err(EmitError::UnsupportedValue(nan));
    }
    if e.unreadable {
        return Err(EmitError::ControlCharacter);
    }
    Ok(e.out)
}

/// sigs.k8s.io/yaml.Marshal as Helm's `toYaml` sees it: the YAML text with its
/// final newline (the caller trims one "\n" as `strings.TrimSuffix` does), or
/// "" when Marshal fails (NaN/Inf numbers, characters YAML cannot carry).
pub fn to_yaml(v: &Yaml) -> String {
    try_to_yaml(v).unwrap_or_default()
}

/// Helm's `toYamlPretty`: go-yaml v3's encoder with `SetIndent(2)` on the
/// value itself (no JSON round trip): floats keep their `%g` text, sequences
/// under a key are indented. Returns the text with its final newline.
pub fn to_yaml_pretty(v: &Yaml) -> String {
    let mut e = Emitter::new(Flavor::V3);
    e.emit_node(v, Ctx::Root);
    e.finish();
    e.out
}

/// Which go-yaml encoder is reproduced.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Flavor {
    /// yaml.v2 after the JSON round trip (toYaml).
    V2,
    /// yaml.v3 with indent 2 on the raw value (toYamlPretty).
    V3,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Ctx {
    Root,
    Seq,
    MapKey,
    /// A mapping key written after `? ` (not a simple key).
    ComplexKey,
    MapValue,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Style {
    Plain,
    Single,
    Double,
    Literal,
}

/// `yaml_emitter_analyze_scalar` results.
#[derive(Clone, Copy, Debug)]
struct Analysis {
    /// Contains DEL, U+FFFE or U+FFFF.
    json_unreadable: bool,
    multiline: bool,
    flow_plain_allowed: bool,
    block_plain_allowed: bool,
    single_quoted_allowed: bool,
    block_allowed: bool,
}

const BEST_INDENT: i32 = 2;

struct Emitter {
    flavor: Flavor,
    /// yaml.v2 folds long scalars at 80 columns; the yaml.v3 encoder behind
    /// toYamlPretty never folds.
    best_width: usize,
    out: String,
    indent: i32,
    column: usize,
    whitespace: bool,
    indention: bool,
    flow_level: u32,
    mapping_context: bool,
    simple_key_context: bool,
    /// V2: the first non-finite float (json.Marshal's error).
    nan: Option<String>,
    /// V2: a string json writes raw that yaml.v2 cannot read back.
    unreadable: bool,
}

impl Emitter {
    fn new(flavor: Flavor) -> Self {
        Emitter {
            flavor,
            best_width: if flavor == Flavor::V2 { 80 } else { usize::MAX },
            out: String::with_capacity(256),
            indent: -1,
            column: 0,
            whitespace: true,
            indention: true,
            flow_level: 0,
            mapping_context: false,
            simple_key_context: false,
            nan: None,
            unreadable: false,
        }
    }

    /// DOCUMENT-END: `yaml_emitter_write_indent` at indent -1 (i.e. 0).
    fn finish(&mut self) {
        self.indent = -1;
        self.write_indent();
    }

    fn set_ctx(&mut self, ctx: Ctx) {
        self.mapping_context = matches!(ctx, Ctx::MapKey | Ctx::ComplexKey | Ctx::MapValue);
        self.simple_key_context = ctx == Ctx::MapKey;
    }

    fn emit_node(&mut self, v: &Yaml, ctx: Ctx) {
        self.set_ctx(ctx);
        match v {
            Yaml::Null => self.emit_scalar("null", Style::Plain),
            Yaml::Bool(b) => self.emit_scalar(if *b { "true" } else { "false" }, Style::Plain),
            Yaml::Int(i) => self.emit_scalar(&i.to_string(), Style::Plain),
            Yaml::Float(f) => {
                if self.flavor == Flavor::V2 && !f.is_finite() && self.nan.is_none() {
                    self.nan = Some(format_g(*f, false));
                }
                let text = self.float_text(*f);
                self.emit_scalar(&text, Style::Plain)
            }
            Yaml::Str(s) => {
                let s = self.json_text(s);
                let style = self.string_style(&s);
                self.emit_scalar(&s, style)
            }
            // Templates nest values 10,000 deep (go-yaml's limit) and more;
            // grow the stack rather than overflow a caller's thread.
            Yaml::Seq(items) => {
                stacker::maybe_grow(RED_ZONE, STACK_SEGMENT, || self.emit_seq(items))
            }
            Yaml::Map(m) => stacker::maybe_grow(RED_ZONE, STACK_SEGMENT, || self.emit_map(m)),
        }
    }

    /// The text a float64 ends up as. V2: encoding/json's text re-resolved by
    /// yaml.v2 (an integral value below 1e21 becomes an int), then `floatv`'s
    /// `%g`. V3: `%g` of the value itself.
    fn float_text(&self, f: f64) -> String {
        if self.flavor == Flavor::V2
            && let Some(json) = format_json_float(f)
        {
            return match resolve_plain(&json) {
                Resolved::Int(i) => i.to_string(),
                Resolved::Uint(u) => u.to_string(),
                Resolved::Float(g) => format_g(g, false),
                _ => json,
            };
        }
        match format_g(f, false).as_str() {
            "+Inf" => ".inf".into(),
            "-Inf" => "-.inf".into(),
            "NaN" => ".nan".into(),
            s => s.to_string(),
        }
    }

    /// A string as yaml.v2 reads it back from json.Marshal's text: json writes
    /// U+0085 (NEL) raw, and libyaml's double-quoted scanner treats it as a
    /// line break and folds it (one break → space, n breaks → n-1 newlines,
    /// spaces around the breaks dropped). Everything else survives unchanged.
    fn json_text<'s>(&self, s: &'s str) -> std::borrow::Cow<'s, str> {
        if self.flavor != Flavor::V2 || !s.contains('\u{85}') {
            return s.into();
        }
        let mut out = String::with_capacity(s.len());
        let mut it = s.chars().peekable();
        while let Some(&c) = it.peek() {
            if c != ' ' && c != '\u{85}' {
                out.push(c);
                it.next();
                continue;
            }
            let mut spaces = 0usize;
            let mut leading_blanks = false;
            let mut trailing_breaks = 0usize;
            while let Some(&c) = it.peek() {
                if c == ' ' {
                    if !leading_blanks {
                        spaces += 1;
                    }
                } else if c == '\u{85}' {
                    if leading_blanks {
                        trailing_breaks += 1;
                    } else {
                        leading_blanks = true;
                        spaces = 0;
                    }
                } else {
                    break;
                }
                it.next();
            }
            if leading_blanks {
                if trailing_breaks == 0 {
                    out.push(' ');
                } else {
                    out.extend(std::iter::repeat_n('\n', trailing_breaks));
                }
            } else {
                out.extend(std::iter::repeat_n(' ', spaces));
            }
        }
        out.into()
    }

    /// encode.go `stringv`: literal for multi-line strings, plain when the
    /// resolver would read the text back as a string, else double quotes.
    fn string_style(&self, s: &str) -> Style {
        let can_plain = resolve_plain(s) == Resolved::Str
            && !is_base60_float(s)
            && !(self.flavor == Flavor::V3 && is_old_bool(s));
        if s.contains('\n') {
            Style::Literal
        } else if can_plain {
            Style::Plain
        } else {
            Style::Double
        }
    }

    fn increase_indent(&mut self, flow: bool, indentless: bool) -> i32 {
        let saved = self.indent;
        if self.indent < 0 {
            self.indent = if flow { BEST_INDENT } else { 0 };
        } else if !indentless {
            self.indent += BEST_INDENT;
        }
        saved
    }

    fn emit_seq(&mut self, items: &[Yaml]) {
        if items.is_empty() {
            self.write_indicator("[", true, true, false);
            self.write_indicator("]", false, false, false);
            return;
        }
        // yaml.v3 indents sequences nested in mappings; v2 does not.
        let indentless = self.flavor == Flavor::V2 && self.mapping_context && !self.indention;
        let saved = self.increase_indent(false, indentless);
        for item in items {
            self.write_indent();
            self.write_indicator("-", true, false, true);
            self.emit_node(item, Ctx::Seq);
        }
        self.indent = saved;
    }

    fn emit_map(&mut self, m: &super::Mapping) {
        if m.is_empty() {
            self.write_indicator("{", true, true, false);
            self.write_indicator("}", false, false, false);
            return;
        }
        let saved = self.increase_indent(false, false);
        let mut keys: Vec<(&String, &Yaml)> = m.iter().collect();
        if !keys.iter().all(|(k, _)| k.is_ascii()) || keys.iter().any(|(k, _)| needs_natural(k)) {
            let v3 = self.flavor == Flavor::V3;
            keys.sort_by(|a, b| key_cmp(a.0, b.0, v3));
        }
        for (k, v) in keys {
            self.write_indent();
            let a = analyze(k, self.flavor == Flavor::V3);
            if !a.multiline && k.len() <= 128 {
                self.emit_key(k, Ctx::MapKey);
                self.write_indicator(":", false, false, false);
            } else {
                self.write_indicator("?", true, false, true);
                self.emit_key(k, Ctx::ComplexKey);
                self.write_indent();
                self.write_indicator(":", true, false, true);
            }
            self.emit_node(v, Ctx::MapValue);
        }
        self.indent = saved;
    }

    fn emit_key(&mut self, k: &str, ctx: Ctx) {
        self.set_ctx(ctx);
        let k = &*self.json_text(k);
        let style = self.string_style(k);
        self.emit_scalar(k, style);
    }

    fn emit_scalar(&mut self, value: &str, requested: Style) {
        let a = analyze(value, self.flavor == Flavor::V3);
        if a.json_unreadable && self.flavor == Flavor::V2 {
            self.unreadable = true;
        }
        let style = self.select_style(value, requested, &a);
        let saved = self.increase_indent(true, false);
        let allow_breaks = !self.simple_key_context;
        match style {
            Style::Plain => self.write_plain(value, allow_breaks),
            Style::Single => self.write_single(value, allow_breaks),
            Style::Double => self.write_double(value, allow_breaks),
            Style::Literal => self.write_literal(value),
        }
        self.indent = saved;
    }

    /// `yaml_emitter_select_scalar_style` for implicit, untagged scalars.
    fn select_style(&self, value: &str, requested: Style, a: &Analysis) -> Style {
        let mut style = requested;
        if self.simple_key_context && a.multiline {
            style = Style::Double;
        }
        if style == Style::Plain {
            if (self.flow_level > 0 && !a.flow_plain_allowed)
                || (self.flow_level == 0 && !a.block_plain_allowed)
            {
                style = Style::Single;
            }
            if value.is_empty() && (self.flow_level > 0 || self.simple_key_context) {
                style = Style::Single;
            }
        }
        if style == Style::Single && !a.single_quoted_allowed {
            style = Style::Double;
        }
        if style == Style::Literal
            && (!a.block_allowed || self.flow_level > 0 || self.simple_key_context)
        {
            style = Style::Double;
        }
        style
    }

    // ---- low-level writers (emitterc.go) ----

    fn put(&mut self, c: char) {
        self.out.push(c);
        self.column += 1;
    }

    fn put_break(&mut self) {
        self.out.push('\n');
        self.column = 0;
    }

    /// `write_break` for one break character `c`.
    fn write_break(&mut self, c: char) {
        if c == '\n' {
            self.put_break();
        } else {
            self.out.push(c);
            self.column = 0;
        }
    }

    fn write_indent(&mut self) {
        let indent = self.indent.max(0) as usize;
        if !self.indention || self.column > indent || (self.column == indent && !self.whitespace) {
            self.put_break();
        }
        while self.column < indent {
            self.put(' ');
        }
        self.whitespace = true;
        self.indention = true;
    }

    fn write_indicator(&mut self, ind: &str, need_ws: bool, is_ws: bool, is_indention: bool) {
        if need_ws && !self.whitespace {
            self.put(' ');
        }
        self.out.push_str(ind);
        self.column += ind.chars().count();
        self.whitespace = is_ws;
        self.indention = self.indention && is_indention;
    }

    fn write_plain(&mut self, value: &str, allow_breaks: bool) {
        if !self.whitespace {
            self.put(' ');
        }
        let mut spaces = false;
        let mut breaks = false;
        let mut it = value.chars().peekable();
        while let Some(c) = it.next() {
            if c == ' ' {
                let next_space = it.peek() == Some(&' ');
                if allow_breaks && !spaces && self.column > self.best_width && !next_space {
                    self.write_indent();
                } else {
                    self.put(c);
                }
                spaces = true;
            } else if is_break(c) {
                if !breaks && c == '\n' {
                    self.put_break();
                }
                self.write_break(c);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                self.put(c);
                self.indention = false;
                spaces = false;
                breaks = false;
            }
        }
        self.whitespace = false;
        self.indention = false;
    }

    fn write_single(&mut self, value: &str, allow_breaks: bool) {
        self.write_indicator("'", true, false, false);
        let mut spaces = false;
        let mut breaks = false;
        let n = value.len();
        let mut it = value.char_indices().peekable();
        while let Some((i, c)) = it.next() {
            if c == ' ' {
                let next_space = it.peek().map(|p| p.1) == Some(' ');
                if allow_breaks
                    && !spaces
                    && self.column > self.best_width
                    && i > 0
                    && i < n - 1
                    && !next_space
                {
                    self.write_indent();
                } else {
                    self.put(c);
                }
                spaces = true;
            } else if is_break(c) {
                if !breaks && c == '\n' {
                    self.put_break();
                }
                self.write_break(c);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                if c == '\'' {
                    self.put('\'');
                }
                self.put(c);
                self.indention = false;
                spaces = false;
                breaks = false;
            }
        }
        self.write_indicator("'", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }

    fn write_double(&mut self, value: &str, allow_breaks: bool) {
        self.write_indicator("\"", true, false, false);
        let mut spaces = false;
        // is_bom in emitterc.go looks at the start of the value, not at i:
        // a value starting with a BOM has every character escaped.
        let bom = value.starts_with('\u{feff}');
        let n = value.len();
        let mut it = value.char_indices().peekable();
        while let Some((i, c)) = it.next() {
            if !is_printable(c) || bom || is_break(c) || c == '"' || c == '\\' {
                self.put('\\');
                match c {
                    '\0' => self.put('0'),
                    '\u{7}' => self.put('a'),
                    '\u{8}' => self.put('b'),
                    '\t' => self.put('t'),
                    '\n' => self.put('n'),
                    '\u{b}' => self.put('v'),
                    '\u{c}' => self.put('f'),
                    '\r' => self.put('r'),
                    '\u{1b}' => self.put('e'),
                    '"' => self.put('"'),
                    '\\' => self.put('\\'),
                    '\u{85}' => self.put('N'),
                    '\u{a0}' => self.put('_'),
                    '\u{2028}' => self.put('L'),
                    '\u{2029}' => self.put('P'),
                    _ => {
                        let v = c as u32;
                        let (ind, w) = if v <= 0xff {
                            ('x', 2)
                        } else if v <= 0xffff {
                            ('u', 4)
                        } else {
                            ('U', 8)
                        };
                        self.put(ind);
                        for k in (0..w).rev() {
                            let d = (v >> (k * 4)) & 0xf;
                            self.put(char::from_digit(d, 16).unwrap_or('0').to_ascii_uppercase());
                        }
                    }
                }
                spaces = false;
            } else if c == ' ' {
                if allow_breaks && !spaces && self.column > self.best_width && i > 0 && i < n - 1 {
                    self.write_indent();
                    if it.peek().map(|p| p.1) == Some(' ') {
                        self.put('\\');
                    }
                } else {
                    self.put(c);
                }
                spaces = true;
            } else {
                self.put(c);
                spaces = false;
            }
        }
        self.write_indicator("\"", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }

    fn write_literal(&mut self, value: &str) {
        self.write_indicator("|", true, false, false);
        // yaml_emitter_write_block_scalar_hints
        let first = value.chars().next();
        if first.is_some_and(|c| c == ' ' || is_break(c)) {
            self.write_indicator(&BEST_INDENT.to_string(), false, false, false);
        }
        let mut rev = value.chars().rev();
        let chomp = match rev.next() {
            None => Some("-"),
            Some(c) if !is_break(c) => Some("-"),
            Some(_) => match rev.next() {
                None => Some("+"),
                Some(p) if is_break(p) => Some("+"),
                Some(_) => None,
            },
        };
        if let Some(h) = chomp {
            self.write_indicator(h, false, false, false);
        }
        self.put_break();
        self.indention = true;
        self.whitespace = true;
        let mut breaks = true;
        for c in value.chars() {
            if is_break(c) {
                self.write_break(c);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                self.put(c);
                self.indention = false;
                breaks = false;
            }
        }
    }
}

/// `analyze_scalar`. `v3_tabs`: yaml.v3 treats a tab as allowed in block
/// scalars (it only rules out plain and single-quoted styles), where libyaml
/// in v2 counts it as a special character.
fn analyze(value: &str, v3_tabs: bool) -> Analysis {
    if value.is_empty() {
        return Analysis {
            json_unreadable: false,
            multiline: false,
            flow_plain_allowed: false,
            block_plain_allowed: true,
            single_quoted_allowed: true,
            block_allowed: false,
        };
    }
    let b = value.as_bytes();
    let mut block_indicators = false;
    let mut flow_indicators = false;
    let mut line_breaks = false;
    let mut special = false;
    let mut tabs = false;
    let mut json_unreadable = false;
    let mut leading_space = false;
    let mut leading_break = false;
    let mut trailing_space = false;
    let mut trailing_break = false;
    let mut break_space = false;
    let mut space_break = false;
    let mut previous_space = false;
    let mut previous_break = false;

    if b.len() >= 3 && (b.starts_with(b"---") || b.starts_with(b"...")) {
        block_indicators = true;
        flow_indicators = true;
    }
    let mut preceded_by_ws = true;
    let n = b.len();
    let mut i = 0;
    while i < n {
        // After the first character, a run of ASCII bytes other than space,
        // tab and the flow/block indicators only clears the flags about the
        // previous character: skipped without decoding (most of a long
        // scalar, such as a script in a ConfigMap, is such runs).
        if i > 0 && is_inert_ascii(b[i]) {
            while i < n && is_inert_ascii(b[i]) {
                i += 1;
            }
            previous_space = false;
            previous_break = false;
            preceded_by_ws = false;
            continue;
        }
        let Some(c) = value[i..].chars().next() else {
            break;
        };
        let w = c.len_utf8();
        let next = value[i + w..].chars().next();
        let followed_by_ws = next.is_none_or(|d| d == ' ' || d == '\t');
        if i == 0 {
            match c {
                '#' | ',' | '[' | ']' | '{' | '}' | '&' | '*' | '!' | '|' | '>' | '\'' | '"'
                | '%' | '@' | '`' => {
                    flow_indicators = true;
                    block_indicators = true;
                }
                '?' | ':' => {
                    flow_indicators = true;
                    if followed_by_ws {
                        block_indicators = true;
                    }
                }
                '-' if followed_by_ws => {
                    flow_indicators = true;
                    block_indicators = true;
                }
                _ => {}
            }
        } else {
            match c {
                ',' | '?' | '[' | ']' | '{' | '}' => flow_indicators = true,
                ':' => {
                    flow_indicators = true;
                    if followed_by_ws {
                        block_indicators = true;
                    }
                }
                '#' if preceded_by_ws => {
                    flow_indicators = true;
                    block_indicators = true;
                }
                _ => {}
            }
        }
        if v3_tabs && c == '\t' {
            tabs = true;
        } else if !is_printable(c) {
            special = true;
            json_unreadable |= matches!(c, '\u{7f}' | '\u{fffe}' | '\u{ffff}');
        }
        if c == ' ' {
            if i == 0 {
                leading_space = true;
            }
            if i + w == n {
                trailing_space = true;
            }
            if previous_break {
                break_space = true;
            }
            previous_space = true;
            previous_break = false;
        } else if is_break(c) {
            line_breaks = true;
            if i == 0 {
                leading_break = true;
            }
            if i + w == n {
                trailing_break = true;
            }
            if previous_space {
                space_break = true;
            }
            previous_space = false;
            previous_break = true;
        } else {
            previous_space = false;
            previous_break = false;
        }
        preceded_by_ws = c == ' ' || c == '\t' || is_break(c) || c == '\0';
        i += w;
    }
    let mut a = Analysis {
        json_unreadable,
        multiline: line_breaks,
        flow_plain_allowed: true,
        block_plain_allowed: true,
        single_quoted_allowed: true,
        block_allowed: true,
    };
    if leading_space || leading_break || trailing_space || trailing_break {
        a.flow_plain_allowed = false;
        a.block_plain_allowed = false;
    }
    if trailing_space {
        a.block_allowed = false;
    }
    if break_space {
        a.flow_plain_allowed = false;
        a.block_plain_allowed = false;
        a.single_quoted_allowed = false;
    }
    if space_break || tabs || special {
        a.flow_plain_allowed = false;
        a.block_plain_allowed = false;
        a.single_quoted_allowed = false;
    }
    if space_break || special {
        a.block_allowed = false;
    }
    if line_breaks {
        a.flow_plain_allowed = false;
        a.block_plain_allowed = false;
    }
    if flow_indicators {
        a.flow_plain_allowed = false;
    }
    if block_indicators {
        a.block_plain_allowed = false;
    }
    a
}

/// libyaml `is_printable` on a decoded character: LF, printable ASCII, and
/// U+00A0..U+D7FF, U+E000..U+FFFD except the BOM; nothing beyond the BMP
/// (4-byte UTF-8 sequences are not "printable" to libyaml).
fn is_printable(c: char) -> bool {
    let v = c as u32;
    v == 0x0a
        || (0x20..=0x7e).contains(&v)
        || (0xa0..=0xd7ff).contains(&v)
        || ((0xe000..=0xfffd).contains(&v) && v != 0xfeff)
}

/// A printable ASCII byte that is not a space and plays no part in
/// [`analyze`]'s indicator rules past a scalar's first character.
fn is_inert_ascii(b: u8) -> bool {
    (0x21..=0x7e).contains(&b)
        && !matches!(b, b',' | b'?' | b'[' | b']' | b'{' | b'}' | b':' | b'#')
}

fn is_break(c: char) -> bool {
    matches!(c, '\r' | '\n' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

/// yaml.v3's `isOldBool`: YAML 1.1 booleans v3 still quotes on output.
fn is_old_bool(s: &str) -> bool {
    matches!(
        s,
        "y" | "Y"
            | "yes"
            | "Yes"
            | "YES"
            | "on"
            | "On"
            | "ON"
            | "n"
            | "N"
            | "no"
            | "No"
            | "NO"
            | "off"
            | "Off"
            | "OFF"
    )
}

/// Whether bytewise order (the Mapping's own order) may differ from the
/// natural order for this ASCII key: digits and non-letters interleave.
fn needs_natural(k: &str) -> bool {
    k.bytes().any(|b| !b.is_ascii_alphabetic())
}

/// sorter.go `keyList.Less` for two string keys: letters sort before
/// non-letters, runs of digits compare by numeric value.
pub fn natural_cmp(a: &str, b: &str) -> Ordering {
    key_cmp(a, b, false)
}

/// `keyList.Less` of yaml.v2 or (`v3`) yaml.v3, as an ordering.
fn key_cmp(a: &str, b: &str, v3: bool) -> Ordering {
    if natural_less(a, b, v3) {
        Ordering::Less
    } else if natural_less(b, a, v3) {
        Ordering::Greater
    } else {
        Ordering::Equal
    }
}

fn natural_less(a: &str, b: &str, v3: bool) -> bool {
    // Keys are almost always ASCII: compare bytes as runes without
    // collecting them.
    if a.is_ascii() && b.is_ascii() {
        return natural_less_by(a.as_bytes(), b.as_bytes(), v3, |c: &u8| *c as char);
    }
    let ar: Vec<char> = a.chars().collect();
    let br: Vec<char> = b.chars().collect();
    natural_less_by(&ar, &br, v3, |c: &char| *c)
}

/// sorter.go `keyList.Less` on rune slices. yaml.v3 (`v3`) differs in one
/// rule: after a run of equal digits, a letter sorts before a digit.
fn natural_less_by<T>(ar: &[T], br: &[T], v3: bool, at: impl Fn(&T) -> char) -> bool {
    let is_digit = |c: char| c.is_ascii_digit() || (!c.is_ascii() && c.is_numeric());
    let mut i = 0;
    let mut digits = false;
    while i < ar.len() && i < br.len() {
        let (ac, bc) = (at(&ar[i]), at(&br[i]));
        if ac == bc {
            digits = is_digit(ac);
            i += 1;
            continue;
        }
        let al = ac.is_alphabetic();
        let bl = bc.is_alphabetic();
        if al && bl {
            return ac < bc;
        }
        if al || bl {
            return if v3 && digits { al } else { bl };
        }
        let mut an: i64 = 0;
        let mut bn: i64 = 0;
        if ac == '0' || bc == '0' {
            let mut j = i;
            while j > 0 && is_digit(at(&ar[j - 1])) {
                j -= 1;
                if at(&ar[j]) != '0' {
                    an = 1;
                    bn = 1;
                    break;
                }
            }
        }
        let mut ai = i;
        while ai < ar.len() && is_digit(at(&ar[ai])) {
            an = an
                .wrapping_mul(10)
                .wrapping_add(at(&ar[ai]) as i64 - '0' as i64);
            ai += 1;
        }
        let mut bi = i;
        while bi < br.len() && is_digit(at(&br[bi])) {
            bn = bn
                .wrapping_mul(10)
                .wrapping_add(at(&br[bi]) as i64 - '0' as i64);
            bi += 1;
        }
        if an != bn {
            return an < bn;
        }
        if ai != bi {
            return ai < bi;
        }
        return ac < bc;
    }
    ar.len() < br.len()
}

//! Helm's `toToml` and `fromToml` on the YAML data model.
//!
//! `to_toml` ports BurntSushi/toml v1.4's `Encoder` (encode.go) for the
//! shapes a template can hold — maps with string keys, slices, strings,
//! bools, ints, float64s — because its exact layout (direct keys before
//! sub-tables, two-space indentation per table level, blank lines between
//! top-level tables, `[[array]]` tables, floats always with a decimal point)
//! is what Helm prints. `from_toml` runs the port of BurntSushi's decoder
//! in [`super::toml_parse`] and maps the `map[string]interface{}` it fills
//! into the data model.

use super::num::format_f;
pub use super::toml_parse::Failure as FromTomlError;
use super::toml_parse::{Table, Val, decode};
use super::{Mapping, Yaml};

/// Helm's `toToml`: the encoder's text, or the encoder's error text (Helm
/// returns `err.Error()` in place of the document).
pub fn to_toml(v: &Yaml) -> String {
    let mut e = Enc {
        out: String::new(),
        written: false,
    };
    match e.encode(&mut Vec::new(), v) {
        Ok(()) => e.out,
        Err(msg) => msg,
    }
}

struct Enc {
    out: String,
    /// `hasWritten`: `newline()` only writes once something was written.
    written: bool,
}

type Res = Result<(), String>;

const ERR_NIL_ELEMENT: &str = "toml: cannot encode array with nil element";
const ERR_NO_KEY: &str = "toml: top-level values must be Go maps or structs";

#[derive(PartialEq)]
enum TomlType {
    Nil,
    Table,
    ArrayOfTables,
    Other,
}

/// `tomlTypeOfGo`, including `isTableArray`'s error for nil elements.
fn toml_type(v: &Yaml) -> Result<TomlType, String> {
    Ok(match v {
        Yaml::Null => TomlType::Nil,
        Yaml::Map(_) => TomlType::Table,
        Yaml::Seq(items) => {
            if items.is_empty() {
                return Ok(TomlType::Other);
            }
            let mut all = true;
            for i in items {
                match toml_type(i)? {
                    TomlType::Nil => return Err(ERR_NIL_ELEMENT.into()),
                    TomlType::Table => {}
                    _ => all = false,
                }
            }
            if all {
                TomlType::ArrayOfTables
            } else {
                TomlType::Other
            }
        }
        _ => TomlType::Other,
    })
}

impl Enc {
    fn w(&mut self, s: &str) {
        self.out.push_str(s);
        self.written = true;
    }

    fn newline(&mut self) {
        if self.written {
            self.w("\n");
        }
    }

    fn encode(&mut self, key: &mut Vec<String>, v: &Yaml) -> Res {
        match v {
            Yaml::Null => Ok(()),
            Yaml::Map(m) => self.table(key, m),
            Yaml::Seq(_) if toml_type(v)? == TomlType::ArrayOfTables => {
                self.array_of_tables(key, v)
            }
            _ => self.key_value(key, v, false),
        }
    }

    fn indent(&mut self, key: &[String]) {
        for _ in 1..key.len() {
            self.w("  ");
        }
    }

    fn table(&mut self, key: &mut Vec<String>, m: &Mapping) -> Res {
        if key.len() == 1 {
            self.newline();
        }
        if !key.is_empty() {
            self.indent(key);
            let k = key_string(key);
            self.w("[");
            self.w(&k);
            self.w("]");
            self.newline();
        }
        self.map(key, m, false)
    }

    fn array_of_tables(&mut self, key: &mut Vec<String>, v: &Yaml) -> Res {
        if key.is_empty() {
            return Err(ERR_NO_KEY.into());
        }
        let Yaml::Seq(items) = v else {
            return Ok(());
        };
        for item in items {
            let Yaml::Map(m) = item else { continue };
            self.newline();
            self.indent(key);
            let k = key_string(key);
            self.w("[[");
            self.w(&k);
            self.w("]]");
            self.newline();
            self.map(key, m, false)?;
        }
        Ok(())
    }

    /// `eMap`: direct keys (sorted) first, then sub-tables (sorted); nil values skipped.
    fn map(&mut self, key: &mut Vec<String>, m: &Mapping, inline: bool) -> Res {
        let mut direct = Vec::new();
        let mut sub = Vec::new();
        for (k, v) in m {
            match toml_type(v)? {
                TomlType::Table | TomlType::ArrayOfTables => sub.push((k, v)),
                _ => direct.push((k, v)),
            }
        }
        if inline {
            self.w("{");
        }
        let trail = !sub.is_empty();
        for (list, trail_c) in [(direct, trail), (sub, false)] {
            let n = list.len();
            for (i, (k, v)) in list.into_iter().enumerate() {
                if *v == Yaml::Null {
                    continue;
                }
                if inline {
                    self.key_value(std::slice::from_ref(k), v, true)?;
                    if trail_c || i != n - 1 {
                        self.w(", ");
                    }
                } else {
                    key.push(k.clone());
                    let r = self.encode(key, v);
                    key.pop();
                    r?;
                }
            }
        }
        if inline {
            self.w("}");
        }
        Ok(())
    }

    fn key_value(&mut self, key: &[String], v: &Yaml, inline: bool) -> Res {
        if key.is_empty() {
            return self.element(v);
        }
        self.indent(key);
        let last = maybe_quoted(&key[key.len() - 1]);
        self.w(&last);
        self.w(" = ");
        self.element(v)?;
        if !inline {
            self.newline();
        }
        Ok(())
    }

    /// `eElement`.
    fn element(&mut self, v: &Yaml) -> Res {
        match v {
            Yaml::Null => Err("reflect: call of reflect.Value.Interface on zero Value".into()),
            Yaml::Bool(b) => {
                self.w(if *b { "true" } else { "false" });
                Ok(())
            }
            Yaml::Int(i) => {
                self.w(&i.to_string());
                Ok(())
            }
            Yaml::Float(f) => {
                let s = if f.is_nan() {
                    if f.is_sign_negative() { "-nan" } else { "nan" }.to_string()
                } else if f.is_infinite() {
                    if *f < 0.0 { "-inf" } else { "inf" }.to_string()
                } else {
                    // floatAddDecimal(FormatFloat(f, 'f', -1, 64))
                    let s = format_f(*f);
                    if s.contains('.') { s } else { s + ".0" }
                };
                self.w(&s);
                Ok(())
            }
            Yaml::Str(s) => {
                self.w(&quote(s));
                Ok(())
            }
            Yaml::Seq(items) => {
                self.w("[");
                for (i, item) in items.iter().enumerate() {
                    self.element(item)?;
                    if i != items.len() - 1 {
                        self.w(", ");
                    }
                }
                self.w("]");
                Ok(())
            }
            Yaml::Map(m) => self.map(&mut Vec::new(), m, true),
        }
    }
}

fn is_bare(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|r| r.is_ascii_alphanumeric() || r == '_' || r == '-')
}

/// `Key.maybeQuoted`.
fn maybe_quoted(k: &str) -> String {
    if k.is_empty() {
        "\"\"".into()
    } else if is_bare(k) {
        k.into()
    } else {
        quote(k)
    }
}

/// `Key.String`: dotted, each piece bare or quoted.
fn key_string(key: &[String]) -> String {
    key.iter()
        .map(|k| maybe_quoted(k))
        .collect::<Vec<_>>()
        .join(".")
}

/// `"` + dblQuotedReplacer + `"`.
pub(super) fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\u{c}' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Helm's `fromToml`: the document as a map, or why not — a parse error's
/// text (Helm puts it under the "Error" key) or a Go panic (a template
/// error in Helm). The input is a Go string's bytes: invalid UTF-8 has its
/// own error text.
pub fn from_toml(input: &[u8]) -> Result<Mapping, FromTomlError> {
    let t = decode(input)?;
    let m = table(&t);
    Ok(m)
}

fn table(t: &Table) -> Mapping {
    t.borrow()
        .iter()
        .map(|(k, v)| (k.clone(), value(v)))
        .collect()
}

/// The decoder's Go values in the data model: int64, float64, string,
/// bool; a `time.Time` becomes its JSON text (RFC 3339), since the data
/// model has no time type.
fn value(v: &Val) -> Yaml {
    match v {
        Val::Str(s) => Yaml::Str(s.clone()),
        Val::Int(i) => Yaml::Int(*i),
        Val::Float(f) => Yaml::Float(*f),
        Val::Bool(b) => Yaml::Bool(*b),
        Val::Time(t) => Yaml::Str(t.rfc3339_nano()),
        Val::Array(a) => Yaml::Seq(a.iter().map(value).collect()),
        Val::Table(t) => Yaml::Map(table(t)),
        Val::Tables(ts) => Yaml::Seq(ts.iter().map(|t| Yaml::Map(table(t))).collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helm_toml_shapes() {
        // Expected texts from helm 3.17.3.
        // toToml (list 1 2)
        assert_eq!(
            to_toml(&Yaml::Seq(vec![Yaml::Int(1), Yaml::Int(2)])),
            "[1, 2]"
        );
        // toToml (dict "l" (list 1 nil))
        let mut m = Mapping::new();
        m.insert("l".into(), Yaml::Seq(vec![Yaml::Int(1), Yaml::Null]));
        assert_eq!(
            to_toml(&Yaml::Map(m)),
            "toml: cannot encode array with nil element"
        );
        // toToml (dict "m" (list (dict "a" 1) 2))
        let mut a = Mapping::new();
        a.insert("a".into(), Yaml::Int(1));
        let mut m = Mapping::new();
        m.insert("m".into(), Yaml::Seq(vec![Yaml::Map(a), Yaml::Int(2)]));
        assert_eq!(to_toml(&Yaml::Map(m)), "m = [{a = 1}, 2]\n");
        // toToml (dict "k" "with \"quote\" and \\ and \t tab" "a b" 1 "" 2
        //   "n" (dict "x y" (dict "z" 1))
        //   "arr" (list (dict "a" 1) (dict "b" (list (dict "c" 1)))))
        let mut z = Mapping::new();
        z.insert("z".into(), Yaml::Int(1));
        let mut n = Mapping::new();
        n.insert("x y".into(), Yaml::Map(z));
        let mut c = Mapping::new();
        c.insert("c".into(), Yaml::Int(1));
        let mut b = Mapping::new();
        b.insert("b".into(), Yaml::Seq(vec![Yaml::Map(c)]));
        let mut a = Mapping::new();
        a.insert("a".into(), Yaml::Int(1));
        let mut m = Mapping::new();
        m.insert(
            "k".into(),
            Yaml::Str("with \"quote\" and \\ and \t tab".into()),
        );
        m.insert("a b".into(), Yaml::Int(1));
        m.insert(String::new(), Yaml::Int(2));
        m.insert("n".into(), Yaml::Map(n));
        m.insert("arr".into(), Yaml::Seq(vec![Yaml::Map(a), Yaml::Map(b)]));
        assert_eq!(
            to_toml(&Yaml::Map(m)),
            "\"\" = 2\n\"a b\" = 1\nk = \"with \\\"quote\\\" and \\\\ and \\t tab\"\n\n[[arr]]\n  a = 1\n\n[[arr]]\n\n  [[arr.b]]\n    c = 1\n\n[n]\n  [n.\"x y\"]\n    z = 1\n"
        );
    }

    #[test]
    fn helm_from_toml() {
        // fromToml "a = 1\nb = [1, \"x\"]\n[t]\nk = 2020-01-02\n[[arr]]\nx = 1\n[[arr]]\nx = 2.5" | toJson
        let m = from_toml(
            b"a = 1\nb = [1, \"x\"]\n[t]\nk = 2020-01-02\n[[arr]]\nx = 1\n[[arr]]\nx = 2.5",
        )
        .unwrap_or_default();
        assert_eq!(
            crate::yaml::to_json(&Yaml::Map(m)).unwrap_or_default(),
            r#"{"a":1,"arr":[{"x":1},{"x":2.5}],"b":[1,"x"],"t":{"k":"2020-01-02T00:00:00Z"}}"#
        );
    }

    #[test]
    fn helm_to_toml() {
        // Expected text from helm 3.17.3:
        // toToml (dict "a" 1 "b" "x" "c" (dict "d" (list 1 2)) "e" 1.5 "f" true)
        let mut c = Mapping::new();
        c.insert("d".into(), Yaml::Seq(vec![Yaml::Int(1), Yaml::Int(2)]));
        let mut m = Mapping::new();
        m.insert("a".into(), Yaml::Int(1));
        m.insert("b".into(), Yaml::Str("x".into()));
        m.insert("c".into(), Yaml::Map(c));
        m.insert("e".into(), Yaml::Float(1.5));
        m.insert("f".into(), Yaml::Bool(true));
        assert_eq!(
            to_toml(&Yaml::Map(m)),
            "a = 1\nb = \"x\"\ne = 1.5\nf = true\n\n[c]\n  d = [1, 2]\n"
        );
    }
}

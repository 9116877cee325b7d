//! `.Files`: Helm's `engine.files`, the chart's non-template files as a map
//! from path to bytes with the methods `Get`, `GetBytes`, `Glob`, `Lines`,
//! `AsConfig` and `AsSecrets`. Only files loaded with the chart are visible,
//! so a template can never read outside its chart.
//!
//! `Glob` follows github.com/gobwas/glob with `/` as the separator: `*` and
//! `?` stop at `/`, `**` crosses it, `[…]`/`[!…]` classes, `{a,b}`
//! alternatives and `\` escapes; a pattern that does not compile matches
//! everything, as Helm falls back to `**`. Hand-written because no crate
//! implements gobwas's rules (globset treats `**` and classes differently).

use std::any::Any;
use std::collections::BTreeMap;
use std::rc::Rc;

use base64::Engine as _;

use crate::chart::Data;
use crate::chart::capabilities::{check_args, str_arg};
use crate::engine::{Entries, Key, Map, MapKind, Member, Method, Object, Value};
use crate::yaml::{Mapping, Yaml};

/// Helm's `engine.files` (`map[string][]byte` with methods).
#[derive(Clone, Default)]
pub struct Files {
    map: Rc<BTreeMap<String, Data>>,
}

impl Files {
    pub fn new(files: impl IntoIterator<Item = (String, Data)>) -> Files {
        Files {
            map: Rc::new(files.into_iter().collect()),
        }
    }

    /// Every file of a chart that `.Files` shows: all but templates,
    /// `Chart.yaml`, values, schema and subcharts (CRDs included, as in Helm).
    pub fn from_chart(chart: &crate::chart::Chart) -> Files {
        Files::new(
            chart
                .files
                .iter()
                .chain(chart.crds.iter())
                .map(|f| (f.name.clone(), f.data.clone())),
        )
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &[u8])> {
        self.map.iter().map(|(k, v)| (k.as_str(), v.bytes()))
    }

    pub fn get_bytes(&self, name: &str) -> &[u8] {
        self.map.get(name).map(Data::bytes).unwrap_or(&[])
    }

    /// `Glob`: the files whose path matches the gobwas pattern.
    pub fn glob(&self, pattern: &str) -> Files {
        let glob = Glob::compile(pattern).unwrap_or_else(|| Glob(vec![Tok::AnyDeep]));
        Files::new(
            self.map
                .iter()
                .filter(|(k, _)| glob.matches(k))
                .map(|(k, v)| (k.clone(), v.clone())),
        )
    }

    /// `Lines`: the file split on `\n`, without the final newline's empty line.
    pub fn lines(&self, name: &str) -> Result<Vec<String>, String> {
        Ok(self
            .lines_bytes(name)?
            .into_iter()
            .map(|l| crate::engine::value::go_lossy(l).into_owned())
            .collect())
    }

    /// [`Files::lines`] as bytes (Go strings: a line need not be UTF-8).
    fn lines_bytes(&self, name: &str) -> Result<Vec<&[u8]>, String> {
        let Some(data) = self.map.get(name) else {
            return Ok(Vec::new());
        };
        // Helm indexes s[len(s)-1] unguarded: an empty file panics, which
        // text/template reports as the call's error.
        let s: &[u8] = match data.last() {
            None => return Err("runtime error: index out of range [-1]".into()),
            Some(b'\n') => &data[..data.len() - 1],
            Some(_) => &data[..],
        };
        Ok(s.split(|b| *b == b'\n').collect())
    }

    /// `AsConfig`: base name → content, as YAML (`toYaml` of a
    /// `map[string]string`).
    pub fn as_config(&self) -> String {
        let m: Mapping = self
            .map
            .iter()
            .map(|(k, v)| {
                (
                    base_name(k).to_string(),
                    Yaml::Str(String::from_utf8_lossy(v).into_owned()),
                )
            })
            .collect();
        trim_newline(crate::yaml::to_yaml(&Yaml::Map(m)))
    }

    /// `AsSecrets`: base name → base64 of the content, as YAML.
    pub fn as_secrets(&self) -> String {
        let m: Mapping = self
            .map
            .iter()
            .map(|(k, v)| {
                (
                    base_name(k).to_string(),
                    Yaml::Str(base64::engine::general_purpose::STANDARD.encode(v.bytes())),
                )
            })
            .collect();
        trim_newline(crate::yaml::to_yaml(&Yaml::Map(m)))
    }

    /// The files as the template map Go's reflection sees, each element
    /// made by `element`.
    fn as_map(&self, element: impl Fn(&Data) -> Value) -> Value {
        let entries: Entries = self
            .map
            .iter()
            .map(|(k, v)| (Key::from(k.as_str()), element(v)))
            .collect();
        Value::Map(Rc::new(Map::new(MapKind::Any, entries)))
    }

    pub fn to_value(&self) -> Value {
        Value::Object(Rc::new(self.clone()))
    }
}

fn trim_newline(mut s: String) -> String {
    if s.ends_with('\n') {
        s.pop();
    }
    s
}

/// Go's `path.Base` for the non-empty, slash-separated names charts have.
fn base_name(p: &str) -> &str {
    crate::scan::after_last_slash(p.trim_end_matches('/'))
}

impl Object for Files {
    fn type_name(&self) -> &str {
        "engine.files"
    }
    fn kind_name(&self) -> &str {
        "map"
    }
    fn member(&self, name: &str) -> Option<Member> {
        let files = self.clone();
        let m: Method = match name {
            "Get" => Rc::new(move |args| {
                check_args("Get", args, 1)?;
                // `string(bytes)`: the file's bytes, UTF-8 or not.
                Ok(Value::from_go_bytes(
                    files.get_bytes(str_arg(args, 0)?).to_vec(),
                ))
            }),
            "GetBytes" => Rc::new(move |args| {
                check_args("GetBytes", args, 1)?;
                Ok(Value::Bytes(Rc::from(files.get_bytes(str_arg(args, 0)?))))
            }),
            "Glob" => Rc::new(move |args| {
                check_args("Glob", args, 1)?;
                Ok(files.glob(str_arg(args, 0)?).to_value())
            }),
            "Lines" => Rc::new(move |args| {
                check_args("Lines", args, 1)?;
                Ok(Value::str_list(
                    files
                        .lines_bytes(str_arg(args, 0)?)?
                        .into_iter()
                        .map(|l| Value::from_go_bytes(l.to_vec()))
                        .collect(),
                ))
            }),
            "AsConfig" => Rc::new(move |args| {
                check_args("AsConfig", args, 0)?;
                Ok(Value::string(files.as_config()))
            }),
            "AsSecrets" => Rc::new(move |args| {
                check_args("AsSecrets", args, 0)?;
                Ok(Value::string(files.as_secrets()))
            }),
            // `engine.files` is a Go map: any other name is a key, and a
            // missing one the element type's zero value (nil bytes, `[]`).
            _ => return Some(Member::Field(Value::Bytes(Rc::from(self.get_bytes(name))))),
        };
        Some(Member::Method(m))
    }
    fn fmt_v(&self, out: &mut String) {
        if let Some(v) = self.underlying() {
            crate::engine::gofmt::fmt_v(&v, out);
        }
    }
    fn truthy(&self) -> bool {
        !self.map.is_empty()
    }
    fn underlying(&self) -> Option<Value> {
        Some(self.as_map(|d| Value::Bytes(Rc::from(d.bytes()))))
    }
    fn underlying_keys(&self) -> Option<Value> {
        // Nil elements: no file is read.
        Some(self.as_map(|_| Value::Nil))
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// One element of a compiled gobwas pattern.
#[derive(Debug, Clone)]
enum Tok {
    Lit(char),
    /// `?`: one character other than the separator.
    One,
    /// `*`: any run of non-separator characters.
    Any,
    /// `**`: any run of characters.
    AnyDeep,
    /// `[…]` / `[!…]`: ranges (inclusive), negated or not.
    Class(Vec<(char, char)>, bool),
    /// `{a,b,…}`
    Alt(Vec<Vec<Tok>>),
}

/// A compiled gobwas glob with `/` as the only separator.
#[derive(Debug, Clone)]
struct Glob(Vec<Tok>);

impl Glob {
    fn compile(pattern: &str) -> Option<Glob> {
        let chars: Vec<char> = pattern.chars().collect();
        let mut pos = 0;
        let toks = parse_seq(&chars, &mut pos, false)?;
        if pos != chars.len() {
            return None;
        }
        Some(Glob(toks))
    }

    fn matches(&self, s: &str) -> bool {
        let chars: Vec<char> = s.chars().collect();
        match_seq(&self.0, &chars, &mut |rest| rest.is_empty())
    }
}

/// Parse until the end, or (inside `{}`) until an unescaped `,` or `}`.
fn parse_seq(p: &[char], pos: &mut usize, in_alt: bool) -> Option<Vec<Tok>> {
    let mut out = Vec::new();
    while *pos < p.len() {
        let c = p[*pos];
        match c {
            ',' | '}' if in_alt => return Some(out),
            '\\' => {
                *pos += 1;
                out.push(Tok::Lit(*p.get(*pos)?));
                *pos += 1;
            }
            '*' => {
                if p.get(*pos + 1) == Some(&'*') {
                    *pos += 2;
                    out.push(Tok::AnyDeep);
                } else {
                    *pos += 1;
                    out.push(Tok::Any);
                }
            }
            '?' => {
                *pos += 1;
                out.push(Tok::One);
            }
            '[' => {
                *pos += 1;
                let negated = p.get(*pos) == Some(&'!');
                if negated {
                    *pos += 1;
                }
                let mut ranges = Vec::new();
                loop {
                    let c = *p.get(*pos)?;
                    if c == ']' {
                        *pos += 1;
                        break;
                    }
                    let lo = if c == '\\' {
                        *pos += 1;
                        *p.get(*pos)?
                    } else {
                        c
                    };
                    *pos += 1;
                    if p.get(*pos) == Some(&'-') && p.get(*pos + 1).is_some_and(|c| *c != ']') {
                        let hi = p[*pos + 1];
                        *pos += 2;
                        if hi < lo {
                            return None;
                        }
                        ranges.push((lo, hi));
                    } else {
                        ranges.push((lo, lo));
                    }
                }
                if ranges.is_empty() {
                    return None;
                }
                out.push(Tok::Class(ranges, negated));
            }
            '{' => {
                *pos += 1;
                let mut alts = Vec::new();
                loop {
                    alts.push(parse_seq(p, pos, true)?);
                    match p.get(*pos)? {
                        ',' => *pos += 1,
                        _ => {
                            *pos += 1;
                            break;
                        }
                    }
                }
                out.push(Tok::Alt(alts));
            }
            _ => {
                *pos += 1;
                out.push(Tok::Lit(c));
            }
        }
    }
    if in_alt {
        // An unterminated `{`.
        return None;
    }
    Some(out)
}

/// Backtracking match of `toks` at the start of `s`; `k` decides whether
/// what remains of `s` is acceptable (for alternatives followed by more).
fn match_seq(toks: &[Tok], s: &[char], k: &mut dyn FnMut(&[char]) -> bool) -> bool {
    let Some((first, rest)) = toks.split_first() else {
        return k(s);
    };
    match first {
        Tok::Lit(c) => s.first() == Some(c) && match_seq(rest, &s[1..], k),
        Tok::One => s.first().is_some_and(|c| *c != '/') && match_seq(rest, &s[1..], k),
        Tok::Class(ranges, negated) => {
            s.first()
                .is_some_and(|c| ranges.iter().any(|(lo, hi)| lo <= c && c <= hi) != *negated)
                && match_seq(rest, &s[1..], k)
        }
        Tok::Any | Tok::AnyDeep => {
            let deep = matches!(first, Tok::AnyDeep);
            let mut i = 0;
            loop {
                if match_seq(rest, &s[i..], k) {
                    return true;
                }
                if i == s.len() || (!deep && s[i] == '/') {
                    return false;
                }
                i += 1;
            }
        }
        Tok::Alt(alts) => alts
            .iter()
            .any(|alt| match_seq(alt, s, &mut |after| match_seq(rest, after, k))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files() -> Files {
        let names = [
            "crds/crd.yaml",
            "files/a.txt",
            "files/b.txt",
            "files/sub/c.yaml",
            "other.txt",
        ];
        Files::new(names.iter().map(|n| {
            let data: &[u8] = match *n {
                "files/a.txt" => b"line1\nline2\n",
                "files/b.txt" => b"b",
                _ => b"x\n",
            };
            (n.to_string(), Data::from(data))
        }))
    }

    fn glob(p: &str) -> String {
        files()
            .glob(p)
            .iter()
            .map(|(k, _)| format!("{k},"))
            .collect()
    }

    #[test]
    fn glob_matches_like_helm() {
        // Expected values from helm v3.17.3 ranging over `.Files.Glob`.
        assert_eq!(glob("files/*"), "files/a.txt,files/b.txt,");
        assert_eq!(
            glob("files/**"),
            "files/a.txt,files/b.txt,files/sub/c.yaml,"
        );
        assert_eq!(glob("**.txt"), "files/a.txt,files/b.txt,other.txt,");
        assert_eq!(glob("files/{a,b}.txt"), "files/a.txt,files/b.txt,");
        assert_eq!(glob("*/?.txt"), "files/a.txt,files/b.txt,");
        assert_eq!(glob("files/[!a].txt"), "files/b.txt,");
        // A pattern that does not compile falls back to `**`.
        assert_eq!(
            glob("files/["),
            "crds/crd.yaml,files/a.txt,files/b.txt,files/sub/c.yaml,other.txt,"
        );
        assert_eq!(glob("nothing"), "");
    }

    #[test]
    fn lines_and_get() {
        let f = files();
        assert_eq!(
            f.lines("files/a.txt"),
            Ok(vec!["line1".to_string(), "line2".to_string()])
        );
        assert_eq!(f.lines("nope"), Ok(vec![]));
        assert_eq!(f.get_bytes("nope"), b"");
        let empty = Files::new([("e".to_string(), Data::from(&b""[..]))]);
        assert!(empty.lines("e").is_err());
    }

    #[test]
    fn prints_and_types_as_go_map_of_bytes() {
        let f = files().glob("files/*");
        let v = f.to_value();
        assert_eq!(v.type_name(), "engine.files");
        assert_eq!(v.kind_name(), "map");
        assert_eq!(
            crate::engine::gofmt::to_string_v(&v),
            "map[files/a.txt:[108 105 110 101 49 10 108 105 110 101 50 10] files/b.txt:[98]]"
        );
    }
}

//! `semver` and `semverCompare`: a port of Masterminds/semver v3.3.0
//! (`NewVersion`, `Compare`, `NewConstraint`, `Constraints.Check`).
//!
//! Ported rather than using the `semver` crate because Masterminds' rules
//! differ and charts depend on them: versions may have a `v` prefix and
//! omit minor/patch (`1.2` is 1.2.0); constraints support `x`/`*`
//! wildcards, `~`, `^`, hyphen ranges, `,`/space for AND and `||` for OR;
//! and a pre-release version satisfies a constraint only if the constraint
//! itself has a pre-release (`>=1.20.0-0` matches `1.21.0-eks-1`, `>=1.20.0`
//! does not).

use std::any::Any;
use std::cmp::Ordering;
use std::fmt;
use std::rc::Rc;
use std::sync::OnceLock;

use regex_lite::Regex;

use super::{arg_str, def};
use crate::engine::funcs::{FuncDef, Param};
use crate::engine::value::{Member, Method, Object, Value};

use Param::Str;

pub const FUNCS: &[FuncDef] = &[
    def("semver", &[Str], |_, a| {
        Ok(Value::Object(Rc::new(Version::parse(arg_str(a, 0))?)))
    }),
    def("semverCompare", &[Str, Str], |_, a| {
        let c = Constraints::parse(arg_str(a, 0))?;
        let v = Version::parse(arg_str(a, 1))?;
        Ok(Value::Bool(c.check(&v)))
    }),
];

// Masterminds' patterns, with RE2's `\s` spelled out (`[\t\n\f\r ]`: Go's
// `\s` is ASCII and has no `\v`) so they compile without Unicode tables.
const WS: &str = r"[\t\n\x0c\r ]";
const CV_RE: &str = r"v?([0-9|x|X|\*]+)(\.[0-9|x|X|\*]+)?(\.[0-9|x|X|\*]+)?(-([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?(\+([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?";
const OPS: &str = r"=||!=|>|<|>=|=>|<=|=<|~|~>|\^";

/// One of Masterminds' constraint regexes, compiled on first use with
/// `regex-lite`: the patterns are small and the strings they run on tiny,
/// and `regex` spent over 3 M instructions building these four (13% of a
/// mid-sized chart's main thread; every chart with a `kubeVersion` checks a
/// constraint). Both crates match leftmost-first like Go's RE2.
fn regex(cell: &'static OnceLock<Regex>, pattern: impl FnOnce() -> String) -> &'static Regex {
    cell.get_or_init(|| {
        // The patterns are fixed and valid RE2 syntax.
        Regex::new(&pattern().replace(r"\s", WS))
            .unwrap_or_else(|e| unreachable!("semver regex: {e}"))
    })
}

fn constraint_re() -> &'static Regex {
    static R: OnceLock<Regex> = OnceLock::new();
    regex(&R, || format!(r"^\s*({OPS})\s*({CV_RE})\s*$"))
}

fn range_re() -> &'static Regex {
    static R: OnceLock<Regex> = OnceLock::new();
    regex(&R, || format!(r"\s*({CV_RE})\s+-\s+({CV_RE})\s*"))
}

fn find_re() -> &'static Regex {
    static R: OnceLock<Regex> = OnceLock::new();
    regex(&R, || format!(r"({OPS})\s*({CV_RE})"))
}

fn valid_re() -> &'static Regex {
    static R: OnceLock<Regex> = OnceLock::new();
    regex(&R, || {
        format!(r"^(\s*({OPS})\s*({CV_RE})\s*)((?:\s+|,\s*)({OPS})\s*({CV_RE})\s*)*$")
    })
}

/// Masterminds' anchored version pattern
/// `^v?([0-9]+)(\.[0-9]+)?(\.[0-9]+)?(-(ID(\.ID)*))?(\+(ID(\.ID)*))?$`
/// (`ID` = `[0-9A-Za-z-]+`), matched by hand: every `semver` call and every
/// chart's `kubeVersion` check goes through it, and the pattern is
/// deterministic (each optional part starts with its own character and the
/// runs are maximal), so a greedy scan finds exactly the regex's groups.
/// Returns major, `.minor`, `.patch` (with their dots), pre-release, metadata.
fn match_version(v: &str) -> Option<(&str, &str, &str, &str, &str)> {
    match_version_of(v, |b| b.is_ascii_digit())
}

/// [`match_version`] with `digit` as the class of the numeric parts:
/// `[0-9]` for versions, `[0-9|x|X|\*]` for constraint versions (the
/// pattern is as deterministic with either).
fn match_version_of(v: &str, digit: fn(u8) -> bool) -> Option<(&str, &str, &str, &str, &str)> {
    let digits = |s: &str| s.bytes().take_while(|b| digit(*b)).count();
    // `\.[class]+` at the start of `s`, or empty.
    let dotted = |s: &'_ str| -> usize {
        match s.strip_prefix('.') {
            Some(r) if digits(r) > 0 => 1 + digits(r),
            _ => 0,
        }
    };
    // `ID(\.ID)*` after `lead`, or None if `lead` is there but no dotted
    // identifier list follows (the regex then cannot match at all).
    fn idents(s: &str, lead: char) -> Option<&str> {
        let Some(r) = s.strip_prefix(lead) else {
            return Some("");
        };
        let n = r
            .bytes()
            .take_while(|b| b.is_ascii_alphanumeric() || *b == b'-' || *b == b'.')
            .count();
        let run = &r[..n];
        (!run.is_empty() && run.split('.').all(|id| !id.is_empty())).then_some(run)
    }
    let s = v.strip_prefix('v').unwrap_or(v);
    let n = digits(s);
    if n == 0 {
        return None;
    }
    let (major, s) = s.split_at(n);
    let (minor, s) = s.split_at(dotted(s));
    let (patch, s) = s.split_at(dotted(s));
    let pre = idents(s, '-')?;
    let s = if pre.is_empty() {
        s
    } else {
        &s[1 + pre.len()..]
    };
    let meta = idents(s, '+')?;
    let s = if meta.is_empty() {
        s
    } else {
        &s[1 + meta.len()..]
    };
    s.is_empty().then_some((major, minor, patch, pre, meta))
}

const ERR_INVALID: &str = "Invalid Semantic Version";

/// `*semver.Version`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Version {
    pub major: u64,
    pub minor: u64,
    pub patch: u64,
    pub pre: String,
    pub metadata: String,
    pub original: String,
}

fn parse_segment(s: &str) -> Result<u64, String> {
    s.parse::<u64>().map_err(|_| {
        format!(
            "Error parsing version segment: strconv.ParseUint: parsing {}: value out of range",
            super::strings::go_quote(s)
        )
    })
}

fn contains_only(s: &str, allowed: impl Fn(char) -> bool) -> bool {
    s.chars().all(allowed)
}

fn validate_prerelease(p: &str) -> Result<(), String> {
    for part in p.split('.') {
        if contains_only(part, |c| c.is_ascii_digit()) {
            if part.len() > 1 && part.starts_with('0') {
                return Err("Version segment starts with 0".into());
            }
        } else if !contains_only(part, |c| c.is_ascii_alphanumeric() || c == '-') {
            return Err("Invalid Prerelease string".into());
        }
    }
    Ok(())
}

fn validate_metadata(m: &str) -> Result<(), String> {
    for part in m.split('.') {
        if !contains_only(part, |c| c.is_ascii_alphanumeric() || c == '-') {
            return Err("Invalid Metadata string".into());
        }
    }
    Ok(())
}

impl Version {
    /// `semver.NewVersion`.
    pub fn parse(v: &str) -> Result<Version, String> {
        let (major, minor, patch, pre, metadata) = match_version(v).ok_or(ERR_INVALID)?;
        let mut sv = Version {
            major: parse_segment(major)?,
            minor: 0,
            patch: 0,
            pre: pre.to_string(),
            metadata: metadata.to_string(),
            original: v.to_string(),
        };
        if !minor.is_empty() {
            sv.minor = parse_segment(&minor[1..])?;
        }
        if !patch.is_empty() {
            sv.patch = parse_segment(&patch[1..])?;
        }
        if !sv.pre.is_empty() {
            validate_prerelease(&sv.pre)?;
        }
        if !sv.metadata.is_empty() {
            validate_metadata(&sv.metadata)?;
        }
        Ok(sv)
    }

    /// `Version.Compare`: metadata is ignored; a pre-release sorts before
    /// its release.
    pub fn compare(&self, o: &Version) -> Ordering {
        self.major
            .cmp(&o.major)
            .then(self.minor.cmp(&o.minor))
            .then(self.patch.cmp(&o.patch))
            .then_with(|| match (self.pre.is_empty(), o.pre.is_empty()) {
                (true, true) => Ordering::Equal,
                (true, false) => Ordering::Greater,
                (false, true) => Ordering::Less,
                (false, false) => compare_prerelease(&self.pre, &o.pre),
            })
    }

    fn v_prefix(&self) -> &str {
        if self.original.starts_with('v') {
            "v"
        } else {
            ""
        }
    }

    fn with_original(mut self, prefix: &str) -> Version {
        self.original = format!("{prefix}{self}");
        self
    }
}

impl fmt::Display for Version {
    /// `Version.String()`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)?;
        if !self.pre.is_empty() {
            write!(f, "-{}", self.pre)?;
        }
        if !self.metadata.is_empty() {
            write!(f, "+{}", self.metadata)?;
        }
        Ok(())
    }
}

fn compare_prerelease(v: &str, o: &str) -> Ordering {
    let sp: Vec<&str> = v.split('.').collect();
    let op: Vec<&str> = o.split('.').collect();
    for i in 0..sp.len().max(op.len()) {
        let d = compare_pre_part(
            sp.get(i).copied().unwrap_or(""),
            op.get(i).copied().unwrap_or(""),
        );
        if d != Ordering::Equal {
            return d;
        }
    }
    Ordering::Equal
}

fn compare_pre_part(s: &str, o: &str) -> Ordering {
    if s == o {
        return Ordering::Equal;
    }
    if s.is_empty() {
        return Ordering::Less;
    }
    if o.is_empty() {
        return Ordering::Greater;
    }
    match (s.parse::<u64>(), o.parse::<u64>()) {
        (Err(_), Err(_)) => {
            if s > o {
                Ordering::Greater
            } else {
                Ordering::Less
            }
        }
        (Ok(_), Err(_)) => Ordering::Less,
        (Err(_), Ok(_)) => Ordering::Greater,
        (Ok(a), Ok(b)) => {
            if a > b {
                Ordering::Greater
            } else {
                Ordering::Less
            }
        }
    }
}

/// A `semver.Version` *value* (what `IncMajor`, `SetPrerelease` … return):
/// only the value-receiver methods are reachable on it, so templates get
/// Go's "can't evaluate field Original in type semver.Version".
#[derive(Clone, Debug)]
pub struct VersionValue(pub Version);

const VALUE_METHODS: &[&str] = &[
    "Major",
    "Minor",
    "Patch",
    "Prerelease",
    "Metadata",
    "String",
    "IncPatch",
    "IncMinor",
    "IncMajor",
    "SetPrerelease",
    "SetMetadata",
];

impl Object for VersionValue {
    fn type_name(&self) -> &str {
        "semver.Version"
    }
    fn kind_name(&self) -> &str {
        "struct"
    }
    fn member(&self, name: &str) -> Option<Member> {
        if VALUE_METHODS.contains(&name) {
            self.0.member(name)
        } else {
            None
        }
    }
    fn fmt_v(&self, out: &mut String) {
        out.push_str(&self.0.to_string());
    }
    fn json_value(&self) -> Option<Value> {
        Some(Value::string(self.0.to_string()))
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

fn version_value(v: Version) -> Value {
    Value::Object(Rc::new(VersionValue(v)))
}

/// The `*semver.Version` argument of a method (Go would refuse anything
/// else at the call).
fn version_arg(args: &[Value], method: &str) -> Result<Version, String> {
    match args.first() {
        Some(Value::Object(o)) => match o.as_any().downcast_ref::<Version>() {
            Some(v) => Ok(v.clone()),
            None => Err(format!(
                "wrong type for value; expected *semver.Version; got {}",
                o.type_name()
            )),
        },
        Some(other) => Err(format!(
            "wrong type for value; expected *semver.Version; got {}",
            other.type_name()
        )),
        None => Err(format!("wrong number of args for {method}: want 1 got 0")),
    }
}

impl Object for Version {
    fn type_name(&self) -> &str {
        "*semver.Version"
    }
    fn member(&self, name: &str) -> Option<Member> {
        let me = self.clone();
        let m: Method = match name {
            "Major" => Rc::new(move |_| Ok(Value::U64(me.major))),
            "Minor" => Rc::new(move |_| Ok(Value::U64(me.minor))),
            "Patch" => Rc::new(move |_| Ok(Value::U64(me.patch))),
            "Prerelease" => Rc::new(move |_| Ok(Value::string(me.pre.clone()))),
            "Metadata" => Rc::new(move |_| Ok(Value::string(me.metadata.clone()))),
            "Original" => Rc::new(move |_| Ok(Value::string(me.original.clone()))),
            "String" => Rc::new(move |_| Ok(Value::string(me.to_string()))),
            "IncPatch" => Rc::new(move |_| {
                let mut n = me.clone();
                if me.pre.is_empty() {
                    n.patch += 1;
                }
                n.pre.clear();
                n.metadata.clear();
                Ok(version_value(n.with_original(me.v_prefix())))
            }),
            "IncMinor" => Rc::new(move |_| {
                let mut n = me.clone();
                n.pre.clear();
                n.metadata.clear();
                n.patch = 0;
                n.minor += 1;
                Ok(version_value(n.with_original(me.v_prefix())))
            }),
            "IncMajor" => Rc::new(move |_| {
                let mut n = me.clone();
                n.pre.clear();
                n.metadata.clear();
                n.patch = 0;
                n.minor = 0;
                n.major += 1;
                Ok(version_value(n.with_original(me.v_prefix())))
            }),
            "SetPrerelease" => Rc::new(move |a| {
                let p = a.first().and_then(Value::as_str).unwrap_or("");
                if !p.is_empty() {
                    validate_prerelease(p)?;
                }
                let mut n = me.clone();
                n.pre = p.to_string();
                Ok(version_value(n.with_original(me.v_prefix())))
            }),
            "SetMetadata" => Rc::new(move |a| {
                let p = a.first().and_then(Value::as_str).unwrap_or("");
                if !p.is_empty() {
                    validate_metadata(p)?;
                }
                let mut n = me.clone();
                n.metadata = p.to_string();
                Ok(version_value(n.with_original(me.v_prefix())))
            }),
            "LessThan" => Rc::new(move |a| {
                Ok(Value::Bool(
                    me.compare(&version_arg(a, "LessThan")?).is_lt(),
                ))
            }),
            "LessThanEqual" => Rc::new(move |a| {
                Ok(Value::Bool(
                    me.compare(&version_arg(a, "LessThanEqual")?).is_le(),
                ))
            }),
            "GreaterThan" => Rc::new(move |a| {
                Ok(Value::Bool(
                    me.compare(&version_arg(a, "GreaterThan")?).is_gt(),
                ))
            }),
            "GreaterThanEqual" => Rc::new(move |a| {
                Ok(Value::Bool(
                    me.compare(&version_arg(a, "GreaterThanEqual")?).is_ge(),
                ))
            }),
            "Equal" => {
                Rc::new(move |a| Ok(Value::Bool(me.compare(&version_arg(a, "Equal")?).is_eq())))
            }
            "Compare" => {
                Rc::new(move |a| Ok(Value::Int(me.compare(&version_arg(a, "Compare")?) as i64)))
            }
            _ => return None,
        };
        Some(Member::Method(m))
    }
    fn fmt_v(&self, out: &mut String) {
        // Version has a value-receiver String(), so %v prints it.
        out.push_str(&self.to_string());
    }
    fn json_value(&self) -> Option<Value> {
        // MarshalJSON: the String() form.
        Some(Value::string(self.to_string()))
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// One parsed constraint (`constraint` in Masterminds).
#[derive(Debug)]
struct Constraint {
    con: Version,
    op: String,
    minor_dirty: bool,
    patch_dirty: bool,
    dirty: bool,
}

/// `*semver.Constraints`: OR of ANDs.
#[derive(Debug)]
pub struct Constraints {
    or: Vec<Vec<Constraint>>,
}

fn is_x(s: &str) -> bool {
    matches!(s, "x" | "*" | "X")
}

/// Masterminds' `rewriteRange`: `1 - 2` → `>= 1, <= 2`.
fn rewrite_range(i: &str) -> String {
    let re = range_re();
    let mut o = i.to_string();
    let found: Vec<(String, String, String)> = re
        .captures_iter(i)
        .map(|c| {
            let g = |n: usize| c.get(n).map_or("", |m| m.as_str()).to_string();
            (g(0), g(1), g(11))
        })
        .collect();
    for (whole, lo, hi) in found {
        o = o.replacen(&whole, &format!(">= {lo}, <= {hi} "), 1);
    }
    o
}

impl Constraints {
    /// `semver.NewConstraint`.
    pub fn parse(c: &str) -> Result<Constraints, String> {
        if let Some(one) = single_constraint(c) {
            return Ok(Constraints {
                or: vec![vec![one?]],
            });
        }
        Constraints::parse_by_regex(c)
    }

    /// Masterminds' way: rewrite ranges, validate, find each constraint.
    fn parse_by_regex(c: &str) -> Result<Constraints, String> {
        let c = rewrite_range(c);
        let mut or = Vec::new();
        for v in c.split("||") {
            if !valid_re().is_match(v) {
                return Err(format!("improper constraint: {v}"));
            }
            let mut cs: Vec<&str> = find_re().find_iter(v).map(|m| m.as_str()).collect();
            if cs.is_empty() {
                cs.push(v);
            }
            let mut and = Vec::new();
            for s in cs {
                and.push(parse_constraint(s)?);
            }
            or.push(and);
        }
        Ok(Constraints { or })
    }

    /// `Constraints.Check`.
    pub fn check(&self, v: &Version) -> bool {
        self.or.iter().any(|and| and.iter().all(|c| c.check(v)))
    }
}

/// The common case of a lone constraint (`>=1.21.0-0`, `~ 1.2`, `1.x`),
/// matched without regexes (their engine costs more to build than charts
/// spend on the rest of their metadata). `None` for anything else, which
/// goes the regex way. For these strings the regex way finds no range to
/// rewrite, one `||` part, one match of the constraint pattern, and then
/// picks the first operator in pattern order after which a version matches
/// to the end, as done here.
fn single_constraint(c: &str) -> Option<Result<Constraint, String>> {
    // RE2's `\s`.
    let ws = |ch: char| matches!(ch, '\t' | '\n' | '\x0c' | '\r' | ' ');
    let t = c.trim_matches(ws);
    if t.is_empty() || t.contains("||") {
        return None;
    }
    // The alternatives of `OPS`, in the pattern's order.
    const OPS_ORDER: [&str; 12] = [
        "=", "", "!=", ">", "<", ">=", "=>", "<=", "=<", "~", "~>", "^",
    ];
    let cv_digit = |b: u8| b.is_ascii_digit() || matches!(b, b'|' | b'x' | b'X' | b'*');
    OPS_ORDER.iter().find_map(|op| {
        let ver = t.strip_prefix(op)?.trim_start_matches(ws);
        let (major, minor, patch, pre, _) = match_version_of(ver, cv_digit)?;
        let pre = if pre.is_empty() {
            String::new()
        } else {
            format!("-{pre}")
        };
        Some(constraint_from(op, ver, major, minor, patch, &pre))
    })
}

fn parse_constraint(c: &str) -> Result<Constraint, String> {
    if c.is_empty() {
        return Ok(Constraint {
            con: Version {
                major: 0,
                minor: 0,
                patch: 0,
                pre: String::new(),
                metadata: String::new(),
                original: "0.0.0".into(),
            },
            op: String::new(),
            minor_dirty: false,
            patch_dirty: false,
            dirty: true,
        });
    }
    let caps = constraint_re()
        .captures(c)
        .ok_or_else(|| format!("improper constraint: {c}"))?;
    let g = |i: usize| caps.get(i).map_or("", |m| m.as_str());
    constraint_from(g(1), g(2), g(3), g(4), g(5), g(6))
}

/// A constraint from the groups of Masterminds' constraint pattern:
/// operator, whole version, major, `.minor`, `.patch`, `-pre-release`.
fn constraint_from(
    op: &str,
    whole: &str,
    m3: &str,
    m4: &str,
    m5: &str,
    m6: &str,
) -> Result<Constraint, String> {
    let (mut minor_dirty, mut patch_dirty, mut dirty) = (false, false, false);
    let ver = if is_x(m3) || m3.is_empty() {
        dirty = true;
        format!("0.0.0{m6}")
    } else if is_x(m4.trim_start_matches('.')) || m4.is_empty() {
        minor_dirty = true;
        dirty = true;
        format!("{m3}.0.0{m6}")
    } else if is_x(m5.trim_start_matches('.')) || m5.is_empty() {
        dirty = true;
        patch_dirty = true;
        format!("{m3}{m4}.0{m6}")
    } else {
        whole.to_string()
    };
    let con = Version::parse(&ver).map_err(|_| "constraint Parser Error".to_string())?;
    Ok(Constraint {
        con,
        op: op.to_string(),
        minor_dirty,
        patch_dirty,
        dirty,
    })
}

impl Constraint {
    fn check(&self, v: &Version) -> bool {
        match self.op.as_str() {
            "" | "=" => self.tilde_or_equal(v),
            "!=" => self.not_equal(v),
            ">" => self.greater_than(v),
            "<" => self.pre_ok(v) && v.compare(&self.con).is_lt(),
            ">=" | "=>" => self.pre_ok(v) && v.compare(&self.con).is_ge(),
            "<=" | "=<" => self.less_than_equal(v),
            "~" | "~>" => self.tilde(v),
            "^" => self.caret(v),
            _ => false,
        }
    }

    /// A pre-release version only matches constraints with a pre-release.
    fn pre_ok(&self, v: &Version) -> bool {
        v.pre.is_empty() || !self.con.pre.is_empty()
    }

    fn not_equal(&self, v: &Version) -> bool {
        let c = &self.con;
        if self.dirty {
            if !self.pre_ok(v) {
                return false;
            }
            if c.major != v.major {
                return true;
            }
            if c.minor != v.minor && !self.minor_dirty {
                return true;
            } else if self.minor_dirty {
                return false;
            } else if c.patch != v.patch && !self.patch_dirty {
                return true;
            } else if self.patch_dirty {
                if !v.pre.is_empty() || !c.pre.is_empty() {
                    return compare_prerelease(&v.pre, &c.pre) != Ordering::Equal;
                }
                return false;
            }
        }
        !v.compare(c).is_eq()
    }

    fn greater_than(&self, v: &Version) -> bool {
        if !self.pre_ok(v) {
            return false;
        }
        let c = &self.con;
        if !self.dirty {
            return v.compare(c).is_gt();
        }
        if v.major > c.major {
            return true;
        } else if v.major < c.major || self.minor_dirty {
            return false;
        } else if self.patch_dirty {
            return v.minor > c.minor;
        }
        v.compare(c).is_gt()
    }

    fn less_than_equal(&self, v: &Version) -> bool {
        if !self.pre_ok(v) {
            return false;
        }
        let c = &self.con;
        if !self.dirty {
            return v.compare(c).is_le();
        }
        if v.major > c.major || v.major == c.major && v.minor > c.minor && !self.minor_dirty {
            return false;
        }
        true
    }

    fn tilde(&self, v: &Version) -> bool {
        if !self.pre_ok(v) {
            return false;
        }
        let c = &self.con;
        if v.compare(c).is_lt() {
            return false;
        }
        if c.major == 0 && c.minor == 0 && c.patch == 0 && !self.minor_dirty && !self.patch_dirty {
            return true;
        }
        if v.major != c.major {
            return false;
        }
        if v.minor != c.minor && !self.minor_dirty {
            return false;
        }
        true
    }

    fn tilde_or_equal(&self, v: &Version) -> bool {
        if !self.pre_ok(v) {
            return false;
        }
        if self.dirty {
            return self.tilde(v);
        }
        v.compare(&self.con).is_eq()
    }

    fn caret(&self, v: &Version) -> bool {
        if !self.pre_ok(v) {
            return false;
        }
        let c = &self.con;
        if v.compare(c).is_lt() {
            return false;
        }
        if c.major > 0 || self.minor_dirty {
            return v.major == c.major;
        }
        if c.major == 0 && v.major > 0 {
            return false;
        }
        if c.minor > 0 || self.patch_dirty {
            return v.minor == c.minor;
        }
        if c.minor == 0 && v.minor > 0 {
            return false;
        }
        c.patch == v.patch
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{err, s, v};
    use super::*;

    fn check(c: &str, ver: &str) -> bool {
        match (Constraints::parse(c), Version::parse(ver)) {
            (Ok(c), Ok(v)) => c.check(&v),
            (Err(e), _) | (_, Err(e)) => panic!("{e}"),
        }
    }

    /// Lone constraints parsed without regexes come out as the regex way
    /// makes them, errors included; other shapes are left to it.
    #[test]
    fn single_constraints_as_the_regexes() {
        let inputs = [
            ">=1.21.0-0",
            ">= 1.19.0-0",
            "  ~1.2 ",
            "~>1.2.3",
            "^1.2",
            "1.x",
            "1.2.*",
            "=1.2.3",
            "=>1.2",
            "=<1",
            "<=v1.2.3-rc.1+b",
            "!=1.2.3",
            "> 1",
            "<2.0.0-0",
            "*",
            "x",
            "v1.2",
            "1.2.3+meta",
            "01.2.3",
            "1.2.3-01",
            "1.2.x-alpha",
            "1|2",
            "1.2.3-",
            ">=a",
            "> =1",
            ">=1.2,<2",
            "1.2 - 3",
            "1||2",
            ">=1.2 <2",
            "",
            "1.2.3.4",
            "~ 1",
            "^v2.x",
        ];
        // Shapes the hand matcher leaves to the regexes (lists, ranges,
        // ORs, and what is no lone constraint at all).
        let slow_way = [
            ">=1.2,<2", "1.2 - 3", "1||2", ">=1.2 <2", "", "1.2.3.4", "1.2.3-", ">=a", "> =1",
        ];
        for i in inputs {
            let fast = single_constraint(i).map(|r| r.map(|c| format!("[[{c:?}]]")));
            let slow = Constraints::parse_by_regex(i).map(|c| format!("{:?}", c.or));
            match fast {
                Some(f) => assert_eq!(f, slow, "{i:?}"),
                None => assert!(slow_way.contains(&i), "{i:?} should not need the regexes"),
            }
        }
        for i in slow_way {
            assert!(single_constraint(i).is_none(), "{i:?}");
        }
    }

    /// The hand matcher finds the groups Masterminds' regex finds.
    #[test]
    fn version_matcher_is_the_regex() {
        let re = regex::Regex::new(
            r"^v?([0-9]+)(\.[0-9]+)?(\.[0-9]+)?(-([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?(\+([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?$",
        )
        .unwrap();
        let inputs = [
            "",
            "v",
            "1",
            "v1",
            "vv1",
            "1.",
            "1.2",
            "1.2.",
            "1.2.3",
            "1.2.3.4",
            "01.2.3",
            "1..2",
            "1.2.3-",
            "1.2.3-a",
            "1.2-a.b-c",
            "1-a..b",
            "1.2.3-.a",
            "1.2.3-a.",
            "1.2.3+b",
            "1.2.3+",
            "1.2.3-a+b.c",
            "1.2.3-a+b+c",
            "1.2.3-a+",
            "1.2.3+b-c.d",
            "1 ",
            " 1",
            "1.2.3-é",
            "v1.21.0-eks-1",
            "1.2.3_4",
            "1.x",
            "1.2.3-a-+b",
        ];
        for i in inputs {
            let want = re.captures(i).map(|c| {
                let g = |n: usize| c.get(n).map_or("", |m| m.as_str());
                (g(1), g(2), g(3), g(5), g(8))
            });
            assert_eq!(match_version(i), want, "{i:?}");
        }
    }

    #[test]
    fn versions() {
        assert_eq!(v("semver", &[s("v1.2")]), "1.2.0");
        assert_eq!(
            v("semver", &[s("1.2.3-beta.1+build")]),
            "1.2.3-beta.1+build"
        );
        assert_eq!(err("semver", &[s("1.2.3.4")]), "Invalid Semantic Version");
        assert_eq!(
            err("semver", &[s("1.2.3-01")]),
            "Version segment starts with 0"
        );
        let Ok(Value::Object(o)) = super::super::testutil::call("semver", &[s("v1.2.3-rc.1")])
        else {
            panic!()
        };
        let Some(Member::Method(m)) = o.member("Major") else {
            panic!()
        };
        assert!(matches!(m(&[]), Ok(Value::U64(1))));
        let Some(Member::Method(m)) = o.member("Original") else {
            panic!()
        };
        let Some(Member::Method(inc)) = o.member("IncMajor") else {
            panic!()
        };
        let Ok(Value::Object(next)) = inc(&[]) else {
            panic!()
        };
        assert_eq!(next.type_name(), "semver.Version");
        assert!(next.member("Original").is_none());
        assert!(next.member("Major").is_some());
        assert_eq!(
            m(&[])
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .as_deref(),
            Some("v1.2.3-rc.1")
        );
    }

    #[test]
    fn constraints() {
        assert!(check(">=1.20.0-0", "1.21.0-eks-1"));
        assert!(!check(">=1.20.0", "1.21.0-eks-1"));
        assert!(check(">=1.20", "v1.25.3"));
        assert!(check("~1.2.3", "1.2.9"));
        assert!(!check("~1.2.3", "1.3.0"));
        assert!(check("^1.2", "1.9.0"));
        assert!(!check("^0.2.3", "0.3.0"));
        assert!(check("^0.0.3", "0.0.3"));
        assert!(check("1.x", "1.5.0"));
        assert!(check("*", "3.0.0"));
        assert!(check("1.2 - 1.4", "1.4.9"));
        assert!(!check("1.2 - 1.4", "1.5.0"));
        assert!(check("<1.0.0 || >=2.0.0", "2.1.0"));
        assert!(check(">1.0, <2.0", "1.5.0"));
        assert!(!check("!=1.5.0", "1.5.0"));
        assert!(check("!=1.5.x", "1.6.0"));
        assert!(check(">1.4.x", "1.5.0"));
        assert!(check("<=1.4", "1.4.9"));
        assert_eq!(
            v("semverCompare", &[s(">=1.8-0"), s("1.19.3-gke.1")]),
            "true"
        );
        assert_eq!(
            err("semverCompare", &[s("!!1"), s("1.0.0")]),
            "improper constraint: !!1"
        );
        assert_eq!(
            err("semverCompare", &[s(">1"), s("x")]),
            "Invalid Semantic Version"
        );
    }
}

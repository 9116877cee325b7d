//! `values.schema.json` validation: Helm v3.17's `ValidateAgainstSchema`
//! (`pkg/chartutil/jsonschema.go`), checking the chart's values and each
//! subchart's values against their schemas.
//!
//! Validation itself is done by the `jsonschema` crate; the error lines are
//! rewritten into the texts of gojsonschema (the library Helm uses), e.g.
//! `- policy: Invalid type. Expected: string, given: null`, with fields as
//! gojsonschema names them (`(root)`, `a.b.0`). gojsonschema visits sibling
//! properties in Go map order (random), so when several properties fail the
//! order of their lines is not fixed in Helm either; we keep the crate's.

use jsonschema::ValidationError;
use jsonschema::error::ValidationErrorKind as K;
use serde_json::Value as Json;

use crate::chart::types::Chart;
use crate::yaml::{Mapping, Yaml};

/// `ValidateAgainstSchema`: `Ok` when every schema accepts its values; the
/// error is the text Helm puts after "values don't meet the specifications
/// of the schema(s) in the following chart(s):\n".
pub fn validate_against_schema(chart: &Chart, values: &Mapping) -> Result<(), String> {
    let mut sb = String::new();
    if let Some(schema) = &chart.schema
        && let Err(e) = validate_against_single_schema(values, schema)
    {
        sb.push_str(&format!("{}:\n", chart.name()));
        sb.push_str(&e);
    }
    for sub in &chart.dependencies {
        let empty = Mapping::new();
        let sub_values = match values.get(sub.name()) {
            Some(Yaml::Map(m)) => m,
            _ => &empty,
        };
        if let Err(e) = validate_against_schema(sub, sub_values) {
            sb.push_str(&e);
        }
    }
    if sb.is_empty() { Ok(()) } else { Err(sb) }
}

/// Values as the JSON Helm gives gojsonschema (through `yaml.Marshal` and
/// `YAMLToJSON`): integral floats become JSON integers.
pub fn to_json(y: &Yaml) -> Json {
    match y {
        Yaml::Null => Json::Null,
        Yaml::Bool(b) => Json::Bool(*b),
        Yaml::Int(i) => Json::from(*i),
        Yaml::Float(f) => {
            if f.is_finite() && f.fract() == 0.0 && f.abs() < 9.0e15 {
                Json::from(*f as i64)
            } else {
                serde_json::Number::from_f64(*f).map_or(Json::Null, Json::Number)
            }
        }
        Yaml::Str(s) => Json::String(s.clone()),
        Yaml::Seq(items) => Json::Array(items.iter().map(to_json).collect()),
        Yaml::Map(m) => Json::Object(m.iter().map(|(k, v)| (k.clone(), to_json(v))).collect()),
    }
}

/// `ValidateAgainstSingleSchema`: `- field: description\n` per error.
pub fn validate_against_single_schema(values: &Mapping, schema: &[u8]) -> Result<(), String> {
    let schema: Json = serde_json::from_slice(schema).map_err(|e| e.to_string())?;
    let instance = Json::Object(
        values
            .iter()
            .map(|(k, v)| (k.clone(), to_json(v)))
            .collect(),
    );
    // gojsonschema defaults to draft 7 features when `$schema` is absent.
    // gojsonschema checks `format` whatever the draft, with its own
    // checkers (which differ from the crate's: `date-time` accepts a bare
    // date or time, `email` is net/mail's, unknown names pass).
    let mut opts = jsonschema::options().should_validate_formats(true);
    for (name, check) in formats::CHECKERS {
        opts = opts.with_format(*name, *check);
    }
    if schema.get("$schema").is_none() {
        opts = opts.with_draft(jsonschema::Draft::Draft7);
    }
    let validator = opts.build(&schema).map_err(|e| e.to_string())?;
    let errors: Vec<_> = validator.iter_errors(&instance).collect();
    let refs: Vec<&ValidationError<'_>> = errors.iter().collect();
    let out = render_errors(&refs, &instance, &schema, 0).concat();
    if out.is_empty() { Ok(()) } else { Err(out) }
}

/// Schema path segments.
fn segs(p: &str) -> Vec<&str> {
    p.split('/').filter(|s| !s.is_empty()).collect()
}

/// Whether segment `k` of a schema path is a keyword (not a property name).
fn is_keyword(s: &[&str], k: usize) -> bool {
    k == 0
        || !matches!(
            s[k - 1],
            "properties" | "patternProperties" | "definitions" | "$defs" | "dependencies"
        )
}

/// How many instance levels a schema path prefix descends.
fn instance_depth(s: &[&str]) -> usize {
    (0..s.len())
        .filter(|&k| {
            is_keyword(s, k)
                && matches!(
                    s[k],
                    "properties"
                        | "patternProperties"
                        | "additionalProperties"
                        | "items"
                        | "additionalItems"
                        | "contains"
                )
        })
        .count()
}

/// The instance pointer cut to its first `depth` segments.
fn cut_pointer(p: &str, depth: usize) -> String {
    segs(p)
        .into_iter()
        .take(depth)
        .fold(String::new(), |acc, s| format!("{acc}/{s}"))
}

/// The `- field: description\n` lines for a set of errors, in gojsonschema's
/// visiting order. `base` is how many schema path segments the caller has
/// already accounted for (inside an anyOf/allOf/then branch).
fn render_errors(
    errors: &[&ValidationError<'_>],
    instance: &Json,
    schema: &Json,
    base: usize,
) -> Vec<String> {
    // gojsonschema stops checking a value against a subschema once its
    // `type` fails; drop the crate's other errors for that value from the
    // same subschema.
    let type_failures: Vec<(String, String)> = errors
        .iter()
        .filter(|e| matches!(e.kind(), K::Type { .. }))
        .map(|e| {
            let sp = e.schema_path().as_str();
            let parent = sp.rsplit_once('/').map_or("", |(p, _)| p);
            (e.instance_path().as_str().to_string(), format!("{parent}/"))
        })
        .collect();
    let mut keyed: Vec<(OrderKey, Vec<String>)> = Vec::new();
    // allOf and if/then/else: the crate reports the branch errors only;
    // gojsonschema merges them under an error of its own. Group by the
    // first such keyword below `base`.
    let mut groups: Vec<(String, String, usize, Vec<&ValidationError<'_>>)> = Vec::new();
    for err in errors {
        let ipath = err.instance_path().as_str().to_string();
        let spath = err.schema_path().as_str().to_string();
        let is_type = matches!(err.kind(), K::Type { .. });
        if !is_type
            && type_failures
                .iter()
                .any(|(ip, sp)| *ip == ipath && spath.starts_with(sp.as_str()))
        {
            continue;
        }
        let s = segs(&spath);
        let branch = (base..s.len().saturating_sub(1)).find(|&k| {
            is_keyword(&s, k)
                && (matches!(s[k], "then" | "else")
                    || (s[k] == "allOf" && s[k + 1].parse::<usize>().is_ok()))
        });
        if let Some(k) = branch {
            let prefix = s[..k].join("/");
            match groups.iter_mut().find(|g| g.0 == prefix && g.1 == s[k]) {
                Some(g) => g.3.push(err),
                None => groups.push((prefix, s[k].to_string(), k, vec![err])),
            }
            continue;
        }
        let field = go_field(&ipath);
        let node = instance.pointer(&ipath).unwrap_or(&Json::Null);
        let mut lines: Vec<String> = describe(err.kind(), node, &field, schema, &spath)
            .into_iter()
            .map(|d| format!("- {field}: {d}\n"))
            .collect();
        // anyOf/oneOf: gojsonschema appends the errors of the best failing
        // branch (the first one with the fewest errors).
        if let K::AnyOf { context } | K::OneOfNotValid { context } = err.kind()
            && let Some(best) = context
                .iter()
                .filter(|b| !b.is_empty())
                .min_by_key(|b| b.len())
        {
            let refs: Vec<&ValidationError<'_>> = best.iter().collect();
            lines.extend(render_errors(&refs, instance, schema, s.len() + 1));
        }
        keyed.push((
            order_key(&ipath, keyword_phase(err.kind()), instance),
            lines,
        ));
    }
    for (_, kw, k, members) in groups {
        let s = segs(members[0].schema_path().as_str());
        let node_ptr = cut_pointer(members[0].instance_path().as_str(), instance_depth(&s[..k]));
        let field = go_field(&node_ptr);
        let mut lines = Vec::new();
        let phase = if kw == "allOf" {
            // Failing branches in order, then the allOf error.
            let mut by_branch: Vec<(usize, Vec<&ValidationError<'_>>)> = Vec::new();
            for m in members {
                let i = segs(m.schema_path().as_str())
                    .get(k + 1)
                    .and_then(|x| x.parse::<usize>().ok())
                    .unwrap_or(0);
                match by_branch.iter_mut().find(|b| b.0 == i) {
                    Some(b) => b.1.push(m),
                    None => by_branch.push((i, vec![m])),
                }
            }
            by_branch.sort_by_key(|b| b.0);
            for (_, errs) in by_branch {
                lines.extend(render_errors(&errs, instance, schema, k + 2));
            }
            lines.push(format!(
                "- {field}: Must validate all the schemas (allOf)\n"
            ));
            3
        } else {
            let (a, b) = if kw == "then" {
                ("then", "valid")
            } else {
                ("else", "not valid")
            };
            lines.push(format!(
                "- {field}: Must validate \"{a}\" as \"if\" was {b}\n"
            ));
            lines.extend(render_errors(&members, instance, schema, k + 1));
            6
        };
        keyed.push((order_key(&node_ptr, phase, instance), lines));
    }
    keyed.sort_by(|a, b| a.0.cmp(&b.0));
    keyed.into_iter().flat_map(|(_, l)| l).collect()
}

/// (phase, segment) pairs from the root to the error.
type OrderKey = Vec<(u32, Seg)>;

/// A path segment in visiting order: array items by index, object
/// properties by name (gojsonschema visits properties in Go map order,
/// which is random; by name is as good as any and stable).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Seg {
    Here,
    Index(usize),
    Name(String),
}

/// Where gojsonschema's `validateRecursive` reports an error: a sequence of
/// (phase, segment) from the root, ending with the keyword's own phase.
fn order_key(pointer: &str, phase: u32, instance: &Json) -> OrderKey {
    let mut key = Vec::new();
    let mut node = instance;
    if !pointer.is_empty() {
        for raw in pointer.trim_start_matches('/').split('/') {
            let seg = raw.replace("~1", "/").replace("~0", "~");
            match node {
                Json::Array(a) => {
                    let i = seg.parse::<usize>().unwrap_or(0);
                    // Items are checked inside validateArray, before minItems.
                    key.push((9, Seg::Index(i)));
                    node = a.get(i).unwrap_or(&Json::Null);
                }
                Json::Object(o) => {
                    // Properties are visited after the object's own checks.
                    key.push((100, Seg::Name(seg.clone())));
                    node = o.get(&seg).unwrap_or(&Json::Null);
                }
                _ => key.push((100, Seg::Name(seg))),
            }
        }
    }
    key.push((phase, Seg::Here));
    key
}

/// The order of checks within one `validateRecursive` call.
fn keyword_phase(kind: &K) -> u32 {
    match kind {
        K::Type { .. } => 0,
        K::AnyOf { .. } => 1,
        K::OneOfNotValid { .. } | K::OneOfMultipleValid { .. } => 2,
        K::Not { .. } => 4,
        K::AdditionalItems { .. } => 10,
        K::MinItems { .. } => 11,
        K::MaxItems { .. } => 12,
        K::UniqueItems => 13,
        K::Contains => 14,
        K::MultipleOf { .. } => 20,
        K::Maximum { .. } => 21,
        K::ExclusiveMaximum { .. } => 22,
        K::Minimum { .. } => 23,
        K::ExclusiveMinimum { .. } => 24,
        K::MinProperties { .. } => 30,
        K::MaxProperties { .. } => 31,
        K::Required { .. } => 32,
        K::AdditionalProperties { .. } => 33,
        K::PropertyNames { .. } => 34,
        K::Constant { .. } => 40,
        K::Enum { .. } => 41,
        K::Format { .. } => 42,
        K::MinLength { .. } => 50,
        K::MaxLength { .. } => 51,
        K::Pattern { .. } => 52,
        _ => 60,
    }
}

/// gojsonschema's format checkers (`format_checkers.go`), for strings.
mod formats {
    use std::sync::OnceLock;

    use regex::Regex;

    type Check = fn(&str) -> bool;

    pub const CHECKERS: &[(&str, Check)] = &[
        ("date", date),
        ("time", time),
        ("date-time", date_time),
        ("hostname", hostname),
        ("email", email),
        ("idn-email", email),
        ("ipv4", ipv4),
        ("ipv6", ipv6),
        ("uri", uri),
        ("uri-reference", uri_reference),
        ("iri", uri),
        ("iri-reference", uri_reference),
        ("uri-template", uri_template),
        ("uuid", uuid),
        ("regex", regex_format),
        ("json-pointer", json_pointer),
        ("relative-json-pointer", relative_json_pointer),
        // Known to the crate but not to gojsonschema: unchecked there.
        ("duration", any),
        ("idn-hostname", any),
    ];

    fn re(cell: &'static OnceLock<Regex>, src: &str) -> &'static Regex {
        cell.get_or_init(|| Regex::new(src).unwrap_or_else(|_| unreachable!("static regex")))
    }

    fn any(_: &str) -> bool {
        true
    }

    /// `time.Parse("2006-01-02", s)`.
    fn date(s: &str) -> bool {
        static R: OnceLock<Regex> = OnceLock::new();
        let Some(c) = re(&R, r"^(\d{4})-(\d{2})-(\d{2})$").captures(s) else {
            return false;
        };
        let (y, m, d): (i64, u32, u32) = (
            c[1].parse().unwrap_or(0),
            c[2].parse().unwrap_or(0),
            c[3].parse().unwrap_or(0),
        );
        let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
        let days = match m {
            1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
            4 | 6 | 9 | 11 => 30,
            2 if leap => 29,
            2 => 28,
            _ => return false,
        };
        (1..=days).contains(&d)
    }

    /// `15:04:05` with an optional fraction, then the zone part.
    fn clock(s: &str, zone: bool) -> bool {
        static R: OnceLock<Regex> = OnceLock::new();
        let Some(c) = re(
            &R,
            r"^(\d{2}):(\d{2}):(\d{2})(?:[.,]\d+)?(Z|[+-](\d{2}):(\d{2}))?$",
        )
        .captures(s) else {
            return false;
        };
        let n = |i: usize| {
            c.get(i)
                .map_or(0, |m| m.as_str().parse::<u32>().unwrap_or(99))
        };
        if c.get(4).is_some() != zone {
            return false;
        }
        n(1) < 24 && n(2) < 60 && n(3) < 60 && n(5) < 24 && n(6) < 60
    }

    fn time(s: &str) -> bool {
        clock(s, true) || clock(s, false)
    }

    /// Layouts "15:04:05", "15:04:05Z07:00", "2006-01-02", RFC 3339.
    fn date_time(s: &str) -> bool {
        if time(s) || date(s) {
            return true;
        }
        match s.split_once('T') {
            Some((d, t)) => date(d) && clock(t, true),
            None => false,
        }
    }

    fn hostname(s: &str) -> bool {
        static R: OnceLock<Regex> = OnceLock::new();
        re(
            &R,
            r"^([a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9\-]{0,61}[a-zA-Z0-9])(\.([a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9\-]{0,61}[a-zA-Z0-9]))*$",
        )
        .is_match(s)
            && s.len() < 256
    }

    /// An approximation of `net/mail.ParseAddress`: `local@domain`,
    /// optionally as `Name <local@domain>`.
    fn email(s: &str) -> bool {
        static R: OnceLock<Regex> = OnceLock::new();
        re(
            &R,
            r#"^(?:[^<>]*<[^\s<>@"]+@[^\s<>@]+>|[^\s<>@"(),:;]+@[^\s<>@(),:;]+)$"#,
        )
        .is_match(s.trim())
    }

    fn ipv4(s: &str) -> bool {
        s.parse::<std::net::IpAddr>().is_ok() && s.contains('.')
    }

    fn ipv6(s: &str) -> bool {
        s.parse::<std::net::IpAddr>().is_ok() && s.contains(':')
    }

    /// What `url.Parse` rejects: control characters, spaces in the scheme
    /// or host part, bad `%` escapes.
    fn url_parses(s: &str) -> bool {
        if s.chars().any(|c| c.is_control()) {
            return false;
        }
        let b = s.as_bytes();
        let mut i = 0;
        while i < b.len() {
            if b[i] == b'%' {
                if !(b.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
                    && b.get(i + 2).is_some_and(u8::is_ascii_hexdigit))
                {
                    return false;
                }
                i += 3;
                continue;
            }
            i += 1;
        }
        true
    }

    fn scheme(s: &str) -> Option<&str> {
        static R: OnceLock<Regex> = OnceLock::new();
        re(&R, r"^([a-zA-Z][a-zA-Z0-9+.\-]*):")
            .captures(s)
            .and_then(|c| c.get(1))
            .map(|m| m.as_str())
    }

    fn uri(s: &str) -> bool {
        url_parses(s) && scheme(s).is_some() && !s.contains('\\')
    }

    fn uri_reference(s: &str) -> bool {
        url_parses(s) && !s.contains('\\')
    }

    fn uri_template(s: &str) -> bool {
        static R: OnceLock<Regex> = OnceLock::new();
        uri_reference(s) && re(&R, r"^([^{]*(\{[^}]*\})?)*$").is_match(s)
    }

    fn uuid(s: &str) -> bool {
        static R: OnceLock<Regex> = OnceLock::new();
        re(
            &R,
            r"^(?i)[a-f0-9]{8}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{12}$",
        )
        .is_match(s)
    }

    fn regex_format(s: &str) -> bool {
        s.is_empty() || Regex::new(s).is_ok()
    }

    fn json_pointer(s: &str) -> bool {
        static R: OnceLock<Regex> = OnceLock::new();
        re(&R, r"^(?:/(?:[^~/]|~0|~1)*)*$").is_match(s)
    }

    fn relative_json_pointer(s: &str) -> bool {
        static R: OnceLock<Regex> = OnceLock::new();
        re(&R, r"^(?:0|[1-9][0-9]*)(?:#|(?:/(?:[^~/]|~0|~1)*)*)$").is_match(s)
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn go_checkers() {
            assert!(date_time("2020-01-01"));
            assert!(date_time("10:00:00"));
            assert!(date_time("2020-01-01T10:00:00.5+02:00"));
            assert!(!date_time("2020-02-30"));
            assert!(email("a@b"));
            assert!(email("Joe <a@b.c>"));
            assert!(!email("x"));
            assert!(ipv4("1.2.3.4") && !ipv4("::1") && ipv6("::1"));
            assert!(!hostname("a_b"));
            assert!(uri("http://x/%20") && !uri("/rel") && uri_reference("/rel"));
            assert!(!uri_reference("%zz"));
        }
    }
}

/// gojsonschema's field name for an instance location: `(root)` or the
/// dotted path without it.
fn go_field(pointer: &str) -> String {
    if pointer.is_empty() {
        return "(root)".to_string();
    }
    pointer
        .trim_start_matches('/')
        .split('/')
        .map(|s| s.replace("~1", "/").replace("~0", "~"))
        .collect::<Vec<_>>()
        .join(".")
}

/// gojsonschema's type name of a value.
fn type_name(v: &Json) -> &'static str {
    match v {
        Json::Null => "null",
        Json::Bool(_) => "boolean",
        Json::Number(n) => {
            if n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0) {
                "integer"
            } else {
                "number"
            }
        }
        Json::String(_) => "string",
        Json::Array(_) => "array",
        Json::Object(_) => "object",
    }
}

/// A number as gojsonschema prints limits (`big.Float` `%v`).
fn num(v: &Json) -> String {
    match v.as_f64() {
        Some(f) => crate::chart::coalesce::go_v(&Yaml::Float(f)),
        None => v.to_string(),
    }
}

/// The gojsonschema description(s) for one error of the crate.
fn describe(kind: &K, node: &Json, field: &str, schema: &Json, spath: &str) -> Vec<String> {
    let one = |s: String| vec![s];
    match kind {
        K::Type { kind } => {
            // The schema's own `type` keeps gojsonschema's order.
            let expected = match schema.pointer(spath) {
                Some(Json::String(s)) => s.clone(),
                Some(Json::Array(a)) if a.len() == 1 => {
                    a[0].as_str().unwrap_or_default().to_string()
                }
                Some(Json::Array(a)) => format!(
                    "[{}]",
                    a.iter()
                        .filter_map(|t| t.as_str())
                        .collect::<Vec<_>>()
                        .join(",")
                ),
                _ => match kind {
                    jsonschema::error::TypeKind::Single(t) => t.to_string(),
                    jsonschema::error::TypeKind::Multiple(ts) => format!(
                        "[{}]",
                        ts.iter()
                            .map(|t| t.to_string())
                            .collect::<Vec<_>>()
                            .join(",")
                    ),
                },
            };
            one(format!(
                "Invalid type. Expected: {expected}, given: {}",
                type_name(node)
            ))
        }
        K::Required { property } => one(format!(
            "{} is required",
            property
                .as_str()
                .map_or_else(|| property.to_string(), str::to_string)
        )),
        K::AdditionalProperties { unexpected } => unexpected
            .iter()
            .map(|p| format!("Additional property {p} is not allowed"))
            .collect(),
        K::Enum { options } => {
            let allowed = match options.as_ref() {
                Json::Array(a) => a
                    .iter()
                    .map(|v| v.to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
                other => other.to_string(),
            };
            one(format!("{field} must be one of the following: {allowed}"))
        }
        K::Constant { expected_value } => one(format!(
            "{field} does not match: {}",
            expected_value.as_ref()
        )),
        K::Minimum { limit } => one(format!("Must be greater than or equal to {}", num(limit))),
        K::Maximum { limit } => one(format!("Must be less than or equal to {}", num(limit))),
        K::ExclusiveMinimum { limit } => one(format!("Must be greater than {}", num(limit))),
        K::ExclusiveMaximum { limit } => one(format!("Must be less than {}", num(limit))),
        K::MinLength { limit } => one(format!(
            "String length must be greater than or equal to {limit}"
        )),
        K::MaxLength { limit } => one(format!(
            "String length must be less than or equal to {limit}"
        )),
        K::Pattern { pattern } => one(format!("Does not match pattern '{pattern}'")),
        K::Format { format } => one(format!("Does not match format '{format}'")),
        K::MinItems { limit } => one(format!("Array must have at least {limit} items")),
        K::MaxItems { limit } => one(format!("Array must have at most {limit} items")),
        K::MinProperties { limit } => one(format!("Must have at least {limit} properties")),
        K::MaxProperties { limit } => one(format!("Must have at most {limit} properties")),
        K::UniqueItems => {
            let (mut i, mut j) = (0, 0);
            if let Json::Array(a) = node {
                'outer: for x in 0..a.len() {
                    for y in x + 1..a.len() {
                        if a[x] == a[y] {
                            (i, j) = (x, y);
                            break 'outer;
                        }
                    }
                }
            }
            one(format!("array items[{i},{j}] must be unique"))
        }
        K::AnyOf { .. } => one("Must validate at least one schema (anyOf)".into()),
        K::OneOfNotValid { .. } | K::OneOfMultipleValid { .. } => {
            one("Must validate one and only one schema (oneOf)".into())
        }
        K::Not { .. } => one("Must not validate the schema (not)".into()),
        K::FalseSchema => one("False always fails validation".into()),
        K::MultipleOf { multiple_of } => one(format!(
            "Must be a multiple of {}",
            crate::chart::coalesce::go_v(&Yaml::Float(*multiple_of))
        )),
        K::Contains => one("At least one of the items must match".into()),
        K::AdditionalItems { .. } => one("No additional items allowed on array".into()),
        K::PropertyNames { .. } => one(format!(
            "Property name of \"{}\" does not match",
            field.rsplit('.').next().unwrap_or(field)
        )),
        other => one(format!("{other:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chart::types::Metadata;

    /// helm v3.17.3's output for the corpus case external-dns-novalues.
    #[test]
    fn external_dns_message() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus");
        let chart_dir = root.join("charts/external-dns");
        if !chart_dir.exists() {
            return;
        }
        let mut chart = crate::chart::load::load(&chart_dir).unwrap();
        let err = crate::chart::coalesce::to_render_values(
            &mut chart,
            &Mapping::new(),
            false,
            &mut |_: &str| {},
        )
        .unwrap_err();
        let expected =
            std::fs::read_to_string(root.join("expected/external-dns-novalues.err")).unwrap();
        assert_eq!(format!("Error: {err}\n"), expected);
    }

    /// helm v3.17.3 on a throw-away chart with this schema printed these
    /// lines (its order of sibling properties varies from run to run; the
    /// root's own errors come first, a node's errors before its children's,
    /// array items before minItems, anyOf/oneOf followed by the best
    /// branch's errors). Ours: the same lines, siblings by name.
    #[test]
    fn messages_match_helm() {
        let schema = br#"{"type":"object","required":["req"],"additionalProperties":false,
 "properties":{
  "e":{"enum":["x","y",1]},
  "n":{"type":"integer","minimum":2,"maximum":5,"multipleOf":2},
  "s":{"type":"string","pattern":"^a+$","minLength":3},
  "l":{"type":"array","items":{"type":"string"},"uniqueItems":true,"minItems":5},
  "o":{"oneOf":[{"type":"string"},{"type":"integer"}]},
  "an":{"anyOf":[{"type":"string"},{"type":"integer"}]},
  "nt":{"not":{"type":"string"}},
  "c":{"const":"k"},
  "ty":{"type":["string","null","boolean"]},
  "f":{"type":"string","format":"ipv4"},
  "sub":{}
 }}"#;
        let values = crate::chart::coalesce::tests::y(
            "e: z\nn: 7\ns: b\nl: [a, a, 1]\no: 1.5\nan: true\nnt: x\nc: j\nty: 1\nf: nope\nextra: 1\n",
        );
        let err = validate_against_single_schema(&values, schema).unwrap_err();
        assert_eq!(
            err,
            r#"- (root): req is required
- (root): Additional property extra is not allowed
- (root): Additional property false is not allowed
- an: Must validate at least one schema (anyOf)
- an: Invalid type. Expected: string, given: boolean
- c: c does not match: "k"
- e: e must be one of the following: "x", "y", 1
- f: Does not match format 'ipv4'
- l.2: Invalid type. Expected: string, given: integer
- l: Array must have at least 5 items
- l: array items[0,1] must be unique
- nt: Must not validate the schema (not)
- o: Must validate one and only one schema (oneOf)
- o: Invalid type. Expected: string, given: number
- s: String length must be greater than or equal to 3
- s: Does not match pattern '^a+$'
- ty: Invalid type. Expected: [string,null,boolean], given: integer
"#
        );
        let chart = Chart {
            metadata: Metadata {
                name: "top".into(),
                ..Default::default()
            },
            schema: Some(std::sync::Arc::from(&br#"{"required":["a"]}"#[..])),
            ..Default::default()
        };
        let e = validate_against_schema(&chart, &Mapping::new()).unwrap_err();
        assert_eq!(e, "top:\n- (root): a is required\n");
    }

    /// allOf and if/then/else: gojsonschema's merged branch errors and its
    /// own lines, as helm v3.17.3 printed them (the same on every run).
    #[test]
    fn all_of_and_conditions_like_helm() {
        let schema = br#"{"allOf":[{"properties":{"x":{"type":"string"}}},{"required":["y"]}],"if":{"required":["z"]},"then":{"properties":{"w":{"minimum":3}}},"properties":{"arr":{"items":{"allOf":[{"type":"string"}]}}}}"#;
        let values = crate::chart::coalesce::tests::y("x: 1\nz: 1\nw: 1\narr: [a, 1]\n");
        assert_eq!(
            validate_against_single_schema(&values, schema).unwrap_err(),
            r#"- x: Invalid type. Expected: string, given: integer
- (root): y is required
- (root): Must validate all the schemas (allOf)
- (root): Must validate "then" as "if" was valid
- w: Must be greater than or equal to 3
- arr.1: Invalid type. Expected: string, given: integer
- arr.1: Must validate all the schemas (allOf)
"#
        );
    }
}

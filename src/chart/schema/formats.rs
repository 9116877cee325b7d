//! gojsonschema v1.2.0's format checkers (`format_checkers.go`): the
//! `FormatCheckers` chain Helm's gojsonschema consults for `format`.
//! Unknown format names pass. Go's parsers (`time.Parse`, `net.ParseIP`,
//! `mail.ParseAddress`, `url.Parse`) are approximated by the checks below.

use std::sync::OnceLock;

use regex::Regex;

type Check = fn(&str) -> bool;

/// `FormatCheckers.IsFormat` for a string: `None` when the format name is
/// not one gojsonschema knows (it then passes).
pub fn check(name: &str, s: &str) -> Option<bool> {
    CHECKERS.iter().find(|(n, _)| *n == name).map(|(_, f)| f(s))
}

/// Whether gojsonschema v1.2.0 has a checker of this name (a number
/// checked against a known format fails: the checkers accept strings only).
pub fn known(name: &str) -> bool {
    CHECKERS.iter().any(|(n, _)| *n == name)
}

const CHECKERS: &[(&str, Check)] = &[
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
];

fn re(cell: &'static OnceLock<Regex>, src: &str) -> &'static Regex {
    cell.get_or_init(|| Regex::new(src).unwrap_or_else(|_| unreachable!("static regex")))
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

/// The brace check runs on the URL's path only (`u.Path`).
fn uri_template(s: &str) -> bool {
    static R: OnceLock<Regex> = OnceLock::new();
    if !uri_reference(s) {
        return false;
    }
    let mut rest = s.split(['#', '?']).next().unwrap_or("");
    if let Some(sc) = scheme(rest) {
        rest = &rest[sc.len() + 1..];
    }
    if let Some(auth) = rest.strip_prefix("//") {
        rest = auth.find('/').map_or("", |i| &auth[i..]);
    }
    re(&R, r"^([^{]*(\{[^}]*\})?)*$").is_match(rest)
}

fn uuid(s: &str) -> bool {
    static R: OnceLock<Regex> = OnceLock::new();
    re(
        &R,
        // v1.2.0's pattern is lower-case only ((?i) came later).
        r"^[a-f0-9]{8}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{12}$",
    )
    .is_match(s)
}

fn regex_format(s: &str) -> bool {
    s.is_empty() || crate::engine::funcs::sprig::regex::compile(s).is_ok()
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

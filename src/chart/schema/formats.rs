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
    let Some(c) = re(&R, r"^([0-9]{4})-([0-9]{2})-([0-9]{2})$").captures(s) else {
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
        r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(?:[.,][0-9]+)?(Z|[+-]([0-9]{2}):([0-9]{2}))?$",
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

/// net/mail's `isAtext`: printable ASCII but the specials, any non-ASCII.
fn is_atext(c: char, dot: bool) -> bool {
    match c {
        '.' => dot,
        '(' | ')' | '<' | '>' | '[' | ']' | ':' | ';' | '@' | '\\' | ',' | '"' => false,
        c => ('!'..='~').contains(&c) || !c.is_ascii(),
    }
}

/// net/mail's `consumeQuotedString`: the rest after the closing quote.
fn quoted_string(s: &str) -> Option<&str> {
    let mut chars = s.strip_prefix('"')?.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Some(&s[i + 2..]),
            '\\' => {
                chars.next()?;
            }
            c if c == ' ' || c == '\t' || ('!'..='~').contains(&c) || !c.is_ascii() => {}
            _ => return None,
        }
    }
    None
}

/// net/mail's `consumeAtom(dot, permissive=false)`: an atom without a
/// leading, trailing or double dot; the rest after it.
fn dot_atom(s: &str) -> Option<&str> {
    let end = s.find(|c| !is_atext(c, true)).unwrap_or(s.len());
    let atom = &s[..end];
    if atom.is_empty() || atom.starts_with('.') || atom.ends_with('.') || atom.contains("..") {
        return None;
    }
    Some(&s[end..])
}

/// net/mail's `consumeAddrSpec`: `local@domain`; the rest after it.
fn addr_spec(s: &str) -> Option<&str> {
    let rest = if s.starts_with('"') {
        quoted_string(s)?
    } else {
        dot_atom(s)?
    };
    let rest = rest.strip_prefix('@')?.trim_start_matches([' ', '\t']);
    dot_atom(rest)
}

/// `net/mail.ParseAddress` succeeds: an addr-spec, or an optional phrase
/// (atoms with dots, quoted strings) and `<addr-spec>`.
fn email(s: &str) -> bool {
    let s = s.trim_start_matches([' ', '\t']);
    if addr_spec(s).is_some_and(|r| r.trim_matches([' ', '\t']).is_empty()) {
        return true;
    }
    let mut rest = s;
    loop {
        rest = rest.trim_start_matches([' ', '\t']);
        if rest.starts_with('<') || rest.is_empty() {
            break;
        }
        rest = if rest.starts_with('"') {
            match quoted_string(rest) {
                Some(r) => r,
                None => return false,
            }
        } else {
            let end = rest.find(|c| !is_atext(c, true)).unwrap_or(rest.len());
            if end == 0 {
                return false;
            }
            &rest[end..]
        };
    }
    let Some(inner) = rest.strip_prefix('<') else {
        return false;
    };
    addr_spec(inner)
        .and_then(|r| r.strip_prefix('>'))
        .is_some_and(|r| r.trim_matches([' ', '\t']).is_empty())
}

fn ipv4(s: &str) -> bool {
    s.parse::<std::net::IpAddr>().is_ok() && s.contains('.')
}

fn ipv6(s: &str) -> bool {
    s.parse::<std::net::IpAddr>().is_ok() && s.contains(':')
}

/// `url.Parse` succeeds: the reference parser of `$ref` (Go's errors for
/// schemes, escapes, colons and control characters) plus Go's check of
/// the characters of a host.
fn url_parses(s: &str) -> bool {
    if super::refs::Ref::parse(s).is_err() {
        return false;
    }
    let no_frag = s.split('#').next().unwrap_or("");
    let Some(auth) = no_frag
        .split_once("//")
        .filter(|(before, _)| {
            scheme(no_frag).is_some_and(|sc| before.len() == sc.len() + 1) || before.is_empty()
        })
        .map(|(_, after)| after)
    else {
        return true;
    };
    let auth = auth.split(['/', '?']).next().unwrap_or("");
    let host = auth.rsplit_once('@').map_or(auth, |(_, h)| h);
    host.chars().all(|c| {
        !c.is_ascii() || c.is_ascii_alphanumeric() || "-_.~!$&'()*+,;=:[]<>\"%".contains(c)
    })
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

    /// Which of these strings helm v3.17.3 accepted for each format (a
    /// throw-away chart validating them all).
    #[test]
    fn like_helm() {
        for (name, value, ok) in [
            ("date-time", "2020-01-01T10:00:00Z", true),
            ("date-time", "2020-01-01 10:00:00", false),
            ("date-time", "10:00:00+02:00", true),
            ("date-time", "2020-01-01", true),
            ("date-time", "2020-01-01T10:00:00.123+02:00", true),
            ("date-time", "2020-01-01t10:00:00z", false),
            ("date-time", "10:00:00", true),
            ("date-time", "2020-02-30", false),
            ("date-time", "24:00:00", false),
            ("date-time", "2020-01-01T10:00:60Z", false),
            ("date", "2020-01-01", true),
            ("date", "2020-1-01", false),
            ("date", "2021-02-29", false),
            ("date", "2020-02-29", true),
            ("time", "25:00:00", false),
            ("time", "10:00:00Z", true),
            ("time", "10:00:00.5", true),
            ("time", "10:00", false),
            ("time", "10:00:00-07:00", true),
            ("email", "a@b", true),
            ("email", "Joe <a@b.c>", true),
            ("email", "a@", false),
            ("email", "@b", false),
            ("email", "a b@c", false),
            ("email", "\"a b\"@c", true),
            ("email", "a@b@c", false),
            ("email", "a.@b", false),
            ("email", "<a@b>", true),
            ("hostname", "-a", false),
            ("hostname", "a.b-", false),
            ("hostname", "a_b", false),
            ("hostname", "a..b", false),
            ("hostname", "a.b.", false),
            (
                "hostname",
                "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
                false,
            ),
            ("hostname", "ok-host.example", true),
            ("ipv4", "1.2.3.4", true),
            ("ipv4", "1.2.3", false),
            ("ipv4", "01.2.3.4", false),
            ("ipv4", "::ffff:1.2.3.4", true),
            ("ipv4", "256.1.1.1", false),
            ("ipv6", "::1", true),
            ("ipv6", "1::2::3", false),
            ("ipv6", "::ffff:1.2.3.4", true),
            ("ipv6", "fe80::1%eth0", false),
            ("ipv6", "1.2.3.4", false),
            ("uri", "http://x y", false),
            ("uri", "mailto:a@b", true),
            ("uri", "http://x/%zz", false),
            ("uri", "/rel", false),
            ("uri", "http://[::1]:80/", true),
            ("uri", "x:", true),
            ("uri", "http://a b.com/", false),
            ("uri-reference", "%zz", false),
            ("uri-reference", "a b", true),
            ("uri-reference", "#frag", true),
            ("uri-reference", "http://x/\\y", false),
            ("uri-reference", "//host/p", true),
            ("uri-reference", ":x", false),
            ("uri-template", "http://x/{a}", true),
            ("uri-template", "http://x/{a", false),
            ("uri-template", "{a}}", true),
            ("uri-template", "http://x/?q={b", true),
            ("uuid", "01234567-89ab-cdef-0123-456789abcdef", true),
            ("uuid", "01234567-89AB-cdef-0123-456789abcdef", false),
            ("uuid", "0123456789abcdef0123456789abcdef", false),
            ("json-pointer", "/a/b", true),
            ("json-pointer", "a", false),
            ("json-pointer", "/a~2", false),
            ("json-pointer", "", true),
            ("json-pointer", "/~0~1", true),
            ("relative-json-pointer", "0", true),
            ("relative-json-pointer", "1/a", true),
            ("relative-json-pointer", "0#", true),
            ("relative-json-pointer", "01", false),
            ("relative-json-pointer", "-1", false),
            ("regex", "(", false),
            ("regex", "a{2,1}", false),
            ("regex", "\\d", true),
            ("regex", "[z-a]", false),
            ("regex", "(?P<n>x)", true),
            ("regex", "(?<n>x)", true),
            ("regex", "a**", false),
        ] {
            assert_eq!(check(name, value), Some(ok), "{name} {value:?}");
        }
    }
}

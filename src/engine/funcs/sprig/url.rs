//! Sprig's `urlParse` and `urlJoin` (`url.go`), on a port of the parts of
//! Go's `net/url` they use: `Parse` (scheme, opaque, userinfo, host, path
//! and fragment unescaping, with Go's error texts) and `URL.String`
//! (re-escaping per component).
//!
//! Ported because the `url` crate normalises (lower-cases hosts, adds `/`
//! paths, punycode) where Go keeps the input as written.

use super::strings::go_quote;
use super::{NIL_DEREF, arg, arg_str, def};
use crate::engine::funcs::{FuncDef, FuncResult, Param};
use crate::engine::value::{Entries, Value};

pub const FUNCS: &[FuncDef] = &[
    def("urlParse", &[Param::Str], |_, a| url_parse(arg_str(a, 0))),
    def("urlJoin", &[Param::Map], |_, a| url_join(&arg(a, 0))),
];

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Path,
    Host,
    UserPassword,
    Fragment,
}

fn should_escape(c: u8, mode: Mode) -> bool {
    if c.is_ascii_alphanumeric() {
        return false;
    }
    if mode == Mode::Host && b"!$&'()*+,;=:[]<>\"".contains(&c) {
        return false;
    }
    match c {
        b'-' | b'_' | b'.' | b'~' => return false,
        b'$' | b'&' | b'+' | b',' | b'/' | b':' | b';' | b'=' | b'?' | b'@' => match mode {
            Mode::Path => return c == b'?',
            Mode::UserPassword => return matches!(c, b'@' | b'/' | b'?' | b':'),
            Mode::Fragment => return false,
            Mode::Host => {}
        },
        _ => {}
    }
    if mode == Mode::Fragment && matches!(c, b'!' | b'(' | b')' | b'*') {
        return false;
    }
    true
}

/// Go's `url.escape`.
fn escape(s: &str, mode: Mode) -> String {
    let mut out = String::with_capacity(s.len());
    for &c in s.as_bytes() {
        if should_escape(c, mode) {
            out.push_str(&format!("%{c:02X}"));
        } else {
            out.push(c as char);
        }
    }
    out
}

/// Go's `url.unescape` with its `EscapeError`/`InvalidHostError` texts.
fn unescape(s: &str, mode: Mode) -> Result<String, String> {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                if i + 2 >= b.len()
                    || !b[i + 1].is_ascii_hexdigit()
                    || !b[i + 2].is_ascii_hexdigit()
                {
                    let end = (i + 3).min(b.len());
                    return Err(format!(
                        "invalid URL escape {}",
                        go_quote(&String::from_utf8_lossy(&b[i..end]))
                    ));
                }
                let hi = (b[i + 1] as char).to_digit(16).unwrap_or(0);
                if mode == Mode::Host && hi < 8 && &s[i..i + 3] != "%25" {
                    return Err(format!("invalid URL escape {}", go_quote(&s[i..i + 3])));
                }
                i += 3;
            }
            c => {
                if mode == Mode::Host && c < 0x80 && should_escape(c, mode) {
                    return Err(format!(
                        "invalid character {} in host name",
                        go_quote(&s[i..i + 1])
                    ));
                }
                i += 1;
            }
        }
    }
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let v = u8::from_str_radix(&s[i + 1..i + 3], 16).unwrap_or(0);
            out.push(v);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// The parsed parts of a URL that Sprig reads.
#[derive(Default, Debug)]
struct GoUrl {
    scheme: String,
    opaque: String,
    /// (username, password if set)
    user: Option<UserInfo>,
    host: String,
    path: String,
    raw_query: String,
    fragment: String,
    force_query: bool,
    omit_host: bool,
}

fn valid_optional_port(port: &str) -> bool {
    if port.is_empty() {
        return true;
    }
    port.starts_with(':') && port[1..].bytes().all(|c| c.is_ascii_digit())
}

fn parse_host(host: &str) -> Result<String, String> {
    if host.starts_with('[') {
        let Some(i) = host.rfind(']') else {
            return Err("missing ']' in host".into());
        };
        let colon_port = &host[i + 1..];
        if !valid_optional_port(colon_port) {
            return Err(format!("invalid port {} after host", go_quote(colon_port)));
        }
    } else if let Some(i) = host.rfind(':') {
        let colon_port = &host[i..];
        if !valid_optional_port(colon_port) {
            return Err(format!("invalid port {} after host", go_quote(colon_port)));
        }
    }
    unescape(host, Mode::Host)
}

fn valid_userinfo(s: &str) -> bool {
    s.chars()
        .all(|c| c.is_ascii_alphanumeric() || "-._:~!$&'()*+,;=%@".contains(c))
}

/// (username, password if set)
type UserInfo = (String, Option<String>);

fn parse_authority(authority: &str) -> Result<(Option<UserInfo>, String), String> {
    let at = authority.rfind('@');
    let host = parse_host(match at {
        Some(i) => &authority[i + 1..],
        None => authority,
    })?;
    let Some(i) = at else {
        return Ok((None, host));
    };
    let userinfo = &authority[..i];
    if !valid_userinfo(userinfo) {
        return Err("net/url: invalid userinfo".into());
    }
    let user = match userinfo.split_once(':') {
        None => (unescape(userinfo, Mode::UserPassword)?, None),
        Some((u, p)) => (
            unescape(u, Mode::UserPassword)?,
            Some(unescape(p, Mode::UserPassword)?),
        ),
    };
    Ok((Some(user), host))
}

fn get_scheme(raw: &str) -> Result<(&str, &str), String> {
    for (i, c) in raw.bytes().enumerate() {
        match c {
            b'a'..=b'z' | b'A'..=b'Z' => {}
            b'0'..=b'9' | b'+' | b'-' | b'.' => {
                if i == 0 {
                    return Ok(("", raw));
                }
            }
            b':' => {
                if i == 0 {
                    return Err("missing protocol scheme".into());
                }
                return Ok((&raw[..i], &raw[i + 1..]));
            }
            _ => return Ok(("", raw)),
        }
    }
    Ok(("", raw))
}

fn parse_no_fragment(raw: &str) -> Result<GoUrl, String> {
    if raw.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return Err("net/url: invalid control character in URL".into());
    }
    let mut u = GoUrl::default();
    if raw == "*" {
        u.path = "*".into();
        return Ok(u);
    }
    let (scheme, rest) = get_scheme(raw)?;
    u.scheme = scheme.to_ascii_lowercase();
    let mut rest = rest.to_string();
    if rest.ends_with('?') && rest.matches('?').count() == 1 {
        u.force_query = true;
        rest.pop();
    } else if let Some((r, q)) = rest.clone().split_once('?') {
        rest = r.to_string();
        u.raw_query = q.to_string();
    }
    if !rest.starts_with('/') {
        if !u.scheme.is_empty() {
            u.opaque = rest;
            return Ok(u);
        }
        let segment = rest.split('/').next().unwrap_or("");
        if segment.contains(':') {
            return Err("first path segment in URL cannot contain colon".into());
        }
    }
    if (!u.scheme.is_empty() || !rest.starts_with("///")) && rest.starts_with("//") {
        let authority_and_path = &rest[2..];
        let (authority, path) = match authority_and_path.find('/') {
            Some(i) => (&authority_and_path[..i], &authority_and_path[i..]),
            None => (authority_and_path, ""),
        };
        let (user, host) = parse_authority(authority)?;
        u.user = user;
        u.host = host;
        rest = path.to_string();
    } else if !u.scheme.is_empty() && rest.starts_with('/') {
        u.omit_host = true;
    }
    u.path = unescape(&rest, Mode::Path)?;
    Ok(u)
}

/// Go's `url.Parse`, errors as `url.Error` prints them.
fn parse(raw: &str) -> Result<GoUrl, String> {
    let (u, frag) = match raw.split_once('#') {
        Some((u, f)) => (u, Some(f)),
        None => (raw, None),
    };
    let mut url = parse_no_fragment(u).map_err(|e| format!("parse {}: {e}", go_quote(u)))?;
    if let Some(f) = frag
        && !f.is_empty()
    {
        url.fragment =
            unescape(f, Mode::Fragment).map_err(|e| format!("parse {}: {e}", go_quote(raw)))?;
    }
    Ok(url)
}

fn userinfo_string(user: &(String, Option<String>)) -> String {
    let mut s = escape(&user.0, Mode::UserPassword);
    if let Some(p) = &user.1 {
        s.push(':');
        s.push_str(&escape(p, Mode::UserPassword));
    }
    s
}

/// Go's `URL.Hostname`.
fn hostname(host: &str) -> String {
    let mut h = host;
    if let Some(colon) = h.rfind(':')
        && valid_optional_port(&h[colon..])
    {
        h = &h[..colon];
    }
    if h.starts_with('[') && h.ends_with(']') && h.len() >= 2 {
        h = &h[1..h.len() - 1];
    }
    h.to_string()
}

fn url_parse(v: &str) -> FuncResult {
    let u = parse(v).map_err(|e| format!("unable to parse url: {e}"))?;
    let mut e = Entries::new();
    e.insert("scheme".into(), Value::string(u.scheme));
    e.insert("hostname".into(), Value::string(hostname(&u.host)));
    e.insert("host".into(), Value::string(u.host));
    e.insert("path".into(), Value::string(u.path));
    e.insert("query".into(), Value::string(u.raw_query));
    e.insert("opaque".into(), Value::string(u.opaque));
    e.insert("fragment".into(), Value::string(u.fragment));
    e.insert(
        "userinfo".into(),
        Value::string(u.user.as_ref().map(userinfo_string).unwrap_or_default()),
    );
    Ok(Value::map(e))
}

/// Sprig's `dictGetOrEmpty`.
fn dict_get(d: &Value, key: &str) -> Result<String, String> {
    let Value::Map(m) = d else {
        return Ok(String::new());
    };
    match m.get(key) {
        None => Ok(String::new()),
        Some(Value::Str(s)) => Ok(s.to_string()),
        Some(Value::Nil) => Err(NIL_DEREF.into()),
        Some(other) => Err(format!(
            "unable to parse {key} key, must be of type string, but {} found",
            other.kind_name()
        )),
    }
}

/// Go's `URL.String`.
fn url_string(u: &GoUrl) -> String {
    let mut buf = String::new();
    if !u.scheme.is_empty() {
        buf.push_str(&u.scheme);
        buf.push(':');
    }
    if !u.opaque.is_empty() {
        buf.push_str(&u.opaque);
    } else {
        let no_host_or_user = u.host.is_empty() && u.user.is_none();
        // Go: (scheme, host or user present) and not an omitted empty host.
        let skip = no_host_or_user && (u.scheme.is_empty() || u.omit_host);
        if !skip {
            if !u.host.is_empty() || !u.path.is_empty() || u.user.is_some() {
                buf.push_str("//");
            }
            if let Some(user) = &u.user {
                buf.push_str(&userinfo_string(user));
                buf.push('@');
            }
            if !u.host.is_empty() {
                buf.push_str(&escape(&u.host, Mode::Host));
            }
        }
        let path = if u.path == "*" {
            "*".to_string()
        } else {
            escape(&u.path, Mode::Path)
        };
        if !path.is_empty() && !path.starts_with('/') && !u.host.is_empty() {
            buf.push('/');
        }
        if buf.is_empty() && path.split('/').next().unwrap_or("").contains(':') {
            buf.push_str("./");
        }
        buf.push_str(&path);
    }
    if u.force_query || !u.raw_query.is_empty() {
        buf.push('?');
        buf.push_str(&u.raw_query);
    }
    if !u.fragment.is_empty() {
        buf.push('#');
        buf.push_str(&escape(&u.fragment, Mode::Fragment));
    }
    buf
}

fn url_join(d: &Value) -> FuncResult {
    let mut u = GoUrl {
        scheme: dict_get(d, "scheme")?,
        host: dict_get(d, "host")?,
        path: dict_get(d, "path")?,
        raw_query: dict_get(d, "query")?,
        opaque: dict_get(d, "opaque")?,
        fragment: dict_get(d, "fragment")?,
        ..GoUrl::default()
    };
    let userinfo = dict_get(d, "userinfo")?;
    if !userinfo.is_empty() {
        let t = parse(&format!("proto://{userinfo}@host"))
            .map_err(|e| format!("unable to parse userinfo in dict: {e}"))?;
        u.user = t.user;
    }
    Ok(Value::string(url_string(&u)))
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{d, err, i, s, v};

    #[test]
    fn parse_like_go() {
        assert_eq!(
            v(
                "urlParse",
                &[s("proto://user:pa%20ss@host:80/a%20b?q=1#fr%20ag")]
            ),
            "map[fragment:fr ag host:host:80 hostname:host opaque: path:/a b query:q=1 scheme:proto userinfo:user:pa%20ss]"
        );
        assert_eq!(
            v("urlParse", &[s("mailto:x@y")]),
            "map[fragment: host: hostname: opaque:x@y path: query: scheme:mailto userinfo:]"
        );
        assert_eq!(
            err("urlParse", &[s(":x")]),
            "unable to parse url: parse \":x\": missing protocol scheme"
        );
        assert_eq!(
            err("urlParse", &[s("http://h:x/")]),
            "unable to parse url: parse \"http://h:x/\": invalid port \":x\" after host"
        );
        assert_eq!(
            err("urlParse", &[s("a%zz")]),
            "unable to parse url: parse \"a%zz\": invalid URL escape \"%zz\""
        );
    }

    #[test]
    fn join_like_go() {
        let m = d(&[
            ("scheme", s("http")),
            ("host", s("h:8080")),
            ("path", s("a b")),
            ("query", s("x=1")),
            ("fragment", s("f g")),
        ]);
        assert_eq!(v("urlJoin", &[m]), "http://h:8080/a%20b?x=1#f%20g");
        let m = d(&[
            ("scheme", s("https")),
            ("userinfo", s("u:p")),
            ("host", s("h")),
        ]);
        assert_eq!(v("urlJoin", &[m]), "https://u:p@h");
        assert_eq!(
            err("urlJoin", &[d(&[("host", i(1))])]),
            "unable to parse host key, must be of type string, but int found"
        );
    }
}

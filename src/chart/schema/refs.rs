//! JSON references as gojsonschema resolves them (gojsonreference on Go's
//! `net/url`): `$id`/`$ref` strings parsed as URLs, resolved against the
//! enclosing `$id` with `URL.ResolveReference`, compared by `URL.String()`,
//! and their fragment used as a JSON pointer.
//!
//! Only what schema references need of `net/url` is ported: scheme,
//! authority, path, query and fragment, dot-segment removal, and the
//! escaping `String()` applies to paths and fragments.

/// A parsed reference (`gojsonreference.JsonReference`).
#[derive(Clone, Debug, Default)]
pub struct Ref {
    scheme: String,
    opaque: String,
    /// `//authority` was present (Go keeps `User`/`Host`).
    authority: Option<String>,
    path: String,
    query: Option<String>,
    fragment: String,
}

fn unhex(c: u8) -> Option<u8> {
    (c as char).to_digit(16).map(|d| d as u8)
}

/// `url.unescape` for paths and fragments: `%XX` decoded, a bad escape is
/// an error.
fn unescape(s: &str, whole: &str) -> Result<String, String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            match (
                b.get(i + 1).copied().and_then(unhex),
                b.get(i + 2).copied().and_then(unhex),
            ) {
                (Some(h), Some(l)) => {
                    out.push(h * 16 + l);
                    i += 3;
                    continue;
                }
                _ => {
                    let bad: String = s[i..].chars().take(3).collect();
                    return Err(format!("parse \"{whole}\": invalid URL escape \"{bad}\""));
                }
            }
        }
        out.push(b[i]);
        i += 1;
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// `url.shouldEscape` for `encodePath` / `encodeFragment`.
fn escape(s: &str, fragment: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for &c in s.as_bytes() {
        let keep = c.is_ascii_alphanumeric()
            || matches!(
                c,
                b'-' | b'_'
                    | b'.'
                    | b'~'
                    | b'$'
                    | b'&'
                    | b'+'
                    | b','
                    | b'/'
                    | b':'
                    | b';'
                    | b'='
                    | b'@'
            )
            || (fragment && matches!(c, b'!' | b'(' | b')' | b'*' | b'?'));
        if keep {
            out.push(c as char);
        } else {
            out.push_str(&format!("%{c:02X}"));
        }
    }
    out
}

impl Ref {
    /// `gojsonreference.NewJsonReference` (`url.Parse`).
    pub fn parse(raw: &str) -> Result<Ref, String> {
        let (rest, frag) = match raw.split_once('#') {
            Some((r, f)) => (r, unescape(f, raw)?),
            None => (raw, String::new()),
        };
        let mut r = Ref {
            fragment: frag,
            ..Ref::default()
        };
        if rest.bytes().any(|c| c < 0x20 || c == 0x7f) {
            return Err(format!(
                "parse \"{raw}\": net/url: invalid control character in URL"
            ));
        }
        let mut rest = rest;
        // getScheme
        if let Some(colon) = rest.find(':') {
            let cand = &rest[..colon];
            let valid = cand.bytes().enumerate().all(|(i, c)| {
                c.is_ascii_alphabetic()
                    || (i > 0 && (c.is_ascii_digit() || matches!(c, b'+' | b'-' | b'.')))
            });
            if colon == 0 {
                return Err(format!("parse \"{raw}\": missing protocol scheme"));
            }
            if valid {
                r.scheme = cand.to_ascii_lowercase();
                rest = &rest[colon + 1..];
            }
        }
        if let Some((p, q)) = rest.split_once('?') {
            r.query = Some(q.to_string());
            rest = p;
        }
        if !rest.starts_with('/') && !r.scheme.is_empty() {
            r.opaque = rest.to_string();
            return Ok(r);
        }
        if rest.starts_with("//") && (!r.scheme.is_empty() || !rest.starts_with("///")) {
            let after = &rest[2..];
            let end = after.find('/').unwrap_or(after.len());
            r.authority = Some(after[..end].to_string());
            rest = &after[end..];
        } else if r.scheme.is_empty() && rest.split('/').next().is_some_and(|seg| seg.contains(':'))
        {
            return Err(format!(
                "parse \"{raw}\": first path segment in URL cannot contain colon"
            ));
        }
        r.path = unescape(rest, raw)?;
        Ok(r)
    }

    /// `URL.String()`.
    pub fn string(&self) -> String {
        let mut s = String::new();
        if !self.scheme.is_empty() {
            s.push_str(&self.scheme);
            s.push(':');
        }
        if !self.opaque.is_empty() {
            s.push_str(&self.opaque);
        } else {
            let host = self.authority.as_deref().unwrap_or("");
            if (!self.scheme.is_empty() || !host.is_empty())
                && (!host.is_empty() || !self.path.is_empty())
            {
                s.push_str("//");
                s.push_str(host);
            }
            let path = escape(&self.path, false);
            if !path.is_empty() && !path.starts_with('/') && !host.is_empty() {
                s.push('/');
            }
            if s.is_empty() && path.split('/').next().is_some_and(|seg| seg.contains(':')) {
                s.push_str("./");
            }
            s.push_str(&path);
        }
        if let Some(q) = &self.query
            && !q.is_empty()
        {
            s.push('?');
            s.push_str(q);
        }
        if !self.fragment.is_empty() {
            s.push('#');
            s.push_str(&escape(&self.fragment, true));
        }
        s
    }

    /// The file gojsonschema's reference loader opens for a `file:`
    /// reference (`jsonReferenceLoader.LoadJSON`): the URL without its
    /// fragment, `file://` cut off, then `url.QueryUnescape`d. So
    /// `file://./s.json` (host `.`) names `./s.json` and `file://s/x.json`
    /// (host `s`) `s/x.json`, both relative to the process's working
    /// directory; `file:///abs/s.json` names `/abs/s.json`. `None` for
    /// other schemes.
    pub fn file_name(&self) -> Option<Result<String, String>> {
        if self.scheme != "file" {
            return None;
        }
        let s = self.without_fragment().string();
        Some(query_unescape(s.strip_prefix("file://").unwrap_or(&s)))
    }

    /// The same reference without its fragment.
    pub fn without_fragment(&self) -> Ref {
        Ref {
            fragment: String::new(),
            ..self.clone()
        }
    }

    /// `JsonReference.IsCanonical` (on Linux).
    pub fn is_canonical(&self) -> bool {
        if self.scheme == "file" {
            self.path.starts_with('/')
        } else {
            !self.scheme.is_empty() && self.authority.as_deref().is_some_and(|h| !h.is_empty())
        }
    }

    /// The fragment as JSON pointer tokens; `None` when it is not a pointer
    /// (gojsonreference then points at the whole document).
    pub fn pointer(&self) -> Vec<String> {
        match self.fragment.strip_prefix('/') {
            Some(p) if !self.fragment.is_empty() => p
                .split('/')
                .map(|t| t.replace("~1", "/").replace("~0", "~"))
                .collect(),
            _ => Vec::new(),
        }
    }

    /// `JsonReference.Inherits`: `child` resolved against `self`
    /// (`URL.ResolveReference` with the parent's fragment dropped).
    pub fn inherits(&self, child: &Ref) -> Result<Ref, String> {
        let mut u = child.clone();
        if child.scheme.is_empty() {
            u.scheme = self.scheme.clone();
        }
        if !child.scheme.is_empty() || child.authority.is_some() {
            u.path = resolve_path(&child.path, "");
            return Ref::parse(&u.string());
        }
        if !child.opaque.is_empty() {
            u.authority = None;
            u.path.clear();
            return Ref::parse(&u.string());
        }
        if child.path.is_empty() && child.query.is_none() {
            u.query = self.query.clone();
        }
        if child.path.is_empty() && !self.opaque.is_empty() {
            u.opaque = self.opaque.clone();
            u.authority = None;
            u.path.clear();
            return Ref::parse(&u.string());
        }
        u.authority = self.authority.clone();
        u.path = resolve_path(&self.path, &child.path);
        Ref::parse(&u.string())
    }
}

/// `url.QueryUnescape`: `%XX` decoded and `+` made a space; a bad escape
/// is Go's `EscapeError`.
fn query_unescape(s: &str) -> Result<String, String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => match (
                b.get(i + 1).copied().and_then(unhex),
                b.get(i + 2).copied().and_then(unhex),
            ) {
                (Some(h), Some(l)) => {
                    out.push(h * 16 + l);
                    i += 3;
                }
                _ => {
                    let bad = String::from_utf8_lossy(&b[i..(i + 3).min(b.len())]);
                    return Err(format!(
                        "invalid URL escape {}",
                        crate::gocompat::strconv::quote(&bad)
                    ));
                }
            },
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// `net/url.resolvePath`: merge and remove dot segments; non-empty results
/// start with `/`.
fn resolve_path(base: &str, r: &str) -> String {
    let full = if r.is_empty() {
        base.to_string()
    } else if !r.starts_with('/') {
        let i = base.rfind('/').map_or(0, |i| i + 1);
        format!("{}{r}", &base[..i])
    } else {
        r.to_string()
    };
    if full.is_empty() {
        return String::new();
    }
    let mut dst = String::from("/");
    let mut first = true;
    let mut last = "";
    for elem in full.split('/') {
        last = elem;
        if elem == "." {
            first = false;
            continue;
        }
        if elem == ".." {
            let s = dst[1..].to_string();
            dst = String::from("/");
            match s.rfind('/') {
                None => first = true,
                Some(i) => dst.push_str(&s[..i]),
            }
        } else {
            if !first {
                dst.push('/');
            }
            dst.push_str(elem);
            first = false;
        }
    }
    if last == "." || last == ".." {
        dst.push('/');
    }
    if dst.len() > 1 && dst.as_bytes()[1] == b'/' {
        dst.remove(0);
    }
    dst
}

#[cfg(test)]
mod tests {
    use super::*;

    fn res(base: &str, child: &str) -> String {
        Ref::parse(base)
            .unwrap()
            .inherits(&Ref::parse(child).unwrap())
            .unwrap()
            .string()
    }

    #[test]
    fn resolves_like_net_url() {
        assert_eq!(Ref::parse("#").unwrap().string(), "");
        assert_eq!(res("#", "#/definitions/a"), "#/definitions/a");
        assert_eq!(res("#", "#"), "");
        assert_eq!(res("#", "item.json"), "/item.json");
        assert_eq!(
            res("http://x.io/a/root.json", "#/definitions/a"),
            "http://x.io/a/root.json#/definitions/a"
        );
        assert_eq!(
            res("http://x.io/a/root.json", "b.json"),
            "http://x.io/a/b.json"
        );
        assert_eq!(
            res("http://x.io/a/root.json", "../c.json#x"),
            "http://x.io/c.json#x"
        );
        assert!(Ref::parse("http://x.io/s.json").unwrap().is_canonical());
        assert!(!Ref::parse("/item.json").unwrap().is_canonical());
        assert_eq!(
            Ref::parse("#/definitions/a~1b").unwrap().pointer(),
            vec!["definitions", "a/b"]
        );
    }
}

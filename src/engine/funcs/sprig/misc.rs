//! The rest of Sprig's table: reflection (`typeOf`, `kindIs`, `deepEqual`
//! …), hashes, paths (Go's `path` and, identical on Unix, `path/filepath`),
//! `env`/`expandenv` (Helm removes both; kept for completeness),
//! `getHostByName` and `fail`.
//!
//! `getHostByName` returns "": the engine does no I/O, and "" is what Helm
//! itself installs in its place unless DNS lookups are enabled.

use sha1::Digest;

use super::conv::deep_equal;
use super::{arg, arg_bytes, arg_str, def};
use crate::engine::funcs::{FuncDef, Param};
use crate::engine::value::Value;

use Param::{Any, RawStr, Str};

pub const FUNCS: &[FuncDef] = &[
    def("typeOf", &[Any], |_, a| {
        Ok(Value::str(arg(a, 0).type_name()))
    }),
    def("typeIs", &[Str, Any], |_, a| {
        Ok(Value::Bool(arg_str(a, 0) == arg(a, 1).type_name()))
    }),
    def("typeIsLike", &[Str, Any], |_, a| {
        let (target, v) = (arg_str(a, 0), arg(a, 1));
        let t = v.type_name();
        Ok(Value::Bool(
            target == t || t.strip_prefix('*') == Some(target),
        ))
    }),
    def("kindOf", &[Any], |_, a| {
        Ok(Value::str(arg(a, 0).kind_name()))
    }),
    def("kindIs", &[Str, Any], |_, a| {
        Ok(Value::Bool(arg_str(a, 0) == arg(a, 1).kind_name()))
    }),
    def("deepEqual", &[Any, Any], |_, a| {
        Ok(Value::Bool(deep_equal(&arg(a, 0), &arg(a, 1))))
    }),
    // Hashes read the string's bytes, invalid UTF-8 included.
    def("sha1sum", &[RawStr], |_, a| {
        Ok(Value::string(hex::encode(sha1::Sha1::digest(arg_bytes(
            a, 0,
        )))))
    }),
    def("sha256sum", &[RawStr], |_, a| {
        Ok(Value::string(hex::encode(sha2::Sha256::digest(arg_bytes(
            a, 0,
        )))))
    }),
    def("sha512sum", &[RawStr], |_, a| {
        Ok(Value::string(hex::encode(sha2::Sha512::digest(arg_bytes(
            a, 0,
        )))))
    }),
    def("adler32sum", &[RawStr], |_, a| {
        let mut h = adler2::Adler32::new();
        h.write_slice(arg_bytes(a, 0));
        Ok(Value::string(h.checksum().to_string()))
    }),
    def("base", &[Str], |_, a| {
        Ok(Value::string(base(arg_str(a, 0))))
    }),
    def("dir", &[Str], |_, a| Ok(Value::string(dir(arg_str(a, 0))))),
    def("clean", &[Str], |_, a| {
        Ok(Value::string(clean(arg_str(a, 0))))
    }),
    def("ext", &[Str], |_, a| Ok(Value::str(ext(arg_str(a, 0))))),
    def("isAbs", &[Str], |_, a| {
        Ok(Value::Bool(arg_str(a, 0).starts_with('/')))
    }),
    def("osBase", &[Str], |_, a| {
        Ok(Value::string(base(arg_str(a, 0))))
    }),
    def("osDir", &[Str], |_, a| {
        Ok(Value::string(dir(arg_str(a, 0))))
    }),
    def("osClean", &[Str], |_, a| {
        Ok(Value::string(clean(arg_str(a, 0))))
    }),
    def("osExt", &[Str], |_, a| Ok(Value::str(ext(arg_str(a, 0))))),
    def("osIsAbs", &[Str], |_, a| {
        Ok(Value::Bool(arg_str(a, 0).starts_with('/')))
    }),
    def("env", &[Str], |_, a| {
        Ok(Value::string(getenv(arg_str(a, 0))))
    }),
    def("expandenv", &[Str], |_, a| {
        Ok(Value::string(expand(arg_str(a, 0), getenv)))
    }),
    def("getHostByName", &[Str], |_, _| Ok(Value::str(""))),
    def("fail", &[Str], |_, a| Err(arg_str(a, 0).to_string())),
];

fn getenv(key: &str) -> String {
    std::env::var_os(key)
        .map(|v| v.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Go's `path.Clean`.
pub fn clean(path: &str) -> String {
    if path.is_empty() {
        return ".".into();
    }
    let p = path.as_bytes();
    let n = p.len();
    let rooted = p[0] == b'/';
    let mut out: Vec<u8> = Vec::with_capacity(n);
    let (mut r, mut dotdot) = (0usize, 0usize);
    if rooted {
        out.push(b'/');
        r = 1;
        dotdot = 1;
    }
    while r < n {
        if p[r] == b'/' || p[r] == b'.' && (r + 1 == n || p[r + 1] == b'/') {
            r += 1;
        } else if p[r] == b'.' && p[r + 1] == b'.' && (r + 2 == n || p[r + 2] == b'/') {
            r += 2;
            if out.len() > dotdot {
                out.pop();
                while out.len() > dotdot && out[out.len() - 1] != b'/' {
                    out.pop();
                }
                if out.len() > dotdot && out[out.len() - 1] == b'/' {
                    // Go backs up to the slash and then truncates it.
                    out.pop();
                }
            } else if !rooted {
                if !out.is_empty() {
                    out.push(b'/');
                }
                out.extend_from_slice(b"..");
                dotdot = out.len();
            }
        } else {
            if rooted && out.len() != 1 || !rooted && !out.is_empty() {
                out.push(b'/');
            }
            while r < n && p[r] != b'/' {
                out.push(p[r]);
                r += 1;
            }
        }
    }
    if out.is_empty() {
        return ".".into();
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Go's `path.Base`.
pub fn base(path: &str) -> String {
    if path.is_empty() {
        return ".".into();
    }
    let p = path.trim_end_matches('/');
    if p.is_empty() {
        return "/".into();
    }
    match p.rfind('/') {
        Some(i) => p[i + 1..].to_string(),
        None => p.to_string(),
    }
}

/// Go's `path.Dir`.
pub fn dir(path: &str) -> String {
    let i = path.rfind('/').map_or(0, |i| i + 1);
    clean(&path[..i])
}

/// Go's `path.Ext`.
pub fn ext(path: &str) -> &str {
    for (i, c) in path.bytes().enumerate().rev() {
        if c == b'/' {
            break;
        }
        if c == b'.' {
            return &path[i..];
        }
    }
    ""
}

/// Go's `os.Expand`.
pub fn expand(s: &str, mapping: impl Fn(&str) -> String) -> String {
    let b = s.as_bytes();
    let mut buf: Option<Vec<u8>> = None;
    let mut i = 0;
    let mut j = 0;
    while j < b.len() {
        if b[j] == b'$' && j + 1 < b.len() {
            let out = buf.get_or_insert_with(Vec::new);
            out.extend_from_slice(&b[i..j]);
            let (name, w) = shell_name(&s[j + 1..]);
            if name.is_empty() && w > 0 {
                // invalid syntax: eaten
            } else if name.is_empty() {
                out.push(b'$');
            } else {
                out.extend_from_slice(mapping(name).as_bytes());
            }
            j += w;
            i = j + 1;
        }
        j += 1;
    }
    match buf {
        None => s.to_string(),
        Some(mut out) => {
            out.extend_from_slice(&b[i.min(b.len())..]);
            String::from_utf8_lossy(&out).into_owned()
        }
    }
}

fn shell_name(s: &str) -> (&str, usize) {
    let b = s.as_bytes();
    let special = |c: u8| {
        matches!(
            c,
            b'*' | b'#' | b'$' | b'@' | b'!' | b'?' | b'-' | b'0'..=b'9'
        )
    };
    if b[0] == b'{' {
        if b.len() > 2 && special(b[1]) && b[2] == b'}' {
            return (&s[1..2], 3);
        }
        for i in 1..b.len() {
            if b[i] == b'}' {
                if i == 1 {
                    return ("", 2);
                }
                return (&s[1..i], i + 1);
            }
        }
        return ("", 1);
    }
    if special(b[0]) {
        return (&s[0..1], 1);
    }
    let n = b
        .iter()
        .take_while(|c| c.is_ascii_alphanumeric() || **c == b'_')
        .count();
    (&s[..n], n)
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{d, err, f, i, l, s, v};
    use super::*;

    #[test]
    fn reflection() {
        assert_eq!(v("typeOf", &[f(1.0)]), "float64");
        assert_eq!(v("typeOf", &[Value::Nil]), "<nil>");
        assert_eq!(v("typeOf", &[l(vec![])]), "[]interface {}");
        assert_eq!(v("kindOf", &[d(&[])]), "map");
        assert_eq!(v("kindOf", &[Value::Nil]), "invalid");
        assert_eq!(v("kindIs", &[s("slice"), l(vec![])]), "true");
        assert_eq!(v("typeIs", &[s("int"), i(1)]), "true");
        assert_eq!(v("typeIsLike", &[s("int"), i(1)]), "true");
        assert_eq!(v("deepEqual", &[l(vec![i(1)]), l(vec![i(1)])]), "true");
        assert_eq!(v("deepEqual", &[i(1), f(1.0)]), "false");
    }

    #[test]
    fn hashes() {
        assert_eq!(
            v("sha1sum", &[s("abc")]),
            "a9993e364706816aba3e25717850c26c9cd0d89d"
        );
        assert_eq!(
            v("sha256sum", &[s("abc")]),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(v("adler32sum", &[s("Wikipedia")]), "300286872");
        assert_eq!(v("sha512sum", &[s("")]).len(), 128);
    }

    #[test]
    fn paths() {
        assert_eq!(clean("a//b/../c/./d/"), "a/c/d");
        assert_eq!(clean("/../a"), "/a");
        assert_eq!(clean("../../a/.."), "../..");
        assert_eq!(clean(""), ".");
        assert_eq!(base("/a/b/"), "b");
        assert_eq!(base("///"), "/");
        assert_eq!(dir("/a/b"), "/a");
        assert_eq!(dir("b"), ".");
        assert_eq!(ext("a/b.tar.gz"), ".gz");
        assert_eq!(ext("a.b/c"), "");
        assert_eq!(v("isAbs", &[s("/x")]), "true");
    }

    #[test]
    fn env_and_fail() {
        assert_eq!(
            expand("a $X ${Y} $$ ${} $", |n| format!("<{n}>")),
            "a <X> <Y> <$>  $"
        );
        assert_eq!(err("fail", &[s("boom")]), "boom");
        assert_eq!(v("getHostByName", &[s("example.com")]), "");
    }
}

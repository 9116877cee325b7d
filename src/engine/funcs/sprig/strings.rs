//! Sprig's string functions (`strings.go` and the string entries of
//! `genericMap`), with the Go helpers they call ported: Go's `strings`,
//! `strconv.Quote`, goutils v1.1.1 (`Abbreviate`, `Wrap`, `Initials`,
//! `SwapCase`, `DeleteWhiteSpace`, …), xstrings v1.5.0 (`ToSnakeCase`,
//! `ToKebabCase`, `ToPascalCase`), and `encoding/base64`/`base32` decoding
//! with Go's error texts.
//!
//! These are ported rather than taken from crates because their quirks are
//! visible in output: `trunc`/`substr`/`abbrev` cut bytes, `nospace` and
//! `initials` walk bytes (mangling non-ASCII text exactly as goutils does),
//! `b64dec` returns Go's error message as its result.
//!
//! Go strings are bytes. Functions that work on bytes declare
//! [`Param::RawStr`] and keep invalid UTF-8 (a [`Value::BStr`]) as it is:
//! byte cuts (`trunc`, `substr`, `abbrev`, `wrapWith`) and `b64dec`/`b32dec`
//! of binary data make such strings, and `trim*`, `replace`, `repeat`,
//! `indent`, `split*`, `join`, `cat`, `squote`, `b64enc`… pass their bytes
//! on. Functions that decode runes (`upper`, `title`, `camelcase` …) take
//! plain `Str` and so see U+FFFD, as Go's do.

use super::conv::strval_value;
use super::conv::{string_list, string_map, strval};
use super::gounicode::{
    is_digit, is_letter, is_lower, is_number, is_print, is_punct, is_space, is_title, is_upper,
    str_to_lower, str_to_upper, to_lower, to_title, to_upper, trim_space,
};
use super::{any_bstr, arg, arg_bytes, arg_int, arg_str, def, defv, go_str};
use crate::engine::funcs::{Env, FuncDef, FuncResult, Param};
use crate::engine::gofmt::{fmt_v, quote_bytes};
use crate::engine::value::Value;
use bstr::ByteSlice;

use Param::{Any, Int, RawStr, Str};

pub const FUNCS: &[FuncDef] = &[
    def("hello", &[], |_, _| Ok(Value::str("Hello!"))),
    def("abbrev", &[Int, RawStr], abbrev),
    def("abbrevboth", &[Int, Int, RawStr], abbrevboth),
    def("trunc", &[Int, RawStr], trunc),
    def("trim", &[RawStr], |_, a| {
        if any_bstr(a) {
            // strings.TrimSpace: an invalid byte is not space and stays.
            return Ok(go_str(arg_bytes(a, 0).trim()));
        }
        ok_str(trim_space(arg_str(a, 0)))
    }),
    def("upper", &[Str], |_, a| {
        Ok(Value::string(str_to_upper(arg_str(a, 0))))
    }),
    def("lower", &[Str], |_, a| {
        Ok(Value::string(str_to_lower(arg_str(a, 0))))
    }),
    def("title", &[Str], |_, a| {
        Ok(Value::string(title(arg_str(a, 0))))
    }),
    def("untitle", &[Str], |_, a| {
        Ok(Value::string(untitle(arg_str(a, 0))))
    }),
    def("substr", &[Int, Int, RawStr], substr),
    def("repeat", &[Int, RawStr], repeat),
    def("trimall", &[Str, RawStr], trim_all),
    def("trimAll", &[Str, RawStr], trim_all),
    def("trimSuffix", &[RawStr, RawStr], |_, a| {
        let (suffix, s) = (arg_bytes(a, 0), arg_bytes(a, 1));
        Ok(go_str(s.strip_suffix(suffix).unwrap_or(s)))
    }),
    def("trimPrefix", &[RawStr, RawStr], |_, a| {
        let (prefix, s) = (arg_bytes(a, 0), arg_bytes(a, 1));
        Ok(go_str(s.strip_prefix(prefix).unwrap_or(s)))
    }),
    def("nospace", &[Str], |_, a| {
        Ok(Value::string(delete_white_space(arg_str(a, 0))))
    }),
    def("initials", &[Str], |_, a| {
        Ok(Value::string(initials(arg_str(a, 0))))
    }),
    def("swapcase", &[Str], |_, a| {
        Ok(Value::string(swap_case(arg_str(a, 0))))
    }),
    def("snakecase", &[Str], |_, a| {
        Ok(Value::string(camel_case_to_lower_case(arg_str(a, 0), '_')))
    }),
    def("camelcase", &[Str], |_, a| {
        Ok(Value::string(to_pascal_case(arg_str(a, 0))))
    }),
    def("kebabcase", &[Str], |_, a| {
        Ok(Value::string(camel_case_to_lower_case(arg_str(a, 0), '-')))
    }),
    def("wrap", &[Int, RawStr], |_, a| {
        Ok(wrap_custom(arg_bytes(a, 1), arg_int(a, 0), b"", false))
    }),
    def("wrapWith", &[Int, RawStr, RawStr], |_, a| {
        Ok(wrap_custom(
            arg_bytes(a, 2),
            arg_int(a, 0),
            arg_bytes(a, 1),
            true,
        ))
    }),
    def("contains", &[RawStr, RawStr], |_, a| {
        Ok(Value::Bool(
            crate::scan::find(arg_bytes(a, 1), arg_bytes(a, 0)).is_some(),
        ))
    }),
    def("hasPrefix", &[RawStr, RawStr], |_, a| {
        Ok(Value::Bool(arg_bytes(a, 1).starts_with(arg_bytes(a, 0))))
    }),
    def("hasSuffix", &[RawStr, RawStr], |_, a| {
        Ok(Value::Bool(arg_bytes(a, 1).ends_with(arg_bytes(a, 0))))
    }),
    defv("quote", &[], Any, quote),
    defv("squote", &[], Any, squote),
    defv("cat", &[], Any, cat),
    def("indent", &[Int, RawStr], |env, a| {
        check_indent(env, arg_int(a, 0), arg_bytes(a, 1))?;
        indent(arg_int(a, 0), arg_bytes(a, 1), false).map(Value::from_go_bytes)
    }),
    def("nindent", &[Int, RawStr], |env, a| {
        check_indent(env, arg_int(a, 0), arg_bytes(a, 1))?;
        indent(arg_int(a, 0), arg_bytes(a, 1), true).map(Value::from_go_bytes)
    }),
    def("replace", &[RawStr, RawStr, RawStr], |env, a| {
        check_replace(env, arg_bytes(a, 0), arg_bytes(a, 1), arg_bytes(a, 2))?;
        if any_bstr(a) {
            return Ok(Value::from_go_bytes(
                arg_bytes(a, 2).replace(arg_bytes(a, 0), arg_bytes(a, 1)),
            ));
        }
        Ok(Value::string(
            arg_str(a, 2).replace(arg_str(a, 0), arg_str(a, 1)),
        ))
    }),
    def("plural", &[RawStr, RawStr, Int], |_, a| {
        Ok(arg(a, if arg_int(a, 2) == 1 { 0 } else { 1 }))
    }),
    def("toString", &[Any], |_, a| Ok(strval_value(&arg(a, 0)))),
    def("split", &[RawStr, RawStr], split),
    def("splitList", &[RawStr, RawStr], |_, a| {
        if any_bstr(a) {
            return Ok(Value::str_list(split_bytes(
                arg_bytes(a, 1),
                arg_bytes(a, 0),
                -1,
            )));
        }
        Ok(string_list(go_split(arg_str(a, 1), arg_str(a, 0), -1)))
    }),
    def("splitn", &[RawStr, Int, RawStr], splitn),
    def("toStrings", &[Any], |_, a| {
        let v = arg(a, 0);
        if is_nil_str_list(&v) {
            return Ok(v);
        }
        Ok(string_list(strslice(&v)))
    }),
    def("join", &[RawStr, Any], join),
    def("sortAlpha", &[Any], sort_alpha),
    def("b64enc", &[RawStr], |_, a| {
        use base64::Engine;
        Ok(Value::string(
            base64::engine::general_purpose::STANDARD.encode(arg_bytes(a, 0)),
        ))
    }),
    // Decoded binary data is a Go string of those bytes, UTF-8 or not.
    def("b64dec", &[RawStr], |_, a| {
        Ok(match base64_decode(arg_bytes(a, 0)) {
            Ok(b) => Value::from_go_bytes(b),
            Err(e) => Value::string(e),
        })
    }),
    def("b32enc", &[RawStr], |_, a| {
        Ok(Value::string(base32_encode(arg_bytes(a, 0))))
    }),
    def("b32dec", &[RawStr], |_, a| {
        Ok(match base32_decode(arg_bytes(a, 0)) {
            Ok(b) => Value::from_go_bytes(b),
            Err(e) => Value::string(e),
        })
    }),
];

fn ok_str(s: &str) -> FuncResult {
    Ok(Value::str(s))
}

fn abbrev(_: &Env, a: &[Value]) -> FuncResult {
    let width = arg_int(a, 0);
    if width < 4 {
        return Ok(arg(a, 1));
    }
    Ok(Value::from_go_bytes(
        abbreviate_full(arg_bytes(a, 1), 0, width).unwrap_or_default(),
    ))
}

fn abbrevboth(_: &Env, a: &[Value]) -> FuncResult {
    let (left, right) = (arg_int(a, 0), arg_int(a, 1));
    if right < 4 || left > 0 && right < 7 {
        return Ok(arg(a, 2));
    }
    Ok(Value::from_go_bytes(
        abbreviate_full(arg_bytes(a, 2), left, right).unwrap_or_default(),
    ))
}

/// goutils `AbbreviateFull` (byte offsets); `None` where it returns an error
/// (Sprig then uses the empty result).
fn abbreviate_full(s: &[u8], offset: i64, max_width: i64) -> Option<Vec<u8>> {
    if s.is_empty() {
        return Some(Vec::new());
    }
    if max_width < 4 {
        return None;
    }
    let len = s.len() as i64;
    if len <= max_width {
        return Some(s.to_vec());
    }
    let mut offset = offset.min(len);
    if len - offset < max_width - 3 {
        offset = len - (max_width - 3);
    }
    if offset <= 4 {
        let mut out = s[..(max_width - 3) as usize].to_vec();
        out.extend_from_slice(b"...");
        return Some(out);
    }
    if max_width < 7 {
        return None;
    }
    let mut out = b"...".to_vec();
    if offset + max_width - 3 < len {
        out.extend(abbreviate_full(&s[offset as usize..], 0, max_width - 3).unwrap_or_default());
        return Some(out);
    }
    out.extend_from_slice(&s[(len - (max_width - 3)) as usize..]);
    Some(out)
}

fn trunc(_: &Env, a: &[Value]) -> FuncResult {
    let (c, s) = (arg_int(a, 0), arg_bytes(a, 1));
    let len = s.len() as i64;
    if c < 0 && len + c > 0 {
        return Ok(go_str(&s[(len + c) as usize..]));
    }
    if c >= 0 && len > c {
        return Ok(go_str(&s[..c as usize]));
    }
    Ok(arg(a, 1))
}

/// Sprig's `substring`, with Go's slice-bounds panics as errors.
fn substr(_: &Env, a: &[Value]) -> FuncResult {
    let (start, end, b) = (arg_int(a, 0), arg_int(a, 1), arg_bytes(a, 2));
    let len = b.len() as i64;
    let (lo, hi) = if start < 0 {
        (0, end)
    } else if end < 0 || end > len {
        (start, len)
    } else {
        (start, end)
    };
    if start < 0 || end < 0 || end > len {
        // s[:end] or s[start:]
        if start < 0 {
            if end < 0 {
                return Err(format!("runtime error: slice bounds out of range [:{end}]"));
            }
            if end > len {
                return Err(format!(
                    "runtime error: slice bounds out of range [:{end}] with length {len}"
                ));
            }
        } else if start > len {
            return Err(format!(
                "runtime error: slice bounds out of range [{start}:{len}]"
            ));
        }
    } else if start > end {
        return Err(format!(
            "runtime error: slice bounds out of range [{start}:{end}]"
        ));
    }
    Ok(go_str(&b[lo as usize..hi as usize]))
}

fn repeat(env: &Env, a: &[Value]) -> FuncResult {
    let (count, s) = (arg_int(a, 0), arg_bytes(a, 1));
    if count < 0 {
        return Err("strings: negative Repeat count".into());
    }
    let total = (s.len() as u128) * (count as u128);
    if total > (1u128 << 40) {
        return Err("strings: Repeat output length overflow".into());
    }
    env.check_alloc(total as u64)?;
    Ok(Value::from_go_bytes(s.repeat(count as usize)))
}

fn trim_all(_: &Env, a: &[Value]) -> FuncResult {
    let cutset = arg_str(a, 0);
    if any_bstr(a) {
        // strings.Trim: runes from both ends; an invalid byte is U+FFFD.
        let b = arg_bytes(a, 1);
        let runes = go_runes(b);
        let cut = |r: &(usize, usize, char)| cutset.contains(r.2);
        let start = runes
            .iter()
            .position(|r| !cut(r))
            .map_or(b.len(), |i| runes[i].0);
        let end = runes
            .iter()
            .rposition(|r| !cut(r))
            .map_or(start, |i| runes[i].1);
        return Ok(go_str(&b[start..end.max(start)]));
    }
    let s = arg_str(a, 1);
    ok_str(s.trim_matches(|c| cutset.contains(c)))
}

/// Go's rune decoding of a byte string: (start, end, rune) for each valid
/// character and each invalid byte (as U+FFFD).
fn go_runes(b: &[u8]) -> Vec<(usize, usize, char)> {
    let mut out = Vec::with_capacity(b.len());
    let mut pos = 0;
    for chunk in b.utf8_chunks() {
        for (i, c) in chunk.valid().char_indices() {
            out.push((pos + i, pos + i + c.len_utf8(), c));
        }
        pos += chunk.valid().len();
        for _ in chunk.invalid() {
            out.push((pos, pos + 1, char::REPLACEMENT_CHARACTER));
            pos += 1;
        }
    }
    out
}

/// Go's `strings.Title`: upper-cases (title-cases) the first letter of each
/// word, words being separated per Go's `isSeparator`.
pub fn title(s: &str) -> String {
    fn is_separator(r: char) -> bool {
        if r.is_ascii() {
            return !(r.is_ascii_alphanumeric() || r == '_');
        }
        if is_letter(r) || is_digit(r) {
            return false;
        }
        is_space(r)
    }
    let mut prev = ' ';
    s.chars()
        .map(|r| {
            let out = if is_separator(prev) { to_title(r) } else { r };
            prev = r;
            out
        })
        .collect()
}

/// goutils `Uncapitalize` with whitespace delimiters.
fn untitle(s: &str) -> String {
    let mut next = true;
    s.chars()
        .map(|c| {
            if is_space(c) {
                next = true;
                c
            } else if next {
                next = false;
                to_lower(c)
            } else {
                c
            }
        })
        .collect()
}

/// goutils `DeleteWhiteSpace`: walks *bytes*, each taken as a Latin-1 rune.
fn delete_white_space(s: &str) -> String {
    let b = s.as_bytes();
    let kept: Vec<char> = b
        .iter()
        .map(|&x| char::from(x))
        .filter(|c| !is_space(*c))
        .collect();
    if kept.len() == b.len() {
        return s.to_string();
    }
    kept.into_iter().collect()
}

/// goutils `Initials` with whitespace delimiters (byte-wise, like
/// `DeleteWhiteSpace`).
fn initials(s: &str) -> String {
    let mut out = String::new();
    let mut gap = true;
    for &x in s.as_bytes() {
        let c = char::from(x);
        if is_space(c) {
            gap = true;
        } else if gap {
            out.push(c);
            gap = false;
        }
    }
    out
}

/// goutils `SwapCase`: upper/title → lower, lower → title after whitespace
/// and upper elsewhere.
fn swap_case(s: &str) -> String {
    let mut ws = true;
    s.chars()
        .map(|c| {
            if is_upper(c) || is_title(c) {
                ws = false;
                to_lower(c)
            } else if is_lower(c) {
                if ws {
                    ws = false;
                    to_title(c)
                } else {
                    to_upper(c)
                }
            } else {
                ws = is_space(c);
                c
            }
        })
        .collect()
}

/// goutils `WrapCustom` (byte offsets, `' '` as the only break), so a
/// long word may be cut inside a character.
fn wrap_custom(b: &[u8], wrap_length: i64, new_line: &[u8], wrap_long_words: bool) -> Value {
    if b.is_empty() {
        return Value::str("");
    }
    let nl: &[u8] = if new_line.is_empty() { b"\n" } else { new_line };
    let wl = wrap_length.max(1) as u64;
    let len = b.len();
    let mut offset = 0usize;
    let mut out: Vec<u8> = Vec::new();
    while (len - offset) as u64 > wl {
        let wl = wl as usize;
        if b[offset] == b' ' {
            offset += 1;
            continue;
        }
        let end = wl + offset + 1;
        let space = b[offset..end].iter().rposition(|&c| c == b' ');
        if let Some(sp) = space {
            let at = sp + offset;
            out.extend_from_slice(&b[offset..at]);
            out.extend_from_slice(nl);
            offset = at + 1;
        } else if wrap_long_words {
            let end = wl + offset;
            out.extend_from_slice(&b[offset..end]);
            out.extend_from_slice(nl);
            offset += wl;
        } else {
            let end = wl + offset;
            match b[end..].iter().position(|&c| c == b' ') {
                None => {
                    out.extend_from_slice(&b[offset..]);
                    offset = len;
                }
                Some(i) => {
                    let at = i + end;
                    out.extend_from_slice(&b[offset..at]);
                    out.extend_from_slice(nl);
                    offset = at + 1;
                }
            }
        }
    }
    out.extend_from_slice(&b[offset..]);
    Value::from_go_bytes(out)
}

/// Go's `strconv.Quote`, which `%q` of a string produces.
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\x07' => out.push_str("\\a"),
            '\x08' => out.push_str("\\b"),
            '\x0c' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\x0b' => out.push_str("\\v"),
            c if is_print(c) => out.push(c),
            c if (c as u32) < 0x20 || c == '\x7f' => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if (c as u32) < 0x10000 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push_str(&format!("\\U{:08x}", c as u32)),
        }
    }
    out.push('"');
    out
}

fn quote(_: &Env, a: &[Value]) -> FuncResult {
    let parts: Vec<String> = a
        .iter()
        .filter(|v| !v.is_nil())
        .map(|v| match strval_value(v) {
            // strconv.Quote writes invalid bytes as \xNN.
            Value::BStr(b) => quote_bytes(&b),
            s => go_quote(s.as_str().unwrap_or_default()),
        })
        .collect();
    Ok(Value::string(parts.join(" ")))
}

fn squote(_: &Env, a: &[Value]) -> FuncResult {
    let mut out: Vec<u8> = Vec::new();
    for (n, v) in a.iter().filter(|v| !v.is_nil()).enumerate() {
        if n > 0 {
            out.push(b' ');
        }
        out.push(b'\'');
        fmt_v(v, &mut out);
        out.push(b'\'');
    }
    Ok(Value::from_go_bytes(out))
}

fn cat(_: &Env, a: &[Value]) -> FuncResult {
    let mut out: Vec<u8> = Vec::new();
    for (n, v) in a.iter().filter(|v| !v.is_nil()).enumerate() {
        if n > 0 {
            out.push(b' ');
        }
        fmt_v(v, &mut out);
    }
    Ok(Value::from_go_bytes(out))
}

/// Sprig's `join`: `strings.Join(strslice(v), sep)`, bytes kept.
fn join(env: &Env, a: &[Value]) -> FuncResult {
    let list = arg(a, 1);
    // A list may hold the same long string many times over.
    if env.alloc_cap() != u64::MAX
        && let Value::List(l) = &list
    {
        let sep = arg_bytes(a, 0).len() as u64;
        let total = l.items.iter().fold(0u64, |n, x| {
            let len = x.go_bytes().map_or(0, |b| b.len() as u64);
            n.saturating_add(len).saturating_add(sep)
        });
        env.check_alloc(total)?;
    }
    let items: Vec<Value> = match &list {
        Value::List(l) => l
            .items
            .iter()
            .filter(|x| !x.is_nil())
            .map(strval_value)
            .collect(),
        _ => return Ok(Value::string(strslice(&list).join(arg_str(a, 0)))),
    };
    if !any_bstr(a) && !any_bstr(&items) {
        let parts: Vec<&str> = items
            .iter()
            .map(|v| v.as_str().unwrap_or_default())
            .collect();
        return Ok(Value::string(parts.join(arg_str(a, 0))));
    }
    let parts: Vec<&[u8]> = items
        .iter()
        .map(|v| v.go_bytes().unwrap_or_default())
        .collect();
    Ok(Value::from_go_bytes(parts.join(arg_bytes(a, 0))))
}

/// Whether `indent`'s result (`spaces` more bytes per line) stays within
/// the output limit, before it is allocated.
fn check_indent(env: &Env, spaces: i64, v: &[u8]) -> Result<(), String> {
    if env.alloc_cap() == u64::MAX || spaces <= 0 {
        return Ok(());
    }
    let lines = v.iter().filter(|&&b| b == b'\n').count() as u64 + 1;
    env.check_alloc(
        (spaces as u64)
            .saturating_mul(lines)
            .saturating_add(v.len() as u64),
    )
}

/// Whether `replace old new s` stays within the output limit, before it
/// is allocated: a growing replacement of many matches (an empty `old`
/// matches between every two characters) multiplies the text.
fn check_replace(env: &Env, old: &[u8], new: &[u8], s: &[u8]) -> Result<(), String> {
    let cap = env.alloc_cap();
    if cap == u64::MAX || new.len() <= old.len() {
        return Ok(());
    }
    let grow = (new.len() - old.len()) as u64;
    let most = if old.is_empty() {
        s.len() as u64 + 1
    } else {
        (s.len() / old.len()) as u64
    };
    if (s.len() as u64).saturating_add(most.saturating_mul(grow)) <= cap {
        return Ok(());
    }
    let matches = if old.is_empty() {
        most
    } else {
        crate::scan::find_iter(s, old).count() as u64
    };
    env.check_alloc((s.len() as u64).saturating_add(matches.saturating_mul(grow)))
}

/// Go's `strings.SplitN` over bytes (`n < 0`: all parts; an empty
/// separator splits into runes, each invalid byte being one).
fn split_bytes(s: &[u8], sep: &[u8], n: i64) -> Vec<Value> {
    if n == 0 {
        return Vec::new();
    }
    let mut parts: Vec<&[u8]> = if sep.is_empty() {
        go_runes(s).iter().map(|r| &s[r.0..r.1]).collect()
    } else {
        crate::scan::split(s, sep).collect()
    };
    if n > 0 && parts.len() > n as usize {
        // The last part is the rest of the string.
        let keep = n as usize - 1;
        let start = if sep.is_empty() {
            parts[..keep].iter().map(|p| p.len()).sum()
        } else {
            parts[..keep].iter().map(|p| p.len() + sep.len()).sum()
        };
        parts.truncate(keep);
        parts.push(&s[start..]);
    }
    parts.into_iter().map(go_str).collect()
}

/// Sprig's `indent` (and `nindent`, with `leading_newline`): `pad +
/// strings.Replace(v, "\n", "\n" + pad)`, written once into a buffer of
/// its final size (charts indent whole rendered blocks, often several
/// kilobytes, with `nindent` in most files). Over bytes, as Go's strings
/// are: the text may be a `BStr`, and spaces and newlines keep valid UTF-8
/// valid.
fn indent(spaces: i64, v: &[u8], leading_newline: bool) -> Result<Vec<u8>, String> {
    if spaces < 0 {
        return Err("strings: negative Repeat count".into());
    }
    let spaces = spaces as usize;
    let lines = v.iter().filter(|&&b| b == b'\n').count() + 1;
    let mut out =
        Vec::with_capacity(usize::from(leading_newline) + v.len() + spaces.saturating_mul(lines));
    if leading_newline {
        out.push(b'\n');
    }
    for (i, line) in v.split(|&b| b == b'\n').enumerate() {
        if i > 0 {
            out.push(b'\n');
        }
        out.resize(out.len() + spaces, b' ');
        out.extend_from_slice(line);
    }
    Ok(out)
}

/// Go's `strings.SplitN` (`n < 0`: all parts; an empty separator splits
/// into UTF-8 characters).
pub fn go_split(s: &str, sep: &str, n: i64) -> Vec<String> {
    if n == 0 {
        return Vec::new();
    }
    if sep.is_empty() {
        let chars: Vec<char> = s.chars().collect();
        let limit = if n < 0 || n as usize > chars.len() {
            chars.len()
        } else {
            n as usize
        };
        let mut out: Vec<String> = chars[..limit.saturating_sub(1)]
            .iter()
            .map(|c| c.to_string())
            .collect();
        if limit > 0 {
            out.push(chars[limit - 1..].iter().collect());
        }
        return out;
    }
    if n < 0 {
        s.split(sep).map(str::to_string).collect()
    } else {
        s.splitn(n as usize, sep).map(str::to_string).collect()
    }
}

fn split_map(parts: Vec<String>) -> Value {
    string_map(
        parts
            .into_iter()
            .enumerate()
            .map(|(i, p)| (format!("_{i}"), p)),
    )
}

fn split(_: &Env, a: &[Value]) -> FuncResult {
    if any_bstr(a) {
        return Ok(split_map_values(split_bytes(
            arg_bytes(a, 1),
            arg_bytes(a, 0),
            -1,
        )));
    }
    Ok(split_map(go_split(arg_str(a, 1), arg_str(a, 0), -1)))
}

/// `split`'s `map[string]string` keyed `_0`, `_1`, … from Go string values.
fn split_map_values(parts: Vec<Value>) -> Value {
    let e = parts
        .into_iter()
        .enumerate()
        .map(|(i, p)| (crate::engine::Key::from(format!("_{i}")), p))
        .collect();
    Value::Map(std::rc::Rc::new(crate::engine::value::Map::new(
        crate::engine::value::MapKind::Str,
        e,
    )))
}

fn splitn(_: &Env, a: &[Value]) -> FuncResult {
    if any_bstr(a) {
        return Ok(split_map_values(split_bytes(
            arg_bytes(a, 2),
            arg_bytes(a, 0),
            arg_int(a, 1),
        )));
    }
    Ok(split_map(go_split(
        arg_str(a, 2),
        arg_str(a, 0),
        arg_int(a, 1),
    )))
}

/// Sprig's `strslice`: a slice becomes its non-nil elements as strings;
/// nil becomes an empty list; anything else a one-element list.
pub fn strslice(v: &Value) -> Vec<String> {
    match v {
        Value::List(l) => l.items.iter().filter(|x| !x.is_nil()).map(strval).collect(),
        Value::Bytes(b) => b.iter().map(|x| x.to_string()).collect(),
        Value::Nil => Vec::new(),
        // A named slice type (`.Capabilities.APIVersions`).
        Value::Object(o) if o.kind_name() == "slice" => {
            o.underlying().map(|u| strslice(&u)).unwrap_or_default()
        }
        other => vec![strval(other)],
    }
}

/// A nil `[]string`, which Sprig's `strslice` passes through as it is.
fn is_nil_str_list(v: &Value) -> bool {
    matches!(v, Value::List(l) if l.kind == crate::engine::ListKind::NilStr)
}

fn sort_alpha(_: &Env, a: &[Value]) -> FuncResult {
    let v = arg(a, 0);
    if is_nil_str_list(&v) {
        return Ok(v);
    }
    let mut items = if super::conv::is_slice(&v) {
        strslice(&v)
    } else {
        vec![strval(&v)]
    };
    items.sort();
    Ok(string_list(items))
}

// ---- xstrings v1.5.0 -------------------------------------------------------

fn is_connector(r: char) -> bool {
    r == '-' || r == '_' || is_space(r)
}

/// xstrings' `isAlphabet`: a letter that is not a CJK ideograph.
fn is_alphabet(r: char) -> bool {
    if !is_letter(r) {
        return false;
    }
    let u = r as u32;
    !(0x4e00..=0x9fcc).contains(&u)
        && !(0x3400..=0x4d85).contains(&u)
        && !(0x20000..=0x2b81d).contains(&u)
}

/// xstrings `ToPascalCase` (`toCamelCase(str, true)`), Sprig's `camelcase`.
pub fn to_pascal_case(s: &str) -> String {
    let mut chars = s.chars();
    let mut out = String::new();
    let mut r0 = '\0';
    let mut first_upper = false;
    for c in chars.by_ref() {
        r0 = c;
        if !is_connector(c) {
            first_upper = is_upper(c);
            r0 = to_upper(c);
            break;
        }
        out.push(c);
    }
    let rest: Vec<char> = chars.collect();
    if rest.is_empty() {
        // xstrings writes the last rune read once more, even when it was a
        // connector already copied ("-" gives "--").
        if !s.is_empty() {
            out.push(r0);
        }
        return out;
    }
    for c in rest {
        let r1 = r0;
        r0 = c;
        if is_connector(r0) && is_connector(r1) {
            out.push(r1);
            continue;
        }
        if is_connector(r1) {
            first_upper = is_upper(r0);
            r0 = to_upper(r0);
        } else {
            if first_upper {
                if is_upper(r0) {
                    r0 = to_lower(r0);
                } else {
                    first_upper = false;
                }
            }
            out.push(r1);
        }
    }
    out.push(r0);
    out
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Word {
    Invalid,
    Number,
    UpperCase,
    Alphabet,
    Connector,
    Punct,
    Other,
}

/// xstrings `nextWord`. Strings here are valid UTF-8, so xstrings'
/// invalid-rune handling never triggers; an empty input yields `Invalid`.
fn next_word(s: &str) -> (Word, &str, &str) {
    let mut it = s.char_indices().peekable();
    let Some((_, r)) = it.next() else {
        return (Word::Invalid, "", "");
    };
    let mut offset = r.len_utf8();
    let take_while = |offset: &mut usize, pred: &dyn Fn(char) -> bool| {
        for c in s[*offset..].chars() {
            if !pred(c) {
                break;
            }
            *offset += c.len_utf8();
        }
    };
    let wt;
    if is_connector(r) {
        wt = Word::Connector;
        take_while(&mut offset, &is_connector);
    } else if is_punct(r) {
        wt = Word::Punct;
        take_while(&mut offset, &is_punct);
    } else if is_upper(r) {
        wt = Word::UpperCase;
        if let Some(r2) = s[offset..].chars().next() {
            if is_upper(r2) {
                let mut prev_size = r2.len_utf8();
                offset += prev_size;
                let mut stop: Option<char> = None;
                for c in s[offset..].chars() {
                    if !is_upper(c) {
                        stop = Some(c);
                        break;
                    }
                    prev_size = c.len_utf8();
                    offset += prev_size;
                }
                // "HTTPStatus" splits into "HTTP" and "Status".
                if stop.is_some_and(is_alphabet) {
                    offset -= prev_size;
                }
            } else if is_alphabet(r2) {
                offset += r2.len_utf8();
                take_while(&mut offset, &|c| is_alphabet(c) && !is_upper(c));
            }
        }
    } else if is_alphabet(r) {
        wt = Word::Alphabet;
        take_while(&mut offset, &|c| is_alphabet(c) && !is_upper(c));
    } else if is_number(r) {
        wt = Word::Number;
        take_while(&mut offset, &is_number);
    } else {
        wt = Word::Other;
        take_while(&mut offset, &|c| {
            !(is_connector(c) || is_alphabet(c) || is_number(c) || is_punct(c))
        });
    }
    (wt, &s[..offset], &s[offset..])
}

fn to_lower_word(out: &mut String, wt: Word, s: &str, connector: char) {
    if wt != Word::UpperCase && wt != Word::Connector {
        out.push_str(s);
        return;
    }
    for r in s.chars() {
        if is_connector(r) {
            out.push(connector);
        } else if is_upper(r) {
            out.push(to_lower(r));
        } else {
            out.push(r);
        }
    }
}

/// xstrings `camelCaseToLowerCase`: `snakecase` and `kebabcase`.
pub fn camel_case_to_lower_case(s: &str, connector: char) -> String {
    if s.is_empty() {
        return String::new();
    }
    let mut out = String::new();
    let (mut wt, mut word, mut remaining) = next_word(s);
    while !remaining.is_empty() {
        if wt != Word::Connector {
            to_lower_word(&mut out, wt, word, connector);
        }
        let prev = wt;
        let last = word;
        (wt, word, remaining) = next_word(remaining);
        match prev {
            Word::Number => {
                while wt == Word::Alphabet || wt == Word::Number {
                    to_lower_word(&mut out, wt, word, connector);
                    (wt, word, remaining) = next_word(remaining);
                }
                if wt != Word::Invalid && wt != Word::Punct && wt != Word::Connector {
                    out.push(connector);
                }
            }
            Word::Connector => to_lower_word(&mut out, prev, last, connector),
            Word::Punct => {}
            _ => {
                if wt != Word::Number {
                    if wt != Word::Connector && wt != Word::Punct {
                        out.push(connector);
                    }
                    continue;
                }
                if remaining.is_empty() {
                    continue;
                }
                let last = word;
                (wt, word, remaining) = next_word(remaining);
                // "Bld4Floor" => "bld4_floor"
                if wt != Word::Alphabet {
                    to_lower_word(&mut out, Word::Number, last, connector);
                    if wt != Word::Connector && wt != Word::Punct {
                        out.push(connector);
                    }
                    continue;
                }
                // "HTTP2xx" => "http_2xx"
                out.push(connector);
                to_lower_word(&mut out, Word::Number, last, connector);
                while wt == Word::Alphabet || wt == Word::Number {
                    to_lower_word(&mut out, wt, word, connector);
                    (wt, word, remaining) = next_word(remaining);
                }
                if wt != Word::Invalid && wt != Word::Connector && wt != Word::Punct {
                    out.push(connector);
                }
            }
        }
    }
    to_lower_word(&mut out, wt, word, connector);
    out
}

// ---- encoding/base64, encoding/base32 -------------------------------------

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const B32: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

fn corrupt(kind: &str, at: usize) -> String {
    format!("illegal {kind} data at input byte {at}")
}

/// Go's `base64.StdEncoding.DecodeString` (`\r` and `\n` are skipped),
/// with Go's `CorruptInputError` text.
pub fn base64_decode(src: &[u8]) -> Result<Vec<u8>, String> {
    let map = |c: u8| B64.iter().position(|&x| x == c).map(|p| p as u8);
    let mut out = Vec::new();
    let mut si = 0usize;
    while si < src.len() {
        let mut dbuf = [0u8; 4];
        let mut dlen = 4;
        let mut j = 0usize;
        let mut err: Option<usize> = None;
        while j < 4 {
            if si == src.len() {
                if j == 0 {
                    return Ok(out);
                }
                // Padding is required by StdEncoding.
                return Err(corrupt("base64", si - j));
            }
            let c = src[si];
            si += 1;
            if let Some(v) = map(c) {
                dbuf[j] = v;
                j += 1;
                continue;
            }
            if c == b'\n' || c == b'\r' {
                continue;
            }
            if c != b'=' {
                return Err(corrupt("base64", si - 1));
            }
            match j {
                0 | 1 => return Err(corrupt("base64", si - 1)),
                2 => {
                    while si < src.len() && (src[si] == b'\n' || src[si] == b'\r') {
                        si += 1;
                    }
                    if si == src.len() {
                        return Err(corrupt("base64", src.len()));
                    }
                    if src[si] != b'=' {
                        return Err(corrupt("base64", si - 1));
                    }
                    si += 1;
                }
                _ => {}
            }
            while si < src.len() && (src[si] == b'\n' || src[si] == b'\r') {
                si += 1;
            }
            if si < src.len() {
                err = Some(si);
            }
            dlen = j;
            break;
        }
        let val = (u32::from(dbuf[0]) << 18)
            | (u32::from(dbuf[1]) << 12)
            | (u32::from(dbuf[2]) << 6)
            | u32::from(dbuf[3]);
        let bytes = [(val >> 16) as u8, (val >> 8) as u8, val as u8];
        out.extend_from_slice(&bytes[..dlen - 1]);
        if let Some(at) = err {
            return Err(corrupt("base64", at));
        }
    }
    Ok(out)
}

/// Go's `base32.StdEncoding.EncodeToString`.
pub fn base32_encode(src: &[u8]) -> String {
    let mut out = String::new();
    for chunk in src.chunks(5) {
        let mut buf = [0u8; 5];
        buf[..chunk.len()].copy_from_slice(chunk);
        let v = buf.iter().fold(0u64, |acc, &b| (acc << 8) | u64::from(b));
        let n = (chunk.len() * 8).div_ceil(5);
        for i in 0..8 {
            if i < n {
                out.push(B32[((v >> (35 - 5 * i)) & 31) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Go's `base32.StdEncoding.DecodeString` (newlines are stripped first).
pub fn base32_decode(src: &[u8]) -> Result<Vec<u8>, String> {
    let stripped: Vec<u8> = src
        .iter()
        .copied()
        .filter(|&c| c != b'\n' && c != b'\r')
        .collect();
    let map = |c: u8| B32.iter().position(|&x| x == c).map(|p| p as u8);
    let olen = stripped.len();
    let mut rest: &[u8] = &stripped;
    let mut out = Vec::new();
    let mut end = false;
    while !rest.is_empty() && !end {
        let mut dbuf = [0u8; 8];
        let mut dlen = 8;
        let mut j = 0usize;
        while j < 8 {
            if rest.is_empty() {
                return Err(corrupt("base32", olen - rest.len() - j));
            }
            let c = rest[0];
            rest = &rest[1..];
            if c == b'=' && j >= 2 && rest.len() < 8 {
                if rest.len() + j < 8 - 1 {
                    return Err(corrupt("base32", olen));
                }
                for k in 0..8 - 1 - j {
                    if rest.len() > k && rest[k] != b'=' {
                        return Err(corrupt("base32", olen - rest.len() + k - 1));
                    }
                }
                dlen = j;
                end = true;
                if matches!(dlen, 1 | 3 | 6) {
                    return Err(corrupt("base32", olen - rest.len() - 1));
                }
                break;
            }
            match map(c) {
                Some(v) => dbuf[j] = v,
                None => return Err(corrupt("base32", olen - rest.len() - 1)),
            }
            j += 1;
        }
        let v = dbuf.iter().fold(0u64, |acc, &b| (acc << 5) | u64::from(b));
        let bytes = [
            (v >> 32) as u8,
            (v >> 24) as u8,
            (v >> 16) as u8,
            (v >> 8) as u8,
            v as u8,
        ];
        let n = match dlen {
            8 => 5,
            7 => 4,
            5 => 3,
            4 => 2,
            2 => 1,
            _ => 0,
        };
        out.extend_from_slice(&bytes[..n]);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{err, i, l, s, v};
    use super::*;

    #[test]
    fn indent_is_pad_plus_replace() {
        for text in ["", "a", "a\nb", "a\n", "\n\nx\n", "ä\n€"] {
            for n in [0i64, 1, 4, 40] {
                let pad = " ".repeat(n as usize);
                let go = format!("{pad}{}", text.replace('\n', &format!("\n{pad}")));
                assert_eq!(
                    indent(n, text.as_bytes(), false).unwrap(),
                    go.as_bytes(),
                    "{text:?} {n}"
                );
                assert_eq!(
                    indent(n, text.as_bytes(), true).unwrap(),
                    format!("\n{go}").as_bytes(),
                    "{text:?} {n}"
                );
            }
        }
        assert!(indent(-1, b"x", false).is_err());
    }

    #[test]
    fn case_functions() {
        assert_eq!(v("upper", &[s("straße")]), "STRAßE");
        assert_eq!(
            v("title", &[s("hello wORLD-foo_bar x.y")]),
            "Hello WORLD-Foo_bar X.Y"
        );
        assert_eq!(v("untitle", &[s("Hello World")]), "hello world");
        assert_eq!(v("swapcase", &[s("This Is A.Test")]), "tHIS iS a.tEST");
        assert_eq!(v("snakecase", &[s("FirstName")]), "first_name");
        assert_eq!(v("snakecase", &[s("HTTPServer")]), "http_server");
        assert_eq!(v("snakecase", &[s("HTTP20xOK")]), "http_20x_ok");
        assert_eq!(v("snakecase", &[s("Bld4Floor3rd")]), "bld4_floor_3rd");
        assert_eq!(v("kebabcase", &[s("GO PATH")]), "go-path");
        assert_eq!(v("camelcase", &[s("http_server")]), "HttpServer");
        assert_eq!(v("camelcase", &[s("_complex__case_")]), "_Complex_Case_");
        assert_eq!(v("camelcase", &[s("GOLANG_IS_GREAT")]), "GolangIsGreat");
    }

    #[test]
    fn byte_oriented_functions() {
        assert_eq!(v("trunc", &[i(3), s("abcdef")]), "abc");
        assert_eq!(v("trunc", &[i(-2), s("abcdef")]), "ef");
        assert_eq!(v("substr", &[i(1), i(3), s("abcdef")]), "bc");
        assert_eq!(v("substr", &[i(2), i(-1), s("abcdef")]), "cdef");
        assert_eq!(
            err("substr", &[i(-1), i(9), s("abc")]),
            "runtime error: slice bounds out of range [:9] with length 3"
        );
        assert_eq!(
            err("substr", &[i(3), i(2), s("abc")]),
            "runtime error: slice bounds out of range [3:2]"
        );
        assert_eq!(v("abbrev", &[i(5), s("hello world")]), "he...");
        assert_eq!(
            v("abbrevboth", &[i(5), i(10), s("1234 5678 9123")]),
            "...5678..."
        );
        assert_eq!(v("initials", &[s("First Try")]), "FT");
        assert_eq!(v("nospace", &[s(" a b\tc ")]), "abc");
        assert_eq!(v("wrap", &[i(5), s("Hello World")]), "Hello\nWorld");
        assert_eq!(
            v("wrapWith", &[i(5), s("\t"), s("Hello World")]),
            "Hello\tWorld"
        );
    }

    #[test]
    fn quoting_and_joining() {
        assert_eq!(
            v("quote", &[s("a\"b"), Value::Nil, i(3)]),
            "\"a\\\"b\" \"3\""
        );
        assert_eq!(v("quote", &[s("\u{1b}x\u{a0}")]), "\"\\x1bx\\u00a0\"");
        assert_eq!(
            v("squote", &[s("a"), Value::Nil, l(vec![i(1)])]),
            "'a' '[1]'"
        );
        assert_eq!(v("cat", &[s("a"), Value::Nil, i(2)]), "a 2");
        assert_eq!(v("indent", &[i(2), s("a\n\nb")]), "  a\n  \n  b");
        assert_eq!(v("nindent", &[i(1), s("a")]), "\n a");
        assert_eq!(v("split", &[s(","), s("a,b")]), "map[_0:a _1:b]");
        assert_eq!(v("splitn", &[s(","), i(2), s("a,b,c")]), "map[_0:a _1:b,c]");
        assert_eq!(
            v("join", &[s(","), l(vec![i(1), s("a"), Value::Nil])]),
            "1,a"
        );
        assert_eq!(
            v("sortAlpha", &[l(vec![s("b"), s("B"), s("a")])]),
            "[B a b]"
        );
        assert_eq!(
            v("toStrings", &[l(vec![i(1), Value::Nil, s("x")])]),
            "[1 x]"
        );
        assert_eq!(v("replace", &[s(""), s("x"), s("ab")]), "xaxbx");
    }

    #[test]
    fn encodings() {
        assert_eq!(v("b64enc", &[s("hello")]), "aGVsbG8=");
        assert_eq!(v("b64dec", &[s("aGVsbG8=")]), "hello");
        assert_eq!(
            v("b64dec", &[s("aGVsbG8")]),
            "illegal base64 data at input byte 4"
        );
        assert_eq!(
            v("b64dec", &[s("a!")]),
            "illegal base64 data at input byte 1"
        );
        assert_eq!(v("b32enc", &[s("hello")]), "NBSWY3DP");
        assert_eq!(v("b32enc", &[s("hi")]), "NBUQ====");
        assert_eq!(v("b32dec", &[s("NBUQ====")]), "hi");
        assert_eq!(v("b32dec", &[s("NBSWY3DP")]), "hello");
        assert_eq!(
            v("b32dec", &[s("1")]),
            "illegal base32 data at input byte 0"
        );
    }
}

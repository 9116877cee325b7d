//! go-yaml v2's implicit-type resolver (`resolve.go`): what a plain scalar
//! means under YAML 1.1 as yaml.v2 reads it, and the timestamp / base-60
//! checks the encoder uses to decide whether a string needs quotes.

use super::num::{GoInt, parse_go_float, parse_go_int};

/// A resolved scalar (`resolve("", s)` in go-yaml v2).
#[derive(Clone, Debug, PartialEq)]
pub enum Resolved {
    Null,
    Bool(bool),
    /// Go `int` (64-bit).
    Int(i64),
    /// Go `uint64`, for integers above `i64::MAX`.
    Uint(u64),
    Float(f64),
    /// A timestamp-looking string: decoded as the string itself into
    /// `interface{}`, but quoted on output.
    Timestamp,
    /// The merge key `<<`.
    Merge,
    Str,
}

impl Resolved {
    /// go-yaml's short tag name, for error messages.
    pub fn short_tag(&self) -> &'static str {
        match self {
            Resolved::Null => "!!null",
            Resolved::Bool(_) => "!!bool",
            Resolved::Int(_) | Resolved::Uint(_) => "!!int",
            Resolved::Float(_) => "!!float",
            Resolved::Timestamp => "!!timestamp",
            Resolved::Merge => "!!merge",
            Resolved::Str => "!!str",
        }
    }
}

/// `resolve("", s)`: the implicit type of a plain scalar.
pub fn resolve_plain(s: &str) -> Resolved {
    let Some(&first) = s.as_bytes().first() else {
        return Resolved::Null;
    };
    // resolveTable hints: sign, digit, "in map" letters, '.'.
    match first {
        b'y' | b'Y' | b'n' | b'N' | b't' | b'T' | b'f' | b'F' | b'o' | b'O' | b'~' => {
            lookup_map(s).unwrap_or(Resolved::Str)
        }
        b'.' => {
            if let Some(r) = lookup_map(s) {
                return r;
            }
            match parse_go_float(s) {
                Some(f) => Resolved::Float(f),
                None => Resolved::Str,
            }
        }
        b'+' | b'-' | b'0'..=b'9' => {
            if let Some(r) = lookup_map(s) {
                return r;
            }
            resolve_number(s)
        }
        _ => Resolved::Str,
    }
}

/// The `resolveMap` table of go-yaml v2 (YAML 1.1 booleans, nulls, special floats).
fn lookup_map(s: &str) -> Option<Resolved> {
    Some(match s {
        "y" | "Y" | "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => {
            Resolved::Bool(true)
        }
        "n" | "N" | "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => {
            Resolved::Bool(false)
        }
        "~" | "null" | "Null" | "NULL" => Resolved::Null,
        ".nan" | ".NaN" | ".NAN" => Resolved::Float(f64::NAN),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => Resolved::Float(f64::INFINITY),
        "-.inf" | "-.Inf" | "-.INF" => Resolved::Float(f64::NEG_INFINITY),
        "<<" => Resolved::Merge,
        _ => return None,
    })
}

/// The 'D'/'S' branch of `resolve`: timestamp, int (base 0, `_` removed),
/// uint, YAML-style float, then the `0b`/`-0b` binary forms.
fn resolve_number(s: &str) -> Resolved {
    if parse_timestamp(s) {
        return Resolved::Timestamp;
    }
    let plain: std::borrow::Cow<str> = if s.contains('_') {
        s.replace('_', "").into()
    } else {
        s.into()
    };
    match parse_go_int(&plain) {
        Some(GoInt::Int(i)) => return Resolved::Int(i),
        Some(GoInt::Uint(u)) => return Resolved::Uint(u),
        None => {}
    }
    if is_yaml_style_float(&plain)
        && let Some(f) = parse_go_float(&plain)
    {
        return Resolved::Float(f);
    }
    // go-yaml's explicit "0b" handling is covered by Go's base-0 ParseInt,
    // except that "-0b…" may overflow int64 differently; both end as ints.
    Resolved::Str
}

/// `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`
fn is_yaml_style_float(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    if i < b.len() && (b[i] == b'-' || b[i] == b'+') {
        i += 1;
    }
    let digits = |i: &mut usize| {
        let st = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - st
    };
    if i < b.len() && b[i] == b'.' {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    } else {
        if digits(&mut i) == 0 {
            return false;
        }
        if i < b.len() && b[i] == b'.' {
            i += 1;
            digits(&mut i);
        }
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        if i < b.len() && (b[i] == b'-' || b[i] == b'+') {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

/// encode.go `isBase60Float`: `^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$`.
/// Such strings are quoted on output for YAML 1.1 readers.
pub fn is_base60_float(s: &str) -> bool {
    let b = s.as_bytes();
    if b.is_empty() || !s.contains(':') {
        return false;
    }
    let mut i = 0;
    if b[0] == b'-' || b[0] == b'+' {
        i += 1;
    }
    if i >= b.len() || !b[i].is_ascii_digit() {
        return false;
    }
    i += 1;
    while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'_') {
        i += 1;
    }
    let mut groups = 0;
    while i < b.len() && b[i] == b':' {
        i += 1;
        // [0-5]?[0-9]
        let st = i;
        while i < b.len() && b[i].is_ascii_digit() && i - st < 2 {
            i += 1;
        }
        match i - st {
            1 => {}
            2 if b[st] <= b'5' => {}
            _ => return false,
        }
        groups += 1;
    }
    if groups == 0 {
        return false;
    }
    if i < b.len() && b[i] == b'.' {
        i += 1;
        while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'_') {
            i += 1;
        }
    }
    i == b.len()
}

/// `parseTimestamp`: YYYY- then one of the layouts go-yaml tries with Go's
/// `time.Parse`: "2006-1-2T15:4:5.999999999Z07:00" (also lower-case 't'),
/// "2006-1-2 15:4:5.999999999" and "2006-1-2".
pub fn parse_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 5 || !b[..4].iter().all(u8::is_ascii_digit) || b[4] != b'-' {
        return false;
    }
    let mut i = 5;
    let Some(month) = num(b, &mut i, 2) else {
        return false;
    };
    if i >= b.len() || b[i] != b'-' {
        return false;
    }
    i += 1;
    let Some(day) = num(b, &mut i, 2) else {
        return false;
    };
    let year: u32 = s[..4].parse().unwrap_or(0);
    if !(1..=12).contains(&month) || day < 1 || day > days_in(month, year) {
        return false;
    }
    if i == b.len() {
        return true;
    }
    let zoned = match b[i] {
        b'T' | b't' => true,
        b' ' => false,
        _ => return false,
    };
    i += 1;
    let Some(h) = num(b, &mut i, 2) else {
        return false;
    };
    if i >= b.len() || b[i] != b':' {
        return false;
    }
    i += 1;
    let Some(m) = num(b, &mut i, 2) else {
        return false;
    };
    if i >= b.len() || b[i] != b':' {
        return false;
    }
    i += 1;
    let Some(sec) = num(b, &mut i, 2) else {
        return false;
    };
    if h > 23 || m > 59 || sec > 59 {
        return false;
    }
    if i < b.len() && b[i] == b'.' {
        // Go accepts a fractional second after a seconds field even when the
        // layout's fraction is optional; at least one digit is required.
        i += 1;
        let st = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == st {
            return false;
        }
    }
    if !zoned {
        return i == b.len();
    }
    if i < b.len() && b[i] == b'Z' {
        return i + 1 == b.len();
    }
    // ±hh:mm
    if i + 6 != b.len() || (b[i] != b'+' && b[i] != b'-') {
        return false;
    }
    let z = &b[i + 1..];
    z[0].is_ascii_digit()
        && z[1].is_ascii_digit()
        && z[2] == b':'
        && z[3].is_ascii_digit()
        && z[4].is_ascii_digit()
}

/// Go's `getnum` for non-fixed fields: one or two digits.
fn num(b: &[u8], i: &mut usize, max: usize) -> Option<u32> {
    let st = *i;
    let mut v = 0u32;
    while *i < b.len() && b[*i].is_ascii_digit() && *i - st < max {
        v = v * 10 + (b[*i] - b'0') as u32;
        *i += 1;
    }
    if *i == st { None } else { Some(v) }
}

fn days_in(month: u32, year: u32) -> u32 {
    match month {
        2 if (year.is_multiple_of(4) && !year.is_multiple_of(100)) || year.is_multiple_of(400) => {
            29
        }
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml11() {
        assert_eq!(resolve_plain("yes"), Resolved::Bool(true));
        assert_eq!(resolve_plain("Off"), Resolved::Bool(false));
        assert_eq!(resolve_plain("~"), Resolved::Null);
        assert_eq!(resolve_plain(""), Resolved::Null);
        assert_eq!(resolve_plain("0755"), Resolved::Int(493));
        assert_eq!(resolve_plain("1_000"), Resolved::Int(1000));
        assert_eq!(resolve_plain("0x1F"), Resolved::Int(31));
        assert_eq!(resolve_plain("08"), Resolved::Float(8.0));
        assert_eq!(resolve_plain("1e3"), Resolved::Float(1000.0));
        assert_eq!(resolve_plain("1e400"), Resolved::Str);
        assert_eq!(resolve_plain(".5"), Resolved::Float(0.5));
        assert_eq!(resolve_plain("2001-12-14"), Resolved::Timestamp);
        assert_eq!(
            resolve_plain("2001-12-14t21:59:43.10-05:00"),
            Resolved::Timestamp
        );
        assert_eq!(resolve_plain("2001-02-30"), Resolved::Str);
        assert_eq!(resolve_plain("1:20"), Resolved::Str);
        assert!(is_base60_float("1:20"));
        assert!(is_base60_float("190:20:30.15"));
        assert!(!is_base60_float("1:70"));
        assert_eq!(resolve_plain("NaN"), Resolved::Str);
        // '<' has no resolveTable hint, so "<<" resolves as a string.
        assert_eq!(resolve_plain("<<"), Resolved::Str);
    }
}

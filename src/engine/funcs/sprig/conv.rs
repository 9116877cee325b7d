//! Value conversions shared by the Sprig functions: Sprig's `strval`, the
//! `spf13/cast` v1.7.0 conversions Sprig's numeric functions go through
//! (`ToInt64`, `ToInt`, `ToFloat64`, `ToBool`, errors swallowed to zero as
//! Sprig does), Go's `strconv` parsers they rely on, Sprig's `empty` and
//! `reflect.DeepEqual`.
//!
//! Hand-written because the exact Go rules are observable in templates:
//! `int "010"` is 8 (base prefixes of `ParseInt(s, 0, 0)`), `int "1.0"` is 1
//! (cast's `trimZeroDecimal`), `int "1.5"` is 0, a float64 is truncated, and
//! an out-of-range float becomes Go's amd64 "integer indefinite" value.

use std::rc::Rc;

use crate::engine::gofmt::fmt_v;
use crate::engine::value::{ListKind, MapKind, Value, go_lossy};

/// Sprig's `strval`: strings as they are, `[]byte` as text, anything else
/// (a `fmt.Stringer` object included) as Go's `%v`. As Rust text: invalid
/// UTF-8 becomes U+FFFD (see [`strval_value`] for the bytes).
pub fn strval(v: &Value) -> String {
    match v {
        Value::Str(s) => s.to_string(),
        Value::BStr(b) | Value::Bytes(b) => go_lossy(b).into_owned(),
        other => {
            let mut s = String::new();
            fmt_v(other, &mut s);
            s
        }
    }
}

/// Sprig's `strval` as a Go string value: a byte string or `[]byte` keeps
/// its bytes.
pub fn strval_value(v: &Value) -> Value {
    match v {
        Value::Str(_) | Value::BStr(_) => v.clone(),
        Value::Bytes(b) => Value::from_go_bytes(b.to_vec()),
        other => {
            let mut s = String::new();
            fmt_v(other, &mut s);
            Value::string(s)
        }
    }
}

/// Go's `int64(f)` on amd64: truncation toward zero; NaN and values out of
/// range give the "integer indefinite" value `math.MinInt64`.
pub fn f64_to_i64(f: f64) -> i64 {
    if f.is_nan() || !(-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&f) {
        i64::MIN
    } else {
        f as i64
    }
}

/// `cast.ToInt64E`; `None` where cast returns an error.
pub fn try_to_int64(v: &Value) -> Option<i64> {
    match v {
        Value::Int(i) | Value::I64(i) => Some(*i),
        Value::U64(u) => Some(*u as i64),
        Value::Float(f) => Some(f64_to_i64(*f)),
        Value::Str(s) => parse_int(trim_zero_decimal(s), 0).ok(),
        Value::Bool(b) => Some(i64::from(*b)),
        Value::Nil => Some(0),
        _ => None,
    }
}

/// `cast.ToInt64`: errors become 0.
pub fn to_int64(v: &Value) -> i64 {
    try_to_int64(v).unwrap_or(0)
}

/// `cast.ToInt` (Go `int` is 64 bits wide, so this equals [`to_int64`]).
pub fn to_int(v: &Value) -> i64 {
    to_int64(v)
}

/// `cast.ToFloat64E`; `None` where cast returns an error.
pub fn try_to_float64(v: &Value) -> Option<f64> {
    match v {
        Value::Int(i) | Value::I64(i) => Some(*i as f64),
        Value::U64(u) => Some(*u as f64),
        Value::Float(f) => Some(*f),
        Value::Str(s) => parse_float(s),
        Value::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
        Value::Nil => Some(0.0),
        _ => None,
    }
}

/// `cast.ToFloat64`: errors become 0.
pub fn to_float64(v: &Value) -> f64 {
    try_to_float64(v).unwrap_or(0.0)
}

/// `cast.ToBoolE`; `None` where cast returns an error.
pub fn try_to_bool(v: &Value) -> Option<bool> {
    match v {
        Value::Bool(b) => Some(*b),
        Value::Nil => Some(false),
        Value::Int(i) | Value::I64(i) => Some(*i != 0),
        Value::U64(u) => Some(*u != 0),
        Value::Float(f) => Some(*f != 0.0),
        Value::Str(s) => parse_bool(s),
        _ => None,
    }
}

/// `cast.ToBool`: errors become false.
pub fn to_bool(v: &Value) -> bool {
    try_to_bool(v).unwrap_or(false)
}

/// cast's `trimZeroDecimal`: "10.000" → "10" (but "10.5" and "1.0x" stay).
pub fn trim_zero_decimal(s: &str) -> &str {
    let b = s.as_bytes();
    let mut found_zero = false;
    for i in (1..=b.len()).rev() {
        match b[i - 1] {
            b'.' => {
                if found_zero {
                    return &s[..i - 1];
                }
            }
            b'0' => found_zero = true,
            _ => return s,
        }
    }
    s
}

/// Why a Go `strconv` integer parse failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParseIntError {
    /// `strconv.ErrSyntax`
    Syntax,
    /// `strconv.ErrRange`; carries the clamped value Go returns with it.
    Range(i64),
}

/// Go's `strconv.ParseInt(s, base, 64)` for base 0 (prefixes `0x`, `0o`,
/// `0b`, a leading `0` for octal, `_` separators) or an explicit base 2–36.
pub fn parse_int(s: &str, base: u32) -> Result<i64, ParseIntError> {
    let (neg, body) = match s.as_bytes().first() {
        Some(b'+') => (false, &s[1..]),
        Some(b'-') => (true, &s[1..]),
        _ => (false, s),
    };
    let un = parse_uint(body, base)?;
    let cutoff = 1u64 << 63;
    match (neg, un) {
        (false, u) if u >= cutoff => Err(ParseIntError::Range(i64::MAX)),
        (true, u) if u > cutoff => Err(ParseIntError::Range(i64::MIN)),
        (true, u) => Ok((u as i64).wrapping_neg()),
        (false, u) => Ok(u as i64),
    }
}

/// Go's `strconv.ParseUint(s, base, 64)`.
pub fn parse_uint(s: &str, base: u32) -> Result<u64, ParseIntError> {
    if s.is_empty() {
        return Err(ParseIntError::Syntax);
    }
    let base0 = base == 0;
    let orig = s;
    let b = s.as_bytes();
    let (mut base, mut digits) = (base, b);
    if base0 {
        base = 10;
        if b[0] == b'0' {
            if b.len() >= 3 && b[1].eq_ignore_ascii_case(&b'b') {
                base = 2;
                digits = &b[2..];
            } else if b.len() >= 3 && b[1].eq_ignore_ascii_case(&b'o') {
                base = 8;
                digits = &b[2..];
            } else if b.len() >= 3 && b[1].eq_ignore_ascii_case(&b'x') {
                base = 16;
                digits = &b[2..];
            } else {
                base = 8;
                digits = &b[1..];
            }
        }
    } else if !(2..=36).contains(&base) {
        return Err(ParseIntError::Syntax);
    }
    let mut n: u64 = 0;
    let mut underscores = false;
    let mut overflow = false;
    for &c in digits {
        let d = match c {
            b'_' if base0 => {
                underscores = true;
                continue;
            }
            b'0'..=b'9' => u32::from(c - b'0'),
            b'a'..=b'z' => u32::from(c - b'a') + 10,
            b'A'..=b'Z' => u32::from(c - b'A') + 10,
            _ => return Err(ParseIntError::Syntax),
        };
        if d >= base {
            return Err(ParseIntError::Syntax);
        }
        match n
            .checked_mul(u64::from(base))
            .and_then(|m| m.checked_add(u64::from(d)))
        {
            Some(m) => n = m,
            None => {
                overflow = true;
                n = u64::MAX;
            }
        }
    }
    if underscores && !underscore_ok(orig) {
        return Err(ParseIntError::Syntax);
    }
    if overflow {
        return Err(ParseIntError::Range(i64::MAX));
    }
    Ok(n)
}

/// Go's `strconv.underscoreOK`: `_` only between digits (or after a base
/// prefix).
fn underscore_ok(s: &str) -> bool {
    let mut b = s.as_bytes();
    if let Some(b'+' | b'-') = b.first() {
        b = &b[1..];
    }
    let mut saw = b'^';
    let mut i = 0;
    let mut hex = false;
    if b.len() >= 2 && b[0] == b'0' && matches!(b[1].to_ascii_lowercase(), b'b' | b'o' | b'x') {
        i = 2;
        saw = b'0';
        hex = b[1].eq_ignore_ascii_case(&b'x');
    }
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_digit() || hex && c.is_ascii_hexdigit() {
            saw = b'0';
        } else if c == b'_' {
            if saw != b'0' {
                return false;
            }
            saw = b'_';
        } else {
            if saw == b'_' {
                return false;
            }
            saw = b'!';
        }
        i += 1;
    }
    saw != b'_'
}

/// Go's `strconv.Atoi`: base 10, sign allowed; out-of-range input yields the
/// clamped value together with an error.
pub fn atoi(s: &str) -> Result<i64, ParseIntError> {
    // Atoi rejects base prefixes and underscores: base 10 explicitly.
    parse_int(s, 10)
}

/// Go's `strconv.ParseFloat(s, 64)`; `None` on a syntax or range error.
/// Decimal and `inf`/`infinity`/`nan` forms (any case, optional sign) and
/// `_` separators as Go allows them.
pub fn parse_float(s: &str) -> Option<f64> {
    if s.is_empty() {
        return None;
    }
    let cleaned;
    let s = if s.contains('_') {
        if !underscore_ok(s) {
            return None;
        }
        cleaned = s.replace('_', "");
        cleaned.as_str()
    } else {
        s
    };
    let lower = s.to_ascii_lowercase();
    let unsigned = lower.trim_start_matches(['+', '-']);
    if lower.len() - unsigned.len() > 1 {
        return None;
    }
    match unsigned {
        "inf" | "infinity" => {
            return Some(if lower.starts_with('-') {
                f64::NEG_INFINITY
            } else {
                f64::INFINITY
            });
        }
        "nan" => return Some(f64::NAN),
        _ => {}
    }
    if unsigned.starts_with("0x") {
        return parse_hex_float(&lower);
    }
    // Rust's parser accepts the same decimal syntax as Go except for the
    // words handled above (Rust also takes "infinity" etc., already done).
    if !unsigned
        .bytes()
        .all(|c| c.is_ascii_digit() || matches!(c, b'.' | b'e' | b'+' | b'-'))
    {
        return None;
    }
    let f: f64 = s.parse().ok()?;
    if f.is_infinite() {
        // Go reports a range error for overflowing literals.
        return None;
    }
    Some(f)
}

/// Hexadecimal floating-point literal (`0x1.8p3`), which Go's ParseFloat
/// accepts; the `p` exponent is mandatory.
fn parse_hex_float(lower: &str) -> Option<f64> {
    let (neg, body) = match lower.as_bytes().first() {
        Some(b'-') => (true, &lower[1..]),
        Some(b'+') => (false, &lower[1..]),
        _ => (false, lower),
    };
    let body = body.strip_prefix("0x")?;
    let (mant, exp) = body.split_once('p')?;
    let exp: i32 = exp.parse().ok()?;
    let (int, frac) = mant.split_once('.').unwrap_or((mant, ""));
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    let mut v = 0f64;
    for c in int.chars() {
        v = v * 16.0 + f64::from(c.to_digit(16)?);
    }
    let mut scale = 1.0 / 16.0;
    for c in frac.chars() {
        v += f64::from(c.to_digit(16)?) * scale;
        scale /= 16.0;
    }
    let v = v * 2f64.powi(exp);
    if v.is_infinite() {
        return None;
    }
    Some(if neg { -v } else { v })
}

/// Go's `strconv.ParseBool`.
pub fn parse_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// Sprig's `empty`: the zero value of its type. Unlike template truthiness,
/// a struct or pointer object is never empty.
pub fn empty(v: &Value) -> bool {
    match v {
        Value::Nil => true,
        Value::Bool(b) => !*b,
        Value::Int(i) | Value::I64(i) => *i == 0,
        Value::U64(u) => *u == 0,
        Value::Float(f) => *f == 0.0,
        Value::Str(s) => s.is_empty(),
        Value::BStr(_) => false,
        Value::Bytes(b) => b.is_empty(),
        Value::List(l) => l.items.is_empty(),
        Value::Map(m) => m.is_empty(),
        Value::Object(_) => false,
    }
}

/// `reflect.DeepEqual` on template values: the Go types must be identical
/// (`int` 1 and `float64` 1 differ), then contents are compared deeply.
pub fn deep_equal(a: &Value, b: &Value) -> bool {
    deep_equal_in(a, b, &mut Vec::new())
}

/// `visited` holds the container pairs already under comparison; meeting
/// one again (a cyclic value) counts as equal, as in Go's `deepValueEqual`.
fn deep_equal_in(a: &Value, b: &Value, visited: &mut Vec<(*const (), *const ())>) -> bool {
    let pair = match (a, b) {
        (Value::List(x), Value::List(y)) => Some((Rc::as_ptr(x).cast(), Rc::as_ptr(y).cast())),
        (Value::Map(x), Value::Map(y)) => Some((x.id(), y.id())),
        _ => None,
    };
    if let Some(p) = pair {
        if visited.contains(&p) {
            return true;
        }
        visited.push(p);
    }
    match (a, b) {
        (Value::Nil, Value::Nil) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Int(x), Value::Int(y)) | (Value::I64(x), Value::I64(y)) => x == y,
        (Value::U64(x), Value::U64(y)) => x == y,
        (Value::Float(x), Value::Float(y)) => x == y,
        (Value::Str(x), Value::Str(y)) => x == y,
        (Value::BStr(x), Value::BStr(y)) => x == y,
        (Value::Bytes(x), Value::Bytes(y)) => x == y,
        (Value::List(x), Value::List(y)) => {
            Rc::ptr_eq(x, y)
                || x.kind == y.kind
                    && x.items.len() == y.items.len()
                    && x.items
                        .iter()
                        .zip(y.items.iter())
                        .all(|(p, q)| deep_equal_in(p, q, visited))
        }
        (Value::Map(x), Value::Map(y)) => {
            if x.kind != y.kind {
                return false;
            }
            if x.id() == y.id() {
                return true;
            }
            let (xe, ye) = (x.borrow(), y.borrow());
            xe.len() == ye.len()
                && xe
                    .iter()
                    .all(|(k, v)| ye.get(k).is_some_and(|w| deep_equal_in(v, w, visited)))
        }
        (Value::Object(x), Value::Object(y)) => {
            // Pointers to structs: equal when they point to equal values.
            // Objects expose no fields generically, so compare the type and
            // the printed form.
            Rc::ptr_eq(x, y)
                || x.type_name() == y.type_name() && {
                    let (mut p, mut q) = (String::new(), String::new());
                    x.fmt_v(&mut p);
                    y.fmt_v(&mut q);
                    p == q
                }
        }
        _ => false,
    }
}

/// The Go kind of a value as `reflect.TypeOf(v).Kind()` names it, for the
/// "Cannot … on type KIND" errors of Sprig's list functions.
pub fn kind_of(v: &Value) -> &str {
    v.kind_name()
}

/// True for Go slices and arrays (what Sprig's list functions accept),
/// named slice types with methods included (`.Capabilities.APIVersions`
/// is a `chartutil.VersionSet`: reflection sees a slice).
pub fn is_slice(v: &Value) -> bool {
    match v {
        Value::List(_) | Value::Bytes(_) => true,
        Value::Object(o) => o.kind_name() == "slice",
        _ => false,
    }
}

/// The elements of a slice value (`[]byte` elements as numbers).
pub fn slice_items(v: &Value) -> Vec<Value> {
    match v {
        Value::List(l) => l.items.clone(),
        // uint8 has no Value of its own; the numbers print the same.
        Value::Bytes(b) => b.iter().map(|x| Value::Int(i64::from(*x))).collect(),
        Value::Object(o) => o.underlying().map(|u| slice_items(&u)).unwrap_or_default(),
        _ => Vec::new(),
    }
}

/// A `[]string` value.
pub fn string_list(items: impl IntoIterator<Item = String>) -> Value {
    Value::str_list(items.into_iter().map(Value::string).collect())
}

/// A `map[string]string` value.
pub fn string_map(entries: impl IntoIterator<Item = (String, String)>) -> Value {
    let e = entries
        .into_iter()
        .map(|(k, v)| (crate::engine::Key::from(k), Value::string(v)))
        .collect();
    Value::Map(Rc::new(crate::engine::value::Map::new(MapKind::Str, e)))
}

/// A `[]int` value.
pub fn int_list(items: impl IntoIterator<Item = i64>) -> Value {
    Value::List(Rc::new(crate::engine::value::List {
        kind: ListKind::Int,
        items: items.into_iter().map(Value::Int).collect(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cast_int_rules() {
        assert_eq!(to_int64(&Value::str("010")), 8);
        assert_eq!(to_int64(&Value::str("0x1F")), 31);
        assert_eq!(to_int64(&Value::str("0b11")), 3);
        assert_eq!(to_int64(&Value::str("1_000")), 1000);
        assert_eq!(to_int64(&Value::str("10.0")), 10);
        assert_eq!(to_int64(&Value::str("10.5")), 0);
        assert_eq!(to_int64(&Value::str("-7")), -7);
        assert_eq!(to_int64(&Value::str("abc")), 0);
        assert_eq!(to_int64(&Value::Float(2.9)), 2);
        assert_eq!(to_int64(&Value::Float(-2.9)), -2);
        assert_eq!(to_int64(&Value::Float(f64::NAN)), i64::MIN);
        assert_eq!(to_int64(&Value::Bool(true)), 1);
        assert_eq!(to_int64(&Value::Nil), 0);
        assert_eq!(to_int64(&Value::list(vec![])), 0);
    }

    #[test]
    fn cast_float_rules() {
        assert_eq!(to_float64(&Value::str("1.5")), 1.5);
        assert_eq!(to_float64(&Value::str("1e3")), 1000.0);
        assert_eq!(to_float64(&Value::str("0x10p0")), 16.0);
        assert_eq!(to_float64(&Value::str("x")), 0.0);
        assert_eq!(to_float64(&Value::str("1e400")), 0.0);
        assert!(to_float64(&Value::str("NaN")).is_nan());
        assert_eq!(to_float64(&Value::Int(3)), 3.0);
    }

    #[test]
    fn atoi_clamps() {
        assert_eq!(
            atoi("99999999999999999999"),
            Err(ParseIntError::Range(i64::MAX))
        );
        assert_eq!(atoi("010"), Ok(10));
        assert_eq!(atoi("0x10"), Err(ParseIntError::Syntax));
    }

    #[test]
    fn deep_equal_is_type_strict() {
        assert!(!deep_equal(&Value::Int(1), &Value::Float(1.0)));
        assert!(!deep_equal(&Value::Int(1), &Value::I64(1)));
        assert!(deep_equal(
            &Value::list(vec![Value::Int(1)]),
            &Value::list(vec![Value::Int(1)])
        ));
        assert!(!deep_equal(&Value::list(vec![]), &Value::str_list(vec![])));
    }
}

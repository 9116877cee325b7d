//! Go number parsing as go-yaml v2 uses it: `strconv.ParseInt/ParseUint(s,
//! 0, 64)` and `ParseFloat`; the formatting is `gocompat::float`'s.
//!
//! Hand-written because Go's base-0 integer syntax has no crate equivalent.

pub use crate::gocompat::float::{format_f, format_g, format_json_float};

/// Result of Go's `strconv.ParseInt(s, 0, 64)` / `ParseUint(s, 0, 64)`.
pub enum GoInt {
    Int(i64),
    Uint(u64),
}

/// Go's base-0 integer syntax: optional sign, then `0x`/`0o`/`0b` prefix,
/// a leading `0` (octal), or decimal. Underscores are not accepted here
/// (go-yaml strips them before calling). Returns `ParseInt` when it fits,
/// else `ParseUint` (which takes no sign).
pub fn parse_go_int(s: &str) -> Option<GoInt> {
    let (neg, signed, body) = match s.as_bytes().first() {
        Some(b'-') => (true, true, &s[1..]),
        Some(b'+') => (false, true, &s[1..]),
        _ => (false, false, s),
    };
    let (radix, digits) =
        if let Some(r) = body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
            (16, r)
        } else if let Some(r) = body.strip_prefix("0b").or_else(|| body.strip_prefix("0B")) {
            (2, r)
        } else if let Some(r) = body.strip_prefix("0o").or_else(|| body.strip_prefix("0O")) {
            (8, r)
        } else if body.len() > 1 && body.starts_with('0') {
            (8, &body[1..])
        } else {
            (10, body)
        };
    if digits.is_empty() || !digits.bytes().all(|c| (c as char).is_digit(radix)) {
        return None;
    }
    let mag = u64::from_str_radix(digits, radix).ok()?;
    if neg {
        if mag <= i64::MAX as u64 + 1 {
            return Some(GoInt::Int((mag as i128).wrapping_neg() as i64));
        }
        return None;
    }
    if mag <= i64::MAX as u64 {
        return Some(GoInt::Int(mag as i64));
    }
    if signed {
        // ParseUint rejects a sign.
        return None;
    }
    Some(GoInt::Uint(mag))
}

/// Go's `strconv.ParseFloat(s, 64)` for the decimal syntaxes go-yaml lets
/// through (its callers pre-filter with a regexp or a leading '.'), with Go's
/// range error: an overflow to ±Inf is an error.
pub fn parse_go_float(s: &str) -> Option<f64> {
    let b = s.as_bytes();
    // Only plain decimal floats reach here; reject what Rust would accept but
    // Go's syntax (after go-yaml's filtering) would not: "inf", "nan", "infinity".
    if b.iter()
        .any(|c| c.is_ascii_alphabetic() && *c != b'e' && *c != b'E')
    {
        return None;
    }
    let f: f64 = s.parse().ok()?;
    if f.is_infinite() {
        return None;
    }
    Some(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_g_format() {
        assert_eq!(format_g(1e6, false), "1e+06");
        assert_eq!(format_g(123456789.0, false), "1.23456789e+08");
        assert_eq!(format_g(1.1, false), "1.1");
        assert_eq!(format_g(100000.0, false), "100000");
        assert_eq!(format_g(0.0001, false), "0.0001");
        assert_eq!(format_g(0.00001, false), "1e-05");
        assert_eq!(format_g(1e21, false), "1e+21");
        assert_eq!(format_g(-0.0, false), "-0");
        assert_eq!(format_g(1.234567891234, true), "1.2345679");
    }

    #[test]
    fn json_format() {
        assert_eq!(format_json_float(1e6).as_deref(), Some("1000000"));
        assert_eq!(format_json_float(1e21).as_deref(), Some("1e+21"));
        assert_eq!(
            format_json_float(1e20).as_deref(),
            Some("100000000000000000000")
        );
        assert_eq!(format_json_float(1e-7).as_deref(), Some("1e-7"));
        assert_eq!(format_json_float(0.000001).as_deref(), Some("0.000001"));
        assert_eq!(format_json_float(1.5).as_deref(), Some("1.5"));
        assert_eq!(format_json_float(f64::NAN), None);
    }

    #[test]
    fn go_ints() {
        assert!(matches!(parse_go_int("0755"), Some(GoInt::Int(493))));
        assert!(matches!(parse_go_int("0x1F"), Some(GoInt::Int(31))));
        assert!(matches!(parse_go_int("-0x1F"), Some(GoInt::Int(-31))));
        assert!(matches!(parse_go_int("0b101"), Some(GoInt::Int(5))));
        assert!(matches!(parse_go_int("0o17"), Some(GoInt::Int(15))));
        assert!(parse_go_int("08").is_none());
        assert!(matches!(
            parse_go_int("18446744073709551615"),
            Some(GoInt::Uint(u64::MAX))
        ));
        assert!(matches!(
            parse_go_int("-9223372036854775808"),
            Some(GoInt::Int(i64::MIN))
        ));
    }
}

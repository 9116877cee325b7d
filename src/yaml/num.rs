//! Go number formatting and parsing as go-yaml v2 and encoding/json use it:
//! `strconv.FormatFloat(f, 'g', -1, 64|32)`, encoding/json's float layout,
//! and `strconv.ParseInt/ParseUint(s, 0, 64)`.
//!
//! Hand-written because the yaml module may not depend on the engine (where a
//! general `FormatFloat` lives) and because Go's base-0 integer syntax and its
//! `%g` exponent rules have no crate equivalent.

/// Shortest round-trip decimal digits of `f` (finite, non-zero handled too)
/// and the decimal point position, like Go's `decimal` digits/dp pair:
/// value = 0.DIGITS × 10^dp.
fn shortest_digits(f: f64, bits32: bool) -> (String, i32) {
    // Rust's `{:e}` prints the shortest representation that round-trips,
    // exactly like Go's shortest mode (both use Grisu/Ryu-style shortest).
    let s = if bits32 {
        format!("{:e}", (f as f32).abs())
    } else {
        format!("{:e}", f.abs())
    };
    let (mant, exp) = s.split_once('e').unwrap_or((s.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mant.chars().filter(|c| *c != '.').collect();
    if digits == "0" {
        return (String::from("0"), 1);
    }
    (digits, exp + 1)
}

/// Go's `strconv.FormatFloat(f, 'g', -1, 64)` (or 32 when `bits32`).
pub fn format_g(f: f64, bits32: bool) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        };
    }
    let neg = f.is_sign_negative();
    let (digits, dp) = shortest_digits(f, bits32);
    let mut out = String::with_capacity(digits.len() + 8);
    if neg {
        out.push('-');
    }
    if f == 0.0 {
        out.push('0');
        return out;
    }
    let exp = dp - 1;
    // Shortest %g switches to %e when exp < -4 || exp >= 6 (Go uses eprec 6
    // for shortest formatting).
    if !(-4..6).contains(&exp) {
        push_e(&mut out, &digits, exp);
    } else {
        push_f(&mut out, &digits, dp);
    }
    out
}

/// Go's `%e` layout of shortest digits: d.ddde±XX (at least two exponent digits).
fn push_e(out: &mut String, digits: &str, exp: i32) {
    out.push_str(&digits[..1]);
    if digits.len() > 1 {
        out.push('.');
        out.push_str(&digits[1..]);
    }
    out.push('e');
    out.push(if exp < 0 { '-' } else { '+' });
    let a = exp.unsigned_abs();
    if a < 10 {
        out.push('0');
    }
    out.push_str(&a.to_string());
}

/// Go's `%f` layout of shortest digits with exactly the needed decimals.
fn push_f(out: &mut String, digits: &str, dp: i32) {
    let nd = digits.len() as i32;
    if dp <= 0 {
        out.push_str("0.");
        for _ in 0..(-dp) {
            out.push('0');
        }
        out.push_str(digits);
    } else if dp >= nd {
        out.push_str(digits);
        for _ in 0..(dp - nd) {
            out.push('0');
        }
    } else {
        out.push_str(&digits[..dp as usize]);
        out.push('.');
        out.push_str(&digits[dp as usize..]);
    }
}

/// Go's `strconv.FormatFloat(f, 'f', -1, 64)` for finite `f`.
pub fn format_f(f: f64) -> String {
    let mut out = String::with_capacity(24);
    if f.is_sign_negative() {
        out.push('-');
    }
    if f == 0.0 {
        out.push('0');
        return out;
    }
    let (digits, dp) = shortest_digits(f, false);
    push_f(&mut out, &digits, dp);
    out
}

/// encoding/json's float64 text (`floatEncoder`): `'f'` layout unless
/// |f| < 1e-6 or |f| >= 1e21, then `'e'` with a one-digit negative exponent
/// cleaned up (`e-07` → `e-7`). `None` for NaN and ±Inf, which json rejects.
pub fn format_json_float(f: f64) -> Option<String> {
    if !f.is_finite() {
        return None;
    }
    let abs = f.abs();
    let neg = f.is_sign_negative();
    let mut out = String::with_capacity(24);
    if neg {
        out.push('-');
    }
    if f == 0.0 {
        out.push('0');
        return Some(out);
    }
    let (digits, dp) = shortest_digits(f, false);
    if !(1e-6..1e21).contains(&abs) {
        push_e(&mut out, &digits, dp - 1);
        let n = out.len();
        let b = out.as_bytes();
        if n >= 4 && b[n - 4] == b'e' && b[n - 3] == b'-' && b[n - 2] == b'0' {
            let last = b[n - 1] as char;
            out.truncate(n - 2);
            out.push(last);
        }
    } else {
        push_f(&mut out, &digits, dp);
    }
    Some(out)
}

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

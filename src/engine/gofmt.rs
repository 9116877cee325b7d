//! Go's `fmt` printing of template values: `%v` (what `{{ . }}`, `print` and
//! `toString` produce) and Go's float formatting.
//!
//! Hand-written because the output must match Go byte for byte: `map[a:1
//! b:2]`, `[a b]`, `<nil>`, and float64 as `strconv.FormatFloat(f, 'g', -1,
//! 64)` (`1e+06`, `1.5`, `1e-05`), which no Rust formatter produces.

use super::value::Value;

/// Append Go's `%v` rendering of `v` to `out`.
pub fn fmt_v(v: &Value, out: &mut String) {
    match v {
        Value::Nil => out.push_str("<nil>"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(i) | Value::I64(i) => {
            use std::fmt::Write;
            let _ = write!(out, "{i}");
        }
        Value::U64(u) => {
            use std::fmt::Write;
            let _ = write!(out, "{u}");
        }
        Value::Float(f) => format_float(*f, 'g', -1, out),
        Value::Str(s) => out.push_str(s),
        Value::Bytes(b) => {
            out.push('[');
            for (i, byte) in b.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                use std::fmt::Write;
                let _ = write!(out, "{byte}");
            }
            out.push(']');
        }
        Value::List(l) => {
            out.push('[');
            for (i, item) in l.items.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                fmt_v(item, out);
            }
            out.push(']');
        }
        Value::Map(m) => {
            out.push_str("map[");
            for (i, (k, item)) in m.borrow().iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                out.push_str(k);
                out.push(':');
                fmt_v(item, out);
            }
            out.push(']');
        }
        Value::Object(o) => o.fmt_v(out),
    }
}

/// `%v` into a new string.
pub fn to_string_v(v: &Value) -> String {
    let mut s = String::new();
    fmt_v(v, &mut s);
    s
}

/// Go's `strconv.FormatFloat(f, fmt, prec, 64)` for `fmt` in `e`, `f`, `g`
/// (prec -1 = shortest representation that round-trips).
pub fn format_float(f: f64, fmt: char, prec: i32, out: &mut String) {
    if f.is_nan() {
        out.push_str("NaN");
        return;
    }
    if f.is_infinite() {
        out.push_str(if f > 0.0 { "+Inf" } else { "-Inf" });
        return;
    }
    let neg = f.is_sign_negative();
    // Decimal digits and decimal-point position, as Go's `decimalSlice`:
    // value = 0.d1d2d3… × 10^dp.
    let (digits, dp) = decimal_digits(f.abs(), fmt, prec);
    if neg {
        out.push('-');
    }
    let shortest = prec < 0;
    match fmt {
        'e' => {
            let p = if shortest { digits.len().saturating_sub(1) as i32 } else { prec };
            fmt_e(&digits, dp, p, out);
        }
        'f' => {
            let p = if shortest { (digits.len() as i32 - dp).max(0) } else { prec };
            fmt_f(&digits, dp, p, out);
        }
        _ => {
            let mut eprec = if prec == 0 { 1 } else { prec };
            let nd = digits.len() as i32;
            if eprec > nd && nd >= dp {
                eprec = nd;
            }
            if shortest {
                eprec = 6;
            }
            let exp = dp - 1;
            if digits == b"0" {
                // zero: Go prints "0"
                out.push('0');
                return;
            }
            if exp < -4 || exp >= eprec {
                let p = if shortest { nd - 1 } else { prec.max(1) - 1 };
                fmt_e(&digits, dp, p.min(nd - 1).max(0), out);
            } else {
                let p = if shortest { (nd - dp).max(0) } else { (prec.max(1) - dp).max(0) };
                fmt_f(&digits, dp, p.min((nd - dp).max(0)), out);
            }
        }
    }
}

/// Digits (without leading zeros; "0" for zero) and decimal point position.
fn decimal_digits(f: f64, fmt: char, prec: i32) -> (Vec<u8>, i32) {
    if f == 0.0 {
        return (b"0".to_vec(), 1);
    }
    // Rust's `{:e}` gives the shortest round-trip digits (same algorithm
    // family as Go's Ryu-based shortest formatting); with a precision it
    // rounds half-to-even on the exact binary value, as Go does.
    let s = if prec < 0 {
        format!("{f:e}")
    } else {
        match fmt {
            'e' => format!("{f:.*e}", prec as usize),
            'f' => {
                let s = format!("{f:.*}", prec as usize);
                return f_string_digits(&s);
            }
            _ => format!("{f:.*e}", (prec.max(1) - 1) as usize),
        }
    };
    let (mant, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let mut digits: Vec<u8> = mant.bytes().filter(|b| b.is_ascii_digit()).collect();
    if prec < 0 {
        while digits.len() > 1 && digits.last() == Some(&b'0') {
            digits.pop();
        }
    }
    (digits, exp + 1)
}

fn f_string_digits(s: &str) -> (Vec<u8>, i32) {
    let (int, frac) = s.split_once('.').unwrap_or((s, ""));
    let mut digits: Vec<u8> = int.bytes().chain(frac.bytes()).collect();
    let mut dp = int.len() as i32;
    while digits.len() > 1 && digits[0] == b'0' {
        digits.remove(0);
        dp -= 1;
    }
    if digits.iter().all(|d| *d == b'0') {
        return (b"0".to_vec(), 1);
    }
    (digits, dp)
}

fn fmt_e(digits: &[u8], dp: i32, prec: i32, out: &mut String) {
    out.push(digits[0] as char);
    if prec > 0 {
        out.push('.');
        for i in 1..=prec as usize {
            out.push(*digits.get(i).unwrap_or(&b'0') as char);
        }
    }
    let exp = if digits == b"0" { 0 } else { dp - 1 };
    out.push('e');
    out.push(if exp < 0 { '-' } else { '+' });
    let e = exp.unsigned_abs();
    if e < 10 {
        out.push('0');
    }
    out.push_str(&e.to_string());
}

fn fmt_f(digits: &[u8], dp: i32, prec: i32, out: &mut String) {
    if dp > 0 {
        for i in 0..dp as usize {
            out.push(*digits.get(i).unwrap_or(&b'0') as char);
        }
    } else {
        out.push('0');
    }
    if prec > 0 {
        out.push('.');
        for i in 0..prec {
            let j = dp + i;
            let d = if j < 0 { b'0' } else { *digits.get(j as usize).unwrap_or(&b'0') };
            out.push(d as char);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(f: f64) -> String {
        let mut s = String::new();
        format_float(f, 'g', -1, &mut s);
        s
    }

    #[test]
    fn shortest_g_matches_go() {
        assert_eq!(g(1000000.0), "1e+06");
        assert_eq!(g(123456789.0), "1.23456789e+08");
        assert_eq!(g(100000.0), "100000");
        assert_eq!(g(1.1), "1.1");
        assert_eq!(g(2.5), "2.5");
        assert_eq!(g(0.0001), "0.0001");
        assert_eq!(g(0.00001), "1e-05");
        assert_eq!(g(0.0), "0");
        assert_eq!(g(-3.0), "-3");
        assert_eq!(g(1e21), "1e+21");
        assert_eq!(g(8080.0), "8080");
    }

    #[test]
    fn composites_print_like_go() {
        let m = Value::map(
            [("b".into(), Value::Float(2.0)), ("a".into(), Value::list(vec![Value::Int(1), "x".into()]))]
                .into_iter()
                .collect(),
        );
        assert_eq!(to_string_v(&m), "map[a:[1 x] b:2]");
        assert_eq!(to_string_v(&Value::list(vec![Value::Nil, Value::Float(2.5)])), "[<nil> 2.5]");
    }
}

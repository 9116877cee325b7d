//! Go's shortest float formatting: `strconv.FormatFloat(f, 'g'|'f', -1,
//! 64|32)` and encoding/json's float64 layout, for the YAML and TOML
//! writers, the values model and Sprig's `toJson`. (The engine's `fmt`
//! verbs with precision have their own general `FormatFloat`.)

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

//! Go's `time` package where several layers need it exactly: the calendar
//! rules the date functions and the TOML decoder check dates against, and
//! `time.ParseDuration` / `Duration.String` / `Duration.Round` with Go's
//! error texts (template functions, hook `@every` schedules and
//! `executionMinInterval`, the CLI's duration flags, error messages that
//! print a timeout).

/// A leap year of the proleptic Gregorian calendar.
pub fn is_leap(y: i64) -> bool {
    y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)
}

/// Days in `month` (1-12) of `year`.
pub fn days_in(month: i64, year: i64) -> i64 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// The time package's own `quote` (not strconv's): non-ASCII and control
/// bytes become `\x..` escapes.
pub fn quote(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        if c as u32 >= 0x80 || c < ' ' {
            let mut buf = [0u8; 4];
            for byte in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("\\x{byte:02x}"));
            }
        } else {
            if c == '"' || c == '\\' {
                out.push('\\');
            }
            out.push(c);
        }
    }
    out.push('"');
    out
}

/// Go's `leadingInt`: the leading `[0-9]*` (overflow past 2^63 fails).
pub fn leading_int(s: &str) -> Option<(u64, &str)> {
    let b = s.as_bytes();
    let mut x: u64 = 0;
    let mut i = 0;
    while i < b.len() && b[i].is_ascii_digit() {
        if x > (1 << 63) / 10 {
            return None;
        }
        x = x * 10 + u64::from(b[i] - b'0');
        if x > 1 << 63 {
            return None;
        }
        i += 1;
    }
    Some((x, &s[i..]))
}

/// Go's `time.ParseDuration`, with its error texts.
pub fn parse_duration(orig: &str) -> Result<i64, String> {
    let invalid = || format!("time: invalid duration {}", quote(orig));
    let mut s = orig;
    let mut d: u64 = 0;
    let mut neg = false;
    if let Some(c) = s.chars().next()
        && (c == '-' || c == '+')
    {
        neg = c == '-';
        s = &s[1..];
    }
    if s == "0" {
        return Ok(0);
    }
    if s.is_empty() {
        return Err(invalid());
    }
    while !s.is_empty() {
        let b = s.as_bytes();
        if !(b[0] == b'.' || b[0].is_ascii_digit()) {
            return Err(invalid());
        }
        let pl = s.len();
        let (mut v, rest) = leading_int(s).ok_or_else(invalid)?;
        s = rest;
        let pre = pl != s.len();
        let mut post = false;
        let (mut f, mut scale) = (0u64, 1f64);
        if let Some(rest) = s.strip_prefix('.') {
            s = rest;
            let pl = s.len();
            (f, scale, s) = leading_fraction(s);
            post = pl != s.len();
        }
        if !pre && !post {
            return Err(invalid());
        }
        let i = s
            .find(|c: char| c == '.' || c.is_ascii_digit())
            .unwrap_or(s.len());
        if i == 0 {
            return Err(format!("time: missing unit in duration {}", quote(orig)));
        }
        let u = &s[..i];
        s = &s[i..];
        let unit: u64 = match u {
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            _ => {
                return Err(format!(
                    "time: unknown unit {} in duration {}",
                    quote(u),
                    quote(orig)
                ));
            }
        };
        if v > (1u64 << 63) / unit {
            return Err(invalid());
        }
        v *= unit;
        if f > 0 {
            // float64 is needed to be nanosecond accurate for fractions of hours.
            v += (f as f64 * (unit as f64 / scale)) as u64;
            if v > 1 << 63 {
                return Err(invalid());
            }
        }
        d += v;
        if d > 1 << 63 {
            return Err(invalid());
        }
    }
    if neg {
        return Ok((d as i64).wrapping_neg());
    }
    if d > (1 << 63) - 1 {
        return Err(invalid());
    }
    Ok(d as i64)
}

/// Go's `leadingFraction`.
fn leading_fraction(s: &str) -> (u64, f64, &str) {
    let b = s.as_bytes();
    let mut i = 0;
    let mut x: u64 = 0;
    let mut scale = 1f64;
    let mut overflow = false;
    while i < b.len() && b[i].is_ascii_digit() {
        if !overflow {
            if x > ((1u64 << 63) - 1) / 10 {
                overflow = true;
            } else {
                let y = x * 10 + u64::from(b[i] - b'0');
                if y > 1 << 63 {
                    overflow = true;
                } else {
                    x = y;
                    scale *= 10.0;
                }
            }
        }
        i += 1;
    }
    (x, scale, &s[i..])
}

/// Go's `Duration.String()`: `1h2m3.5s`, `1.5ms`, `0s`.
pub fn duration_string(d: i64) -> String {
    let mut u = d.unsigned_abs();
    let neg = d < 0;
    let mut out = String::new();
    if u < 1_000_000_000 {
        let (prec, unit) = match u {
            0 => return "0s".to_string(),
            1..=999 => (0, "ns"),
            1_000..=999_999 => (3, "µs"),
            _ => (6, "ms"),
        };
        let frac;
        (frac, u) = fmt_frac(u, prec);
        out.push_str(&u.to_string());
        out.push_str(&frac);
        out.push_str(unit);
    } else {
        let frac;
        (frac, u) = fmt_frac(u, 9);
        let secs = format!("{}{frac}s", u % 60);
        u /= 60;
        if u > 0 {
            let mins = u % 60;
            u /= 60;
            if u > 0 {
                out.push_str(&format!("{u}h"));
            }
            out.push_str(&format!("{mins}m"));
        }
        out.push_str(&secs);
    }
    if neg {
        out.insert(0, '-');
    }
    out
}

/// Go's `fmtFrac`: the fraction of `v / 10^prec` without trailing zeros
/// (and without the point when it is zero), and the integer part.
fn fmt_frac(mut v: u64, prec: u32) -> (String, u64) {
    let mut digits = Vec::new();
    let mut print = false;
    for _ in 0..prec {
        let digit = v % 10;
        print = print || digit != 0;
        if print {
            digits.push(b'0' + digit as u8);
        }
        v /= 10;
    }
    if print {
        digits.push(b'.');
    }
    digits.reverse();
    (String::from_utf8_lossy(&digits).into_owned(), v)
}

/// Go's `Duration.Round(m)`.
pub fn duration_round(d: i64, m: i64) -> i64 {
    if m <= 0 {
        return d;
    }
    let less_than_half = |x: i64, y: i64| (x as u64).wrapping_add(x as u64) < y as u64;
    let mut r = d % m;
    if d < 0 {
        r = -r;
        if less_than_half(r, m) {
            return d + r;
        }
        match (d - m).checked_add(r) {
            Some(d1) if d1 < d => d1,
            _ => i64::MIN,
        }
    } else {
        if less_than_half(r, m) {
            return d - r;
        }
        match (d + r.wrapping_neg()).checked_add(m) {
            Some(d1) if d1 > d => d1,
            _ => i64::MAX,
        }
    }
}

/// `Duration.String` of a `std::time::Duration` (saturating at Go's
/// largest duration, 2562047h47m16.854775807s).
pub fn std_duration_string(d: std::time::Duration) -> String {
    duration_string(i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    const NANOS_PER_SEC: i64 = 1_000_000_000;

    #[test]
    fn durations() {
        assert_eq!(duration_string(95 * NANOS_PER_SEC), "1m35s");
        assert_eq!(duration_string(0), "0s");
        assert_eq!(duration_string(1_500_000), "1.5ms");
        assert_eq!(duration_string(1_500), "1.5µs");
        assert_eq!(duration_string(-3_723_000_000_001), "-1h2m3.000000001s");
        assert_eq!(parse_duration("1h30m").unwrap(), 5_400 * NANOS_PER_SEC);
        assert_eq!(parse_duration("-1.5h").unwrap(), -5_400 * NANOS_PER_SEC);
        assert_eq!(
            parse_duration("1x").unwrap_err(),
            "time: unknown unit \"x\" in duration \"1x\""
        );
        assert_eq!(
            parse_duration("1").unwrap_err(),
            "time: missing unit in duration \"1\""
        );
        assert_eq!(
            parse_duration("").unwrap_err(),
            "time: invalid duration \"\""
        );
        assert_eq!(duration_round(1_499_999_999, NANOS_PER_SEC), NANOS_PER_SEC);
        assert_eq!(
            duration_round(1_500_000_000, NANOS_PER_SEC),
            2 * NANOS_PER_SEC
        );
        assert_eq!(
            duration_round(-1_500_000_000, NANOS_PER_SEC),
            -2 * NANOS_PER_SEC
        );
    }

    #[test]
    fn std_durations() {
        let ms = std::time::Duration::from_millis;
        assert_eq!(std_duration_string(ms(300)), "300ms");
        assert_eq!(std_duration_string(ms(1500)), "1.5s");
        assert_eq!(std_duration_string(ms(120_000)), "2m0s");
        assert_eq!(std_duration_string(ms(3_725_000)), "1h2m5s");
    }
}

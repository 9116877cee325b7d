//! Exact decimal numbers for gojsonschema's `big.Rat` arithmetic: JSON
//! number literals compared, tested for integrality (`checkJSONInteger`)
//! and divided (`multipleOf`) without float rounding, and printed as
//! `big.Float`'s `%v` in error texts ("Must be less than or equal to 1e+06").

use std::cmp::Ordering;

/// `(-1)^neg × digits × 10^exp`; `digits` has no leading or trailing
/// zeros; zero has no digits and is never negative.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dec {
    neg: bool,
    digits: Vec<u8>,
    exp: i64,
}

impl Dec {
    /// A JSON number literal (also Rust's `{:e}` float form).
    pub fn parse(s: &str) -> Option<Dec> {
        let b = s.as_bytes();
        let mut i = 0;
        let neg = b.first() == Some(&b'-');
        if neg {
            i += 1;
        }
        let mut digits = Vec::new();
        let mut exp: i64 = 0;
        let mut seen = false;
        while let Some(&c @ b'0'..=b'9') = b.get(i) {
            digits.push(c - b'0');
            seen = true;
            i += 1;
        }
        if b.get(i) == Some(&b'.') {
            i += 1;
            while let Some(&c @ b'0'..=b'9') = b.get(i) {
                digits.push(c - b'0');
                exp -= 1;
                seen = true;
                i += 1;
            }
        }
        if !seen {
            return None;
        }
        if let Some(b'e' | b'E') = b.get(i) {
            i += 1;
            let eneg = match b.get(i) {
                Some(b'-') => {
                    i += 1;
                    true
                }
                Some(b'+') => {
                    i += 1;
                    false
                }
                _ => false,
            };
            let mut e: i64 = 0;
            let mut any = false;
            while let Some(&c @ b'0'..=b'9') = b.get(i) {
                e = e.saturating_mul(10).saturating_add(i64::from(c - b'0'));
                any = true;
                i += 1;
            }
            if !any {
                return None;
            }
            exp = exp.saturating_add(if eneg { -e } else { e });
        }
        if i != b.len() {
            return None;
        }
        let lead = digits.iter().take_while(|&&d| d == 0).count();
        digits.drain(..lead);
        while digits.last() == Some(&0) {
            digits.pop();
            exp = exp.saturating_add(1);
        }
        if digits.is_empty() {
            return Some(Dec {
                neg: false,
                digits,
                exp: 0,
            });
        }
        Some(Dec { neg, digits, exp })
    }

    pub fn is_zero(&self) -> bool {
        self.digits.is_empty()
    }

    pub fn is_neg(&self) -> bool {
        self.neg
    }

    /// `big.Rat.IsInt`.
    pub fn is_int(&self) -> bool {
        self.is_zero() || self.exp >= 0
    }

    /// `big.Rat.Cmp`.
    pub fn cmp(&self, o: &Dec) -> Ordering {
        let sign = |d: &Dec| -> i8 {
            if d.is_zero() {
                0
            } else if d.neg {
                -1
            } else {
                1
            }
        };
        let (sa, sb) = (sign(self), sign(o));
        if sa != sb || sa == 0 {
            return sa.cmp(&sb);
        }
        let mag = {
            let oa = self.digits.len() as i64 + self.exp;
            let ob = o.digits.len() as i64 + o.exp;
            oa.cmp(&ob).then_with(|| self.digits.cmp(&o.digits))
        };
        if sa < 0 { mag.reverse() } else { mag }
    }

    /// Whether `self / m` is an integer (`big.Rat.Quo(..).IsInt()`), for
    /// `m > 0`.
    pub fn is_multiple_of(&self, m: &Dec) -> bool {
        if self.is_zero() {
            return true;
        }
        if m.is_zero() {
            return false;
        }
        // self = A·10^ea, m = B·10^eb with A, B free of trailing zeros:
        // A / (B·10^k) for k > 0 is never whole.
        if self.exp < m.exp {
            return false;
        }
        let k = self.exp - m.exp;
        if m.digits.len() <= 18 {
            let b = m
                .digits
                .iter()
                .fold(0u128, |acc, &d| acc * 10 + u128::from(d));
            let r = self
                .digits
                .iter()
                .fold(0u128, |acc, &d| (acc * 10 + u128::from(d)) % b);
            // r · 10^k mod b by squaring (b < 10^18, products < 2^120).
            let (mut acc, mut base, mut e) = (r, 10u128 % b, k);
            while e > 0 && acc != 0 {
                if e & 1 == 1 {
                    acc = acc * base % b;
                }
                base = base * base % b;
                e >>= 1;
            }
            return acc == 0;
        }
        // Divisors longer than 18 digits: float arithmetic.
        let q = self.to_f64() / m.to_f64();
        q.is_finite() && q.fract() == 0.0
    }

    fn to_f64(&self) -> f64 {
        self.to_string().parse().unwrap_or(f64::NAN)
    }

    /// `fmt.Sprint` of `new(big.Float).SetRat(x)`: `%g` with the shortest
    /// digits, exponent form below 1e-4 and from 1e+06.
    pub fn go_big_float(&self) -> String {
        if self.is_zero() {
            return "0".into();
        }
        let d: String = self.digits.iter().map(|&x| char::from(b'0' + x)).collect();
        let n = d.len() as i64;
        // value = 0.d × 10^dexp
        let dexp = n + self.exp;
        let x = dexp - 1;
        let mut out = String::new();
        if self.neg {
            out.push('-');
        }
        if !(-4..6).contains(&x) {
            out.push_str(&d[..1]);
            if n > 1 {
                out.push('.');
                out.push_str(&d[1..]);
            }
            out.push('e');
            out.push(if x < 0 { '-' } else { '+' });
            out.push_str(&format!("{:02}", x.abs()));
        } else if dexp <= 0 {
            out.push_str("0.");
            out.push_str(&"0".repeat((-dexp) as usize));
            out.push_str(&d);
        } else if dexp >= n {
            out.push_str(&d);
            out.push_str(&"0".repeat((dexp - n) as usize));
        } else {
            out.push_str(&d[..dexp as usize]);
            out.push('.');
            out.push_str(&d[dexp as usize..]);
        }
        out
    }
}

impl std::fmt::Display for Dec {
    /// Scientific form, parseable by [`Dec::parse`] and `f64::from_str`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.is_zero() {
            return f.write_str("0");
        }
        if self.neg {
            f.write_str("-")?;
        }
        for d in &self.digits {
            write!(f, "{d}")?;
        }
        write!(f, "e{}", self.exp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> Dec {
        Dec::parse(s).unwrap()
    }

    #[test]
    fn exact_decimals() {
        assert!(d("1.0").is_int() && d("1e2").is_int() && !d("1.5").is_int());
        assert!(d("15e-1").cmp(&d("1.5")).is_eq());
        assert!(d("0.1").cmp(&d("0.10000000000000001")).is_lt());
        assert!(d("-2").cmp(&d("-1")).is_lt());
        assert!(d("0").cmp(&d("-0.0")).is_eq());
        assert!(d("0.3").is_multiple_of(&d("0.1")));
        assert!(d("1e300").is_multiple_of(&d("7e-5")) == (d("1e300").is_multiple_of(&d("7"))));
        assert!(!d("7").is_multiple_of(&d("2")));
        assert!(d("10").is_multiple_of(&d("2.5")));
        assert!(!d("0.25").is_multiple_of(&d("0.5")));
    }

    /// `fmt.Sprint(new(big.Float).SetRat(r))` in Go 1.23.
    #[test]
    fn big_float_text() {
        for (lit, go) in [
            ("5", "5"),
            ("1000000", "1e+06"),
            ("123456", "123456"),
            ("0.0001", "0.0001"),
            ("0.00001", "1e-05"),
            ("2.50", "2.5"),
            ("-3", "-3"),
            ("1.5e7", "1.5e+07"),
            ("0", "0"),
        ] {
            assert_eq!(d(lit).go_big_float(), go, "{lit}");
        }
    }
}

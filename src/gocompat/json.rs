//! Go's number rules at the YAML → JSON seam (sigs.k8s.io/yaml, Helm's and
//! addon-operator's way of reading YAML): every YAML number becomes a Go
//! `float64`, `encoding/json` writes one that is integral and below 1e21
//! without fraction or exponent (`1e20` as `100000000000000000000`), and
//! that text reads back as an integer wherever one fits an `int64`
//! (yaml.v2, `json.Number.Int64`).

/// The integer an integral float64 is written as and read back as, when
/// it fits an `int64`; `None` for fractions, non-finite values, and
/// integral values past `int64` (they stay floats).
pub fn integral_float(f: f64) -> Option<i64> {
    // 2^63 is exactly representable; every float below it in magnitude
    // that is integral converts without loss.
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    (f.is_finite() && f.fract() == 0.0 && (-TWO_63..TWO_63).contains(&f)).then_some(f as i64)
}

/// A float64 as a JSON number: an integer by [`integral_float`], else the
/// float; `None` for NaN and ±Inf, which JSON cannot hold.
pub fn float_number(f: f64) -> Option<serde_json::Number> {
    match integral_float(f) {
        Some(i) => Some(i.into()),
        None => serde_json::Number::from_f64(f),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integral_floats_below_int64_are_integers() {
        assert_eq!(integral_float(3.0), Some(3));
        assert_eq!(integral_float(-0.0), Some(0));
        assert_eq!(integral_float(1.5), None);
        // Past 2^53 Go still writes digits, and yaml.v2 reads an int64.
        assert_eq!(
            integral_float(9_007_199_254_740_994.0),
            Some(9_007_199_254_740_994)
        );
        assert_eq!(integral_float(-9_223_372_036_854_775_808.0), Some(i64::MIN));
        assert_eq!(integral_float(9_223_372_036_854_775_808.0), None);
        assert_eq!(integral_float(1e21), None);
        assert_eq!(integral_float(f64::NAN), None);
        assert_eq!(float_number(1e20).map(|n| n.is_f64()), Some(true));
        assert_eq!(float_number(f64::INFINITY), None);
    }
}

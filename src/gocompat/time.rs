//! Go's `time` calendar rules that the date functions and the TOML decoder
//! both check dates against.

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

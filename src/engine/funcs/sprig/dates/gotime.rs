//! A port of the parts of Go's `time` package that templates reach: the
//! `time.Time` value (an instant, a location and an optional monotonic
//! reading), `Time.Format` / `time.ParseInLocation` with Go's layout language
//! (reference time `Mon Jan 2 15:04:05 MST 2006`), and `time.Duration` with
//! `ParseDuration`, `String` and `Round`.
//!
//! Hand-written because no Rust crate speaks Go's layout language, and the
//! output of `date`, `now` and `duration` must match Go byte for byte. The
//! calendar arithmetic is done on plain day numbers (proleptic Gregorian, as
//! Go does) so every year Go can represent works; chrono-tz supplies the
//! IANA zone rules and abbreviations.

use std::rc::Rc;
use std::sync::OnceLock;

use chrono::{Offset, TimeZone};
use chrono_tz::{OffsetName, Tz};

pub const NANOS_PER_SEC: i64 = 1_000_000_000;
const SECS_PER_DAY: i64 = 86_400;

/// A Go `*time.Location`.
#[derive(Clone, Debug, PartialEq)]
pub enum Location {
    /// `time.UTC` (also what the zero `Time` carries).
    Utc,
    /// `time.Local`: the zone named by `$TZ`, or `/etc/localtime`, as Go
    /// resolves it at start-up.
    Local,
    /// `time.FixedZone(name, offset)`: what `Parse` fabricates for a numeric
    /// offset or an unknown abbreviation.
    Fixed { name: Rc<str>, offset: i32 },
    /// A zone loaded with `time.LoadLocation`.
    Zone(Tz),
}

/// The zone Go's `time.Local` stands for; `None` is UTC.
///
/// Go's `initLocal`: `$TZ` unset → `/etc/localtime`; `$TZ` empty → UTC; a
/// name that can't be loaded → UTC. A `/etc/localtime` that is not a symlink
/// into a zoneinfo tree can't be named here and is taken as UTC.
fn local_tz() -> Option<Tz> {
    static LOCAL: OnceLock<Option<Tz>> = OnceLock::new();
    *LOCAL.get_or_init(|| match std::env::var("TZ") {
        Ok(tz) => {
            let name = tz.strip_prefix(':').unwrap_or(&tz);
            let name = name.rsplit_once("zoneinfo/").map_or(name, |(_, n)| n);
            name.parse::<Tz>().ok()
        }
        Err(_) => {
            let target = std::fs::read_link("/etc/localtime").ok()?;
            let target = target.to_string_lossy();
            let (_, name) = target.rsplit_once("zoneinfo/")?;
            name.parse::<Tz>().ok()
        }
    })
}

/// Go's `time.LoadLocation`: "" and "UTC" are UTC, "Local" is Local, other
/// names come from the IANA database.
pub fn load_location(name: &str) -> Option<Location> {
    match name {
        "" | "UTC" => Some(Location::Utc),
        "Local" => Some(Location::Local),
        _ => name.parse::<Tz>().ok().map(Location::Zone),
    }
}

fn tz_zone_at(tz: Tz, unix: i64) -> (String, i32) {
    match chrono::DateTime::from_timestamp(unix, 0) {
        Some(utc) => {
            let off = tz.offset_from_utc_datetime(&utc.naive_utc());
            let name = off.abbreviation().unwrap_or("").to_string();
            (name, off.fix().local_minus_utc())
        }
        None => ("UTC".to_string(), 0),
    }
}

impl Location {
    /// Go's `Location.lookup`: the zone abbreviation and offset (seconds
    /// east of UTC) in effect at the instant `unix`.
    pub fn zone_at(&self, unix: i64) -> (String, i32) {
        match self {
            Location::Utc => ("UTC".to_string(), 0),
            Location::Local => match local_tz() {
                Some(tz) => tz_zone_at(tz, unix),
                None => ("UTC".to_string(), 0),
            },
            Location::Fixed { name, offset } => (name.to_string(), *offset),
            Location::Zone(tz) => tz_zone_at(*tz, unix),
        }
    }

    /// Go's `Location.lookupName`: the offset of a zone with this
    /// abbreviation, preferring the one in effect around `unix`.
    fn lookup_name(&self, name: &str, unix: i64) -> Option<i32> {
        // Go scans the location's zone table; chrono-tz does not expose it, so
        // probe the instants around `unix` a year either way, which finds the
        // standard and daylight zones of any current rule.
        for k in 0..=26i64 {
            for sign in [1, -1] {
                let probe = unix + sign * k * 14 * SECS_PER_DAY;
                let (n, off) = self.zone_at(probe - i64::from(self.zone_at(probe).1));
                if n == name {
                    return Some(off);
                }
            }
        }
        None
    }

    /// Go's `Location.String`.
    pub fn name(&self) -> String {
        match self {
            Location::Utc => "UTC".into(),
            Location::Local => "Local".into(),
            Location::Fixed { name, .. } => name.to_string(),
            Location::Zone(tz) => tz.name().to_string(),
        }
    }
}

/// Go's `time.Time`.
#[derive(Clone, Debug, PartialEq)]
pub struct GoTime {
    /// Seconds since the Unix epoch.
    pub secs: i64,
    /// Nanoseconds within the second, `0..1e9`.
    pub nsec: u32,
    pub loc: Location,
    /// Monotonic clock reading in nanoseconds, only on values derived from
    /// `time.Now()` (printed by `String` as ` m=+…`).
    pub mono: Option<i64>,
}

/// Unix seconds of the zero `time.Time` (January 1, year 1, 00:00:00 UTC).
const ZERO_TIME_SECS: i64 = -62_135_596_800;

impl GoTime {
    /// `time.Time{}`.
    pub fn zero() -> Self {
        GoTime {
            secs: ZERO_TIME_SECS,
            nsec: 0,
            loc: Location::Utc,
            mono: None,
        }
    }

    /// `time.Unix(sec, 0)` (always in Local).
    pub fn unix(secs: i64) -> Self {
        GoTime {
            secs,
            nsec: 0,
            loc: Location::Local,
            mono: None,
        }
    }

    pub fn from_chrono(t: chrono::DateTime<chrono::FixedOffset>) -> Self {
        GoTime {
            secs: t.timestamp(),
            nsec: t.timestamp_subsec_nanos().min(999_999_999),
            loc: Location::Local,
            mono: None,
        }
    }

    pub fn is_zero(&self) -> bool {
        self.secs == ZERO_TIME_SECS && self.nsec == 0
    }

    /// `t.In(loc)`; like `UTC` and `Local` it drops the monotonic reading.
    pub fn in_loc(&self, loc: Location) -> Self {
        GoTime {
            secs: self.secs,
            nsec: self.nsec,
            loc,
            mono: None,
        }
    }

    /// `t.Add(d)`, saturating as Go's does not (Go wraps on overflow only
    /// far outside any date a chart uses).
    pub fn add(&self, d: i64) -> Self {
        let total = i128::from(self.nsec) + i128::from(d % NANOS_PER_SEC);
        let mut secs = self.secs.saturating_add(d / NANOS_PER_SEC);
        let mut nsec = total;
        if nsec >= i128::from(NANOS_PER_SEC) {
            secs = secs.saturating_add(1);
            nsec -= i128::from(NANOS_PER_SEC);
        } else if nsec < 0 {
            secs = secs.saturating_sub(1);
            nsec += i128::from(NANOS_PER_SEC);
        }
        GoTime {
            secs,
            nsec: nsec as u32,
            loc: self.loc.clone(),
            mono: self.mono.map(|m| m.saturating_add(d)),
        }
    }

    /// `t.Sub(u)`: the duration, saturated to the `Duration` range.
    pub fn sub(&self, u: &GoTime) -> i64 {
        if let (Some(a), Some(b)) = (self.mono, u.mono) {
            return a.saturating_sub(b);
        }
        let ns = (i128::from(self.secs) - i128::from(u.secs)) * i128::from(NANOS_PER_SEC)
            + i128::from(self.nsec)
            - i128::from(u.nsec);
        ns.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
    }

    /// `t.UnixNano()` (wrapping like Go's for far dates).
    pub fn unix_nano(&self) -> i64 {
        self.secs
            .wrapping_mul(NANOS_PER_SEC)
            .wrapping_add(i64::from(self.nsec))
    }

    /// Zone abbreviation, offset, and seconds since the epoch in local
    /// wall-clock terms.
    fn local(&self) -> (String, i32, i64) {
        let (name, offset) = self.loc.zone_at(self.secs);
        (name, offset, self.secs.wrapping_add(i64::from(offset)))
    }

    /// The civil fields in the time's own location.
    pub fn civil(&self) -> Civil {
        let (_, _, local) = self.local();
        Civil::from_local_secs(local)
    }

    /// `time.Date(year, month, day, hour, min, sec, nsec, loc)`, which
    /// normalizes out-of-range fields (month 13 is January of the next year).
    #[allow(clippy::too_many_arguments)]
    pub fn date(
        year: i64,
        month: i64,
        day: i64,
        hour: i64,
        min: i64,
        sec: i64,
        nsec: i64,
        loc: Location,
    ) -> Self {
        // Wrapping arithmetic: absurd field values (from `AddDate`) give a
        // meaningless time, as in Go, rather than a panic.
        let m0 = month.wrapping_sub(1);
        let year = year.wrapping_add(m0.div_euclid(12));
        let month = m0.rem_euclid(12) + 1;
        let sec = sec.wrapping_add(nsec.div_euclid(NANOS_PER_SEC));
        let nsec = nsec.rem_euclid(NANOS_PER_SEC);
        let days = days_from_civil(year, month, 1)
            .wrapping_add(day)
            .wrapping_sub(1);
        let local = days
            .wrapping_mul(SECS_PER_DAY)
            .wrapping_add(hour.wrapping_mul(3600))
            .wrapping_add(min.wrapping_mul(60))
            .wrapping_add(sec);
        // Go's Date: look up the offset treating the wall time as UTC, and
        // if the corrected instant falls in another zone period, use that
        // period's offset instead.
        let (_, off1) = loc.zone_at(local);
        let mut unix = local.wrapping_sub(i64::from(off1));
        if off1 != 0 {
            let (_, off2) = loc.zone_at(unix);
            if off2 != off1 {
                unix = local.wrapping_sub(i64::from(off2));
            }
        }
        GoTime {
            secs: unix,
            nsec: nsec as u32,
            loc,
            mono: None,
        }
    }

    /// The remainder of the time since the zero time modulo `d` (Go's
    /// `div`, for `d > 0`).
    fn rem_since_zero(&self, d: i64) -> i64 {
        let since = (i128::from(self.secs) - i128::from(ZERO_TIME_SECS))
            * i128::from(NANOS_PER_SEC)
            + i128::from(self.nsec);
        since.rem_euclid(i128::from(d)) as i64
    }

    /// `t.Truncate(d)`: rounded down to a multiple of `d` since the zero
    /// time; drops the monotonic reading.
    pub fn truncate(&self, d: i64) -> Self {
        let mut t = GoTime {
            mono: None,
            ..self.clone()
        };
        if d > 0 {
            t = t.add(-self.rem_since_zero(d));
        }
        t
    }

    /// `t.Round(d)`: halfway values round up.
    pub fn round(&self, d: i64) -> Self {
        let t = GoTime {
            mono: None,
            ..self.clone()
        };
        if d <= 0 {
            return t;
        }
        let r = self.rem_since_zero(d);
        if (r as u64).wrapping_add(r as u64) < d as u64 {
            t.add(-r)
        } else {
            t.add(d - r)
        }
    }

    /// `t.AddDate(years, months, days)`.
    pub fn add_date(&self, years: i64, months: i64, days: i64) -> Self {
        let c = self.civil();
        GoTime::date(
            c.year.wrapping_add(years),
            c.month.wrapping_add(months),
            c.day.wrapping_add(days),
            c.hour,
            c.min,
            c.sec,
            i64::from(self.nsec),
            self.loc.clone(),
        )
    }

    /// `t.Format(layout)`.
    pub fn format(&self, layout: &str) -> String {
        let (name, offset, local) = self.local();
        let c = Civil::from_local_secs(local);
        let mut b = String::with_capacity(layout.len() + 10);
        let mut rest = layout;
        while !rest.is_empty() {
            let (prefix, std, suffix) = next_std_chunk(rest);
            b.push_str(prefix);
            let Some(std) = std else { break };
            rest = suffix;
            match std {
                Std::Year => append_int(&mut b, c.year.abs() % 100, 2),
                Std::LongYear => append_int(&mut b, c.year, 4),
                Std::Month => b.push_str(&LONG_MONTH_NAMES[(c.month - 1) as usize][..3]),
                Std::LongMonth => b.push_str(LONG_MONTH_NAMES[(c.month - 1) as usize]),
                Std::NumMonth => append_int(&mut b, c.month, 0),
                Std::ZeroMonth => append_int(&mut b, c.month, 2),
                Std::WeekDay => b.push_str(&LONG_DAY_NAMES[c.weekday as usize][..3]),
                Std::LongWeekDay => b.push_str(LONG_DAY_NAMES[c.weekday as usize]),
                Std::Day => append_int(&mut b, c.day, 0),
                Std::UnderDay => {
                    if c.day < 10 {
                        b.push(' ');
                    }
                    append_int(&mut b, c.day, 0);
                }
                Std::ZeroDay => append_int(&mut b, c.day, 2),
                Std::UnderYearDay => {
                    if c.yday < 100 {
                        b.push(' ');
                        if c.yday < 10 {
                            b.push(' ');
                        }
                    }
                    append_int(&mut b, c.yday, 0);
                }
                Std::ZeroYearDay => append_int(&mut b, c.yday, 3),
                Std::Hour => append_int(&mut b, c.hour, 2),
                Std::Hour12 | Std::ZeroHour12 => {
                    // Noon is 12PM, midnight is 12AM.
                    let hr = if c.hour % 12 == 0 { 12 } else { c.hour % 12 };
                    append_int(&mut b, hr, if std == Std::Hour12 { 0 } else { 2 });
                }
                Std::Minute => append_int(&mut b, c.min, 0),
                Std::ZeroMinute => append_int(&mut b, c.min, 2),
                Std::Second => append_int(&mut b, c.sec, 0),
                Std::ZeroSecond => append_int(&mut b, c.sec, 2),
                Std::PM => b.push_str(if c.hour >= 12 { "PM" } else { "AM" }),
                Std::Pm => b.push_str(if c.hour >= 12 { "pm" } else { "am" }),
                Std::Tz(tz) => format_offset(&mut b, tz, offset),
                Std::ZoneName => {
                    if !name.is_empty() {
                        b.push_str(&name);
                    } else {
                        // No zone name known: Go prints the -0700 form.
                        let zone = offset / 60;
                        b.push(if zone < 0 { '-' } else { '+' });
                        append_int(&mut b, i64::from(zone.abs() / 60), 2);
                        append_int(&mut b, i64::from(zone.abs() % 60), 2);
                    }
                }
                Std::Frac { digits, nines, sep } => {
                    append_nano(&mut b, i64::from(self.nsec), digits, nines, sep)
                }
            }
        }
        b
    }

    /// Go's `Time.MarshalJSON`/`MarshalText` form (RFC 3339 with
    /// nanoseconds, trailing zeros dropped), what `toJson` and `toYaml` write.
    pub fn rfc3339_nano(&self) -> String {
        self.format("2006-01-02T15:04:05.999999999Z07:00")
    }

    /// Go's `Time.String()`: the `2006-01-02 15:04:05.999999999 -0700 MST`
    /// layout plus ` m=±s.nnnnnnnnn` when a monotonic reading is present.
    pub fn go_string(&self) -> String {
        let mut s = self.format("2006-01-02 15:04:05.999999999 -0700 MST");
        if let Some(m) = self.mono {
            s.push_str(" m=");
            s.push(if m < 0 { '-' } else { '+' });
            let u = m.unsigned_abs();
            let (m1, m2) = (u / 1_000_000_000, u % 1_000_000_000);
            let (m0, m1) = (m1 / 1_000_000_000, m1 % 1_000_000_000);
            let mut wid = 0;
            if m0 != 0 {
                append_int(&mut s, m0 as i64, 0);
                wid = 9;
            }
            append_int(&mut s, m1 as i64, wid);
            s.push('.');
            append_int(&mut s, m2 as i64, 9);
        }
        s
    }
}

/// Broken-down wall-clock fields.
#[derive(Clone, Copy, Debug)]
pub struct Civil {
    pub year: i64,
    /// 1..=12
    pub month: i64,
    pub day: i64,
    /// 1..=366
    pub yday: i64,
    /// 0 = Sunday
    pub weekday: i64,
    pub hour: i64,
    pub min: i64,
    pub sec: i64,
}

impl Civil {
    fn from_local_secs(local: i64) -> Civil {
        let days = local.div_euclid(SECS_PER_DAY);
        let sod = local.rem_euclid(SECS_PER_DAY);
        let (year, month, day) = civil_from_days(days);
        Civil {
            year,
            month,
            day,
            yday: days - days_from_civil(year, 1, 1) + 1,
            // 1970-01-01 was a Thursday.
            weekday: (days + 4).rem_euclid(7),
            hour: sod / 3600,
            min: sod % 3600 / 60,
            sec: sod % 60,
        }
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's
/// algorithm); `day` may run past the month's end.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y.wrapping_sub(1) } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era.wrapping_mul(146_097)
        .wrapping_add(doe - 719_468)
        .wrapping_add(d.wrapping_sub(1))
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z.wrapping_add(719_468);
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (
        yoe.wrapping_add(era.wrapping_mul(400))
            .wrapping_add(i64::from(m <= 2)),
        m,
        d,
    )
}

use crate::gocompat::time::{days_in, is_leap, leading_int, quote};

pub const LONG_DAY_NAMES: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];
pub const LONG_MONTH_NAMES: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// Numeric zone layouts (`-0700`, `Z07:00`, …).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct TzStyle {
    /// `Z…` form: prints `Z` for UTC and accepts it when parsing.
    iso: bool,
    colon: bool,
    /// `-07` only.
    short: bool,
    /// `-070000`, `-07:00:00`.
    seconds: bool,
}

/// One element of a layout (Go's `std*` constants).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Std {
    LongMonth,
    Month,
    NumMonth,
    ZeroMonth,
    LongWeekDay,
    WeekDay,
    Day,
    UnderDay,
    ZeroDay,
    UnderYearDay,
    ZeroYearDay,
    Hour,
    Hour12,
    ZeroHour12,
    Minute,
    ZeroMinute,
    Second,
    ZeroSecond,
    LongYear,
    Year,
    PM,
    Pm,
    /// `MST`
    ZoneName,
    Tz(TzStyle),
    /// `.000` (`nines` false) or `.999`; `sep` is `.` or `,`.
    Frac {
        digits: usize,
        nines: bool,
        sep: char,
    },
}

fn starts_with_lower(s: &str) -> bool {
    s.as_bytes().first().is_some_and(u8::is_ascii_lowercase)
}

fn is_digit(s: &[u8], i: usize) -> bool {
    s.get(i).is_some_and(u8::is_ascii_digit)
}

const TZ_LAYOUTS: [(&str, TzStyle); 10] = {
    const fn st(iso: bool, colon: bool, short: bool, seconds: bool) -> TzStyle {
        TzStyle {
            iso,
            colon,
            short,
            seconds,
        }
    }
    [
        ("-070000", st(false, false, false, true)),
        ("-07:00:00", st(false, true, false, true)),
        ("-0700", st(false, false, false, false)),
        ("-07:00", st(false, true, false, false)),
        ("-07", st(false, false, true, false)),
        ("Z070000", st(true, false, false, true)),
        ("Z07:00:00", st(true, true, false, true)),
        ("Z0700", st(true, false, false, false)),
        ("Z07:00", st(true, true, false, false)),
        ("Z07", st(true, false, true, false)),
    ]
};

/// Go's `nextStdChunk`: the text before the first layout element, the
/// element, and the text after it.
fn next_std_chunk(layout: &str) -> (&str, Option<Std>, &str) {
    let l = layout.as_bytes();
    let at = |i: usize, n: usize, std: Std| (&layout[..i], Some(std), &layout[i + n..]);
    for i in 0..l.len() {
        // Every element starts with an ASCII byte, which is also where a
        // slice of the text may start (not inside a multi-byte character).
        if !l[i].is_ascii() {
            continue;
        }
        let rest = &layout[i..];
        match l[i] {
            b'J' => {
                if rest.starts_with("January") {
                    return at(i, 7, Std::LongMonth);
                }
                if rest.starts_with("Jan") && !starts_with_lower(&rest[3..]) {
                    return at(i, 3, Std::Month);
                }
            }
            b'M' => {
                if rest.starts_with("Monday") {
                    return at(i, 6, Std::LongWeekDay);
                }
                if rest.starts_with("Mon") && !starts_with_lower(&rest[3..]) {
                    return at(i, 3, Std::WeekDay);
                }
                if rest.starts_with("MST") {
                    return at(i, 3, Std::ZoneName);
                }
            }
            b'0' => {
                if let Some(&c) = l.get(i + 1)
                    && (b'1'..=b'6').contains(&c)
                {
                    let std = [
                        Std::ZeroMonth,
                        Std::ZeroDay,
                        Std::ZeroHour12,
                        Std::ZeroMinute,
                        Std::ZeroSecond,
                        Std::Year,
                    ][usize::from(c - b'1')];
                    return at(i, 2, std);
                }
                if rest.starts_with("002") {
                    return at(i, 3, Std::ZeroYearDay);
                }
            }
            b'1' => {
                if l.get(i + 1) == Some(&b'5') {
                    return at(i, 2, Std::Hour);
                }
                return at(i, 1, Std::NumMonth);
            }
            b'2' => {
                if rest.starts_with("2006") {
                    return at(i, 4, Std::LongYear);
                }
                return at(i, 1, Std::Day);
            }
            b'_' => {
                if l.get(i + 1) == Some(&b'2') {
                    // _2006 is really a literal _, followed by the long year.
                    if rest[1..].starts_with("2006") {
                        return (&layout[..i + 1], Some(Std::LongYear), &layout[i + 5..]);
                    }
                    return at(i, 2, Std::UnderDay);
                }
                if rest.starts_with("__2") {
                    return at(i, 3, Std::UnderYearDay);
                }
            }
            b'3' => return at(i, 1, Std::Hour12),
            b'4' => return at(i, 1, Std::Minute),
            b'5' => return at(i, 1, Std::Second),
            b'P' if l.get(i + 1) == Some(&b'M') => return at(i, 2, Std::PM),
            b'p' if l.get(i + 1) == Some(&b'm') => return at(i, 2, Std::Pm),
            b'-' | b'Z' => {
                for (pat, style) in TZ_LAYOUTS {
                    if rest.starts_with(pat) {
                        return at(i, pat.len(), Std::Tz(style));
                    }
                }
            }
            c @ (b'.' | b',') => {
                if let Some(&ch) = l.get(i + 1)
                    && (ch == b'0' || ch == b'9')
                {
                    let mut j = i + 1;
                    while j < l.len() && l[j] == ch {
                        j += 1;
                    }
                    // The run of digits must end here: only a fractional
                    // second is all digits.
                    if !is_digit(l, j) {
                        let std = Std::Frac {
                            digits: j - (i + 1),
                            nines: ch == b'9',
                            sep: c as char,
                        };
                        return (&layout[..i], Some(std), &layout[j..]);
                    }
                }
            }
            _ => {}
        }
    }
    (layout, None, "")
}

/// Go's `appendInt`: decimal with zero padding to `width` (sign excluded).
fn append_int(b: &mut String, x: i64, width: usize) {
    if x < 0 {
        b.push('-');
    }
    let digits = x.unsigned_abs().to_string();
    for _ in digits.len()..width {
        b.push('0');
    }
    b.push_str(&digits);
}

fn format_offset(b: &mut String, st: TzStyle, offset: i32) {
    if offset == 0 && st.iso {
        b.push('Z');
        return;
    }
    let zone = offset / 60;
    b.push(if zone < 0 { '-' } else { '+' });
    let (zone, absoffset) = (i64::from(zone.abs()), i64::from(offset.abs()));
    append_int(b, zone / 60, 2);
    if st.colon {
        b.push(':');
    }
    if !st.short {
        append_int(b, zone % 60, 2);
    }
    if st.seconds {
        if st.colon {
            b.push(':');
        }
        append_int(b, absoffset % 60, 2);
    }
}

/// Go's `appendNano`.
fn append_nano(b: &mut String, nanosec: i64, n: usize, trim: bool, dot: char) {
    if trim && (n == 0 || nanosec == 0) {
        return;
    }
    let mut frac = String::with_capacity(10);
    frac.push(dot);
    append_int(&mut frac, nanosec, 9);
    if n < 9 {
        frac.truncate(1 + n);
    }
    if trim {
        while frac.ends_with('0') {
            frac.pop();
        }
        if frac.len() == 1 {
            frac.pop();
        }
    }
    b.push_str(&frac);
}

/// Go's `time.ParseError` rendering.
fn parse_error(layout: &str, value: &str, elem: &str, value_elem: &str, message: &str) -> String {
    if message.is_empty() {
        format!(
            "parsing time {} as {}: cannot parse {} as {}",
            quote(value),
            quote(layout),
            quote(value_elem),
            quote(elem)
        )
    } else {
        format!("parsing time {}{message}", quote(value))
    }
}

/// Go's `getnum`: one or two digits (`fixed` demands two).
fn getnum(s: &str, fixed: bool) -> Option<(i64, &str)> {
    let b = s.as_bytes();
    if !is_digit(b, 0) {
        return None;
    }
    if !is_digit(b, 1) {
        if fixed {
            return None;
        }
        return Some((i64::from(b[0] - b'0'), &s[1..]));
    }
    Some((
        i64::from(b[0] - b'0') * 10 + i64::from(b[1] - b'0'),
        &s[2..],
    ))
}

fn getnum3(s: &str, fixed: bool) -> Option<(i64, &str)> {
    let b = s.as_bytes();
    let mut n = 0;
    let mut i = 0;
    while i < 3 && is_digit(b, i) {
        n = n * 10 + i64::from(b[i] - b'0');
        i += 1;
    }
    if i == 0 || (fixed && i != 3) {
        return None;
    }
    Some((n, &s[i..]))
}

/// Go's `skip`: remove `prefix` from `value`, runs of spaces matching runs
/// of spaces.
fn skip<'a>(mut value: &'a str, mut prefix: &str) -> Result<&'a str, &'a str> {
    while !prefix.is_empty() {
        if prefix.starts_with(' ') {
            if !value.is_empty() && !value.starts_with(' ') {
                return Err(value);
            }
            prefix = prefix.trim_start_matches(' ');
            value = value.trim_start_matches(' ');
            continue;
        }
        if value.is_empty() || value.as_bytes()[0] != prefix.as_bytes()[0] {
            return Err(value);
        }
        // Both start with the same byte; advance by one char of the prefix.
        let n = prefix.chars().next().map_or(1, char::len_utf8);
        if !value.is_char_boundary(n) || value.len() < n || value[..n] != prefix[..n] {
            return Err(value);
        }
        prefix = &prefix[n..];
        value = &value[n..];
    }
    Ok(value)
}

/// Go's `atoi` on a short digit string (optional sign).
fn atoi(s: &str) -> Option<i64> {
    let (neg, digits) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let (x, rem) = leading_int(digits)?;
    if !rem.is_empty() {
        return None;
    }
    let x = i64::try_from(x).ok()?;
    Some(if neg { -x } else { x })
}

/// Go's `parseNanoseconds`: `value` starts with the separator.
fn parse_nanoseconds(value: &str, nbytes: usize) -> Result<i64, Option<&'static str>> {
    if !value.starts_with(['.', ',']) {
        return Err(None);
    }
    let nbytes = nbytes.min(10);
    let ns = atoi(value.get(1..nbytes).ok_or(None)?).ok_or(None)?;
    if ns < 0 {
        return Err(Some("fractional second"));
    }
    Ok(ns * 10i64.pow((10 - nbytes) as u32))
}

/// Go's `parseTimeZone`: the length of a zone abbreviation at the start.
fn parse_time_zone(value: &str) -> Option<usize> {
    let b = value.as_bytes();
    if b.len() < 3 {
        return None;
    }
    if value.starts_with("ChST") || value.starts_with("MeST") {
        return Some(4);
    }
    if let Some(rest) = value.strip_prefix("GMT") {
        return Some(3 + parse_signed_offset(rest));
    }
    if b[0] == b'+' || b[0] == b'-' {
        let n = parse_signed_offset(value);
        return (n > 0).then_some(n);
    }
    let n_upper = b
        .iter()
        .take(6)
        .take_while(|c| c.is_ascii_uppercase())
        .count();
    match n_upper {
        5 if b[4] == b'T' => Some(5),
        4 if b[3] == b'T' || value.starts_with("WITA") => Some(4),
        3 => Some(3),
        _ => None,
    }
}

/// Go's `parseSignedOffset`: `+03`/`-4` with an hour up to 23.
fn parse_signed_offset(value: &str) -> usize {
    let Some(sign) = value.as_bytes().first() else {
        return 0;
    };
    if *sign != b'-' && *sign != b'+' {
        return 0;
    }
    match leading_int(&value[1..]) {
        Some((x, rem)) if rem.len() != value.len() - 1 && x <= 23 => value.len() - rem.len(),
        _ => 0,
    }
}

/// Go's `time.ParseInLocation(layout, value, loc)`.
pub fn parse_in_location(layout: &str, value: &str, loc: Location) -> Result<GoTime, String> {
    let (alayout, avalue) = (layout, value);
    let mut layout = layout;
    let mut value = value;
    let mut range_err: Option<&str> = None;
    let (mut am_set, mut pm_set) = (false, false);
    let (mut year, mut month, mut day, mut yday) = (0i64, -1i64, -1i64, -1i64);
    let (mut hour, mut min, mut sec, mut nsec) = (0i64, 0i64, 0i64, 0i64);
    let mut z: Option<Location> = None;
    let mut zone_offset: Option<i64> = None;
    let mut zone_name = String::new();

    loop {
        let (prefix, std, suffix) = next_std_chunk(layout);
        let stdstr = &layout[prefix.len()..layout.len() - suffix.len()];
        value = skip(value, prefix).map_err(|v| parse_error(alayout, avalue, prefix, v, ""))?;
        let Some(std) = std else {
            if !value.is_empty() {
                return Err(parse_error(
                    alayout,
                    avalue,
                    "",
                    value,
                    &format!(": extra text: {}", quote(value)),
                ));
            }
            break;
        };
        layout = suffix;
        let hold = value;
        // `None` = Go's errBad.
        let ok: Option<()> = (|| {
            match std {
                Std::Year => {
                    let p = value.get(..2)?;
                    value = &value[2..];
                    year = atoi(p)?;
                    year += if year >= 69 { 1900 } else { 2000 };
                }
                Std::LongYear => {
                    if value.len() < 4 || !is_digit(value.as_bytes(), 0) {
                        return None;
                    }
                    let p = value.get(..4)?;
                    value = &value[4..];
                    year = atoi(p)?;
                }
                Std::Month | Std::LongMonth => {
                    let (m, rest) = lookup_name(&LONG_MONTH_NAMES, value, std == Std::Month)?;
                    month = m + 1;
                    value = rest;
                }
                Std::NumMonth | Std::ZeroMonth => {
                    let (m, rest) = getnum(value, std == Std::ZeroMonth)?;
                    month = m;
                    value = rest;
                    if month <= 0 || 12 < month {
                        range_err = Some("month");
                    }
                }
                Std::WeekDay | Std::LongWeekDay => {
                    let (_, rest) = lookup_name(&LONG_DAY_NAMES, value, std == Std::WeekDay)?;
                    value = rest;
                }
                Std::Day | Std::UnderDay | Std::ZeroDay => {
                    if std == Std::UnderDay && value.starts_with(' ') {
                        value = &value[1..];
                    }
                    let (d, rest) = getnum(value, std == Std::ZeroDay)?;
                    day = d;
                    value = rest;
                }
                Std::UnderYearDay | Std::ZeroYearDay => {
                    for _ in 0..2 {
                        if std == Std::UnderYearDay && value.starts_with(' ') {
                            value = &value[1..];
                        }
                    }
                    let (d, rest) = getnum3(value, std == Std::ZeroYearDay)?;
                    yday = d;
                    value = rest;
                }
                Std::Hour => {
                    let (h, rest) = getnum(value, false)?;
                    hour = h;
                    value = rest;
                    if !(0..24).contains(&hour) {
                        range_err = Some("hour");
                    }
                }
                Std::Hour12 | Std::ZeroHour12 => {
                    let (h, rest) = getnum(value, std == Std::ZeroHour12)?;
                    hour = h;
                    value = rest;
                    if !(0..=12).contains(&hour) {
                        range_err = Some("hour");
                    }
                }
                Std::Minute | Std::ZeroMinute => {
                    let (m, rest) = getnum(value, std == Std::ZeroMinute)?;
                    min = m;
                    value = rest;
                    if !(0..60).contains(&min) {
                        range_err = Some("minute");
                    }
                }
                Std::Second | Std::ZeroSecond => {
                    let (s, rest) = getnum(value, std == Std::ZeroSecond)?;
                    sec = s;
                    value = rest;
                    if !(0..60).contains(&sec) {
                        range_err = Some("second");
                        return Some(());
                    }
                    // A fractional second in the value but not in the layout.
                    let vb = value.as_bytes();
                    if vb.len() >= 2 && (vb[0] == b'.' || vb[0] == b',') && is_digit(vb, 1) {
                        if let (_, Some(Std::Frac { .. }), _) = next_std_chunk(layout) {
                            return Some(());
                        }
                        let mut n = 2;
                        while is_digit(vb, n) {
                            n += 1;
                        }
                        match parse_nanoseconds(value, n) {
                            Ok(ns) => nsec = ns,
                            Err(Some(e)) => range_err = Some(e),
                            Err(None) => return None,
                        }
                        value = &value[n..];
                    }
                }
                Std::PM | Std::Pm => {
                    let p = value.get(..2)?;
                    value = &value[2..];
                    let (pm, am) = if std == Std::PM {
                        ("PM", "AM")
                    } else {
                        ("pm", "am")
                    };
                    if p == pm {
                        pm_set = true;
                    } else if p == am {
                        am_set = true;
                    } else {
                        return None;
                    }
                }
                Std::Tz(st) => {
                    if st.iso && value.starts_with('Z') {
                        value = &value[1..];
                        z = Some(Location::Utc);
                        return Some(());
                    }
                    let vb = value.as_bytes();
                    let (sign, hh, mm, ss, n) = if st.colon && !st.seconds {
                        if vb.len() < 6 || vb[3] != b':' {
                            return None;
                        }
                        (value.get(..1)?, value.get(1..3)?, value.get(4..6)?, "00", 6)
                    } else if st.short {
                        if vb.len() < 3 {
                            return None;
                        }
                        (value.get(..1)?, value.get(1..3)?, "00", "00", 3)
                    } else if st.colon && st.seconds {
                        if vb.len() < 9 || vb[3] != b':' || vb[6] != b':' {
                            return None;
                        }
                        (
                            value.get(..1)?,
                            value.get(1..3)?,
                            value.get(4..6)?,
                            value.get(7..9)?,
                            9,
                        )
                    } else if st.seconds {
                        if vb.len() < 7 {
                            return None;
                        }
                        (
                            value.get(..1)?,
                            value.get(1..3)?,
                            value.get(3..5)?,
                            value.get(5..7)?,
                            7,
                        )
                    } else {
                        if vb.len() < 5 {
                            return None;
                        }
                        (value.get(..1)?, value.get(1..3)?, value.get(3..5)?, "00", 5)
                    };
                    value = value.get(n..)?;
                    let hr = getnum(hh, true)?.0;
                    let mm = getnum(mm, true)?.0;
                    let ss = getnum(ss, true)?.0;
                    if hr > 24 {
                        range_err = Some("time zone offset hour");
                    }
                    if mm > 60 {
                        range_err = Some("time zone offset minute");
                    }
                    if ss > 60 {
                        range_err = Some("time zone offset second");
                    }
                    let off = (hr * 60 + mm) * 60 + ss;
                    zone_offset = Some(match sign {
                        "+" => off,
                        "-" => -off,
                        _ => return None,
                    });
                }
                Std::ZoneName => {
                    if value.starts_with("UTC") {
                        z = Some(Location::Utc);
                        value = &value[3..];
                        return Some(());
                    }
                    let n = parse_time_zone(value)?;
                    zone_name = value.get(..n)?.to_string();
                    value = &value[n..];
                }
                Std::Frac {
                    digits,
                    nines: false,
                    ..
                } => {
                    let ndigit = 1 + digits;
                    if value.len() < ndigit {
                        return None;
                    }
                    match parse_nanoseconds(value, ndigit) {
                        Ok(ns) => nsec = ns,
                        Err(Some(e)) => range_err = Some(e),
                        Err(None) => return None,
                    }
                    value = value.get(ndigit..)?;
                }
                Std::Frac { nines: true, .. } => {
                    let vb = value.as_bytes();
                    if vb.len() < 2 || !(vb[0] == b'.' || vb[0] == b',') || !vb[1].is_ascii_digit()
                    {
                        // Fractional second omitted.
                        return Some(());
                    }
                    let mut i = 0;
                    while i + 1 < vb.len() && vb[i + 1].is_ascii_digit() {
                        i += 1;
                    }
                    match parse_nanoseconds(value, 1 + i) {
                        Ok(ns) => nsec = ns,
                        Err(Some(e)) => range_err = Some(e),
                        Err(None) => return None,
                    }
                    value = &value[1 + i..];
                }
            }
            Some(())
        })();
        if let Some(e) = range_err {
            return Err(parse_error(
                alayout,
                avalue,
                stdstr,
                value,
                &format!(": {e} out of range"),
            ));
        }
        if ok.is_none() {
            return Err(parse_error(alayout, avalue, stdstr, hold, ""));
        }
    }
    if pm_set && hour < 12 {
        hour += 12;
    } else if am_set && hour == 12 {
        hour = 0;
    }

    // Convert yday to day, month.
    if yday >= 0 {
        let mut d = 0;
        let mut m = 0;
        if is_leap(year) {
            if yday == 31 + 29 {
                m = 2;
                d = 29;
            } else if yday > 31 + 29 {
                yday -= 1;
            }
        }
        if !(1..=365).contains(&yday) {
            return Err(parse_error(
                alayout,
                avalue,
                "",
                value,
                ": day-of-year out of range",
            ));
        }
        if m == 0 {
            m = (yday - 1) / 31 + 1;
            if days_before(m + 1) < yday {
                m += 1;
            }
            d = yday - days_before(m);
        }
        if month >= 0 && month != m {
            return Err(parse_error(
                alayout,
                avalue,
                "",
                value,
                ": day-of-year does not match month",
            ));
        }
        month = m;
        if day >= 0 && day != d {
            return Err(parse_error(
                alayout,
                avalue,
                "",
                value,
                ": day-of-year does not match day",
            ));
        }
        day = d;
    } else {
        if month < 0 {
            month = 1;
        }
        if day < 0 {
            day = 1;
        }
    }

    if day < 1 || day > days_in(month, year) {
        return Err(parse_error(
            alayout,
            avalue,
            "",
            value,
            ": day out of range",
        ));
    }

    if let Some(z) = z {
        return Ok(GoTime::date(year, month, day, hour, min, sec, nsec, z));
    }

    if let Some(zone_offset) = zone_offset {
        let mut t = GoTime::date(year, month, day, hour, min, sec, nsec, Location::Utc);
        t.secs -= zone_offset;
        // Use the local zone if it has this offset at that instant.
        let (name, offset) = loc.zone_at(t.secs);
        if i64::from(offset) == zone_offset && (zone_name.is_empty() || name == zone_name) {
            t.loc = loc;
            return Ok(t);
        }
        t.loc = Location::Fixed {
            name: Rc::from(zone_name),
            offset: zone_offset as i32,
        };
        return Ok(t);
    }

    if !zone_name.is_empty() {
        let mut t = GoTime::date(year, month, day, hour, min, sec, nsec, Location::Utc);
        if let Some(offset) = loc.lookup_name(&zone_name, t.secs) {
            t.secs -= i64::from(offset);
            t.loc = loc;
            return Ok(t);
        }
        // Unknown abbreviation: a fabricated zone, offset 0 except GMT±h.
        let mut offset = 0;
        if zone_name.len() > 3 && zone_name.starts_with("GMT") {
            offset = atoi(&zone_name[3..]).unwrap_or(0) * 3600;
        }
        t.loc = Location::Fixed {
            name: Rc::from(zone_name),
            offset: offset as i32,
        };
        return Ok(t);
    }

    Ok(GoTime::date(year, month, day, hour, min, sec, nsec, loc))
}

/// Days before the first of `m` in a non-leap year (Go's `daysBefore`).
fn days_before(m: i64) -> i64 {
    const DAYS_BEFORE: [i64; 13] = [0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334, 365];
    DAYS_BEFORE[(m - 1).clamp(0, 12) as usize]
}

/// Go's `lookup` over month or day names, case-insensitive, on the full or
/// three-letter form.
fn lookup_name<'a>(names: &[&str], value: &'a str, short: bool) -> Option<(i64, &'a str)> {
    for (i, name) in names.iter().enumerate() {
        let v = if short { &name[..3] } else { name };
        if value.len() >= v.len()
            && value.is_char_boundary(v.len())
            && value[..v.len()].eq_ignore_ascii_case(v)
        {
            return Some((i as i64, &value[v.len()..]));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by the template fuzz target: a layout with a multi-byte
    /// character where an element could start was sliced inside it.
    #[test]
    fn layouts_and_values_with_multibyte_characters_never_panic() {
        let layouts = [
            "2006-01-02T15:04:05Z07:00",
            "Jan _2 .000 PM MST -0700",
            "__2 002",
        ];
        let values = [
            "2024-03-05T10:00:00Z",
            "Mar  5 .123 AM UTC +0100",
            "  5 065",
        ];
        for (layout, value) in layouts.iter().zip(values) {
            for insert in ["\u{FFFD}", "é", "\u{10348}"] {
                for i in (0..=layout.len()).filter(|&i| layout.is_char_boundary(i)) {
                    let l = format!("{}{insert}{}", &layout[..i], &layout[i..]);
                    let _ = parse_in_location(&l, value, Location::Utc);
                    let _ = utc(0, 0).format(&l);
                }
                for i in (0..=value.len()).filter(|&i| value.is_char_boundary(i)) {
                    let v = format!("{}{insert}{}", &value[..i], &value[i..]);
                    let _ = parse_in_location(layout, &v, Location::Utc);
                }
            }
        }
    }

    fn utc(secs: i64, nsec: u32) -> GoTime {
        GoTime {
            secs,
            nsec,
            loc: Location::Utc,
            mono: None,
        }
    }

    #[test]
    fn formats_reference_layouts() {
        // The reference time itself, in MST (-0700).
        let t = GoTime {
            secs: 1_136_239_445,
            nsec: 123_456_789,
            loc: Location::Fixed {
                name: "MST".into(),
                offset: -7 * 3600,
            },
            mono: None,
        };
        assert_eq!(
            t.format("Mon Jan _2 15:04:05 MST 2006"),
            "Mon Jan  2 15:04:05 MST 2006"
        );
        assert_eq!(
            t.format("2006-01-02T15:04:05.999999999Z07:00"),
            "2006-01-02T15:04:05.123456789-07:00"
        );
        assert_eq!(t.format("3:04PM"), "3:04PM");
        assert_eq!(
            t.format("Monday, 02-Jan-06 15:04:05 MST"),
            "Monday, 02-Jan-06 15:04:05 MST"
        );
        assert_eq!(t.format("__2 002 .000 ,99"), "  2 002 .123 ,12");
        assert_eq!(
            t.format("-07 -070000 -07:00:00 Z07"),
            "-07 -070000 -07:00:00 -07"
        );
        assert_eq!(utc(0, 0).format("Z07:00 -0700 MST"), "Z +0000 UTC");
        assert_eq!(t.format("January Month"), "January Month");
    }

    #[test]
    fn string_matches_go() {
        assert_eq!(GoTime::zero().go_string(), "0001-01-01 00:00:00 +0000 UTC");
        let mut t = utc(1_514_678_400, 5_000);
        assert_eq!(t.go_string(), "2017-12-31 00:00:00.000005 +0000 UTC");
        t.mono = Some(12_345_678);
        assert_eq!(
            t.go_string(),
            "2017-12-31 00:00:00.000005 +0000 UTC m=+0.012345678"
        );
    }

    #[test]
    fn parses_like_go() {
        let t = parse_in_location("2006-01-02", "2017-12-31", Location::Utc).unwrap();
        assert_eq!(t.secs, 1_514_678_400);
        let t = parse_in_location(
            "2006-01-02T15:04:05Z07:00",
            "2020-02-29T10:11:12.5+02:00",
            Location::Utc,
        )
        .unwrap();
        assert_eq!(t.go_string(), "2020-02-29 10:11:12.5 +0200 +0200");
        assert_eq!(
            parse_in_location("2006-01-02", "2017-02-30", Location::Utc).unwrap_err(),
            "parsing time \"2017-02-30\": day out of range"
        );
        assert_eq!(
            parse_in_location("2006-01-02", "x", Location::Utc).unwrap_err(),
            "parsing time \"x\" as \"2006-01-02\": cannot parse \"x\" as \"2006\""
        );
        assert_eq!(
            parse_in_location("2006", "2006 x", Location::Utc).unwrap_err(),
            "parsing time \"2006 x\": extra text: \" x\""
        );
        let t = parse_in_location("Jan 2 3:04pm MST", "feb 3 4:05PM CET", Location::Utc);
        assert_eq!(
            t.unwrap_err(),
            "parsing time \"feb 3 4:05PM CET\" as \"Jan 2 3:04pm MST\": cannot parse \"PM CET\" as \"pm\""
        );
        let t = parse_in_location("Jan 2 3:04pm MST", "feb 3 4:05pm CET", Location::Utc).unwrap();
        assert_eq!(t.go_string(), "0000-02-03 16:05:00 +0000 CET");
    }

    #[test]
    fn hostile_input_does_not_panic() {
        assert!(parse_in_location("-0700", "ü0000", Location::Utc).is_err());
        assert!(parse_in_location("Jan", "Jü", Location::Utc).is_err());
        assert!(parse_in_location("2006 MST", "2006 ÜÜÜ", Location::Utc).is_err());
        let berlin = load_location("Europe/Berlin").unwrap();
        let far = GoTime {
            secs: i64::MAX,
            nsec: 0,
            loc: berlin,
            mono: None,
        };
        let _ = far.go_string();
        let _ = far.add_date(i64::MAX, i64::MIN, i64::MAX).go_string();
        let _ = far.add(i64::MAX).sub(&GoTime::zero());
    }

    #[test]
    fn zones_and_dates() {
        let berlin = load_location("Europe/Berlin").unwrap();
        let t = utc(1_514_678_400, 0).in_loc(berlin.clone());
        assert_eq!(
            t.format("2006-01-02 15:04 MST -0700"),
            "2017-12-31 01:00 CET +0100"
        );
        let summer = GoTime::date(2020, 7, 1, 12, 0, 0, 0, berlin);
        assert_eq!(summer.format("15:04 MST"), "12:00 CEST");
        assert_eq!(summer.secs, 1_593_597_600);
        let t = utc(1_514_678_400, 0).add_date(0, 2, 0);
        assert_eq!(t.format("2006-01-02"), "2018-03-03");
    }
}

//! Sprig v3.3.0's date functions (`date.go`: `now`, `date`, `dateInZone`,
//! `dateModify`, `duration`, `durationRound`, `ago`, `toDate`, `unixEpoch`,
//! `htmlDate` …) and the Go `time.Time` / `time.Duration` values they return,
//! with the methods templates call on them (`.Format`, `.Unix`, `.UTC`,
//! `.Year` …). The Go `time` behaviour itself is ported in [`gotime`].

mod gotime;

use std::any::Any;
use std::rc::Rc;

pub use gotime::{GoTime, Location};
use gotime::{NANOS_PER_SEC, load_location};

use crate::gocompat::time::{duration_round, duration_string, parse_duration};

use crate::engine::funcs::{Env, FuncDef, FuncResult, Param};
use crate::engine::value::{Member, Method, Object, Value};

impl Object for GoTime {
    fn type_name(&self) -> &str {
        "time.Time"
    }
    fn kind_name(&self) -> &str {
        "struct"
    }
    fn member(&self, name: &str) -> Option<Member> {
        time_method(self, name).map(Member::Method)
    }
    fn fmt_v(&self, out: &mut String) {
        // fmt uses the Stringer: Time.String().
        out.push_str(&self.go_string());
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    /// `Time.MarshalJSON`: RFC 3339 with nanoseconds, as a JSON string.
    fn json_value(&self) -> Option<Value> {
        Some(Value::string(
            self.format("2006-01-02T15:04:05.999999999Z07:00"),
        ))
    }
}

/// A Go `time.Duration` (what `Time.Sub` returns): prints as `1h2m3s`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GoDuration(pub i64);

impl Object for GoDuration {
    fn type_name(&self) -> &str {
        "time.Duration"
    }
    fn kind_name(&self) -> &str {
        "int64"
    }
    fn member(&self, name: &str) -> Option<Member> {
        let d = self.0;
        let m: Method = match name {
            "String" => method0(name, move || Value::string(duration_string(d))),
            "Nanoseconds" => method0(name, move || Value::I64(d)),
            "Microseconds" => method0(name, move || Value::I64(d / 1_000)),
            "Milliseconds" => method0(name, move || Value::I64(d / 1_000_000)),
            "Seconds" => method0(name, move || {
                Value::Float((d / NANOS_PER_SEC) as f64 + (d % NANOS_PER_SEC) as f64 / 1e9)
            }),
            "Minutes" => method0(name, move || {
                let (m, ns) = (d / (60 * NANOS_PER_SEC), d % (60 * NANOS_PER_SEC));
                Value::Float(m as f64 + ns as f64 / (60e9))
            }),
            "Hours" => method0(name, move || {
                let (h, ns) = (d / (3600 * NANOS_PER_SEC), d % (3600 * NANOS_PER_SEC));
                Value::Float(h as f64 + ns as f64 / (3600e9))
            }),
            "Round" => method1(name, move |a| {
                Ok(Value::Object(Rc::new(GoDuration(duration_round(
                    d,
                    duration_arg(a)?,
                )))))
            }),
            _ => return None,
        };
        Some(Member::Method(m))
    }
    fn fmt_v(&self, out: &mut String) {
        out.push_str(&duration_string(self.0));
    }
    fn truthy(&self) -> bool {
        self.0 != 0
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    /// encoding/json sees the int64 of nanoseconds.
    fn json_value(&self) -> Option<Value> {
        Some(Value::I64(self.0))
    }
}

/// A `*time.Location`: prints as its name (`Local`, `UTC`, `Europe/Berlin`).
#[derive(Clone, Debug)]
struct GoLocation(String);

impl Object for GoLocation {
    fn type_name(&self) -> &str {
        "*time.Location"
    }
    fn member(&self, name: &str) -> Option<Member> {
        let s = self.0.clone();
        (name == "String").then(|| Member::Method(method0(name, move || Value::str(&s))))
    }
    fn fmt_v(&self, out: &mut String) {
        out.push_str(&self.0);
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    /// A struct of unexported fields: encoding/json writes `{}`.
    fn json_fields(&self) -> Option<Vec<(&'static str, Value)>> {
        Some(Vec::new())
    }
}

/// `time.Month` and `time.Weekday`: integers that print as their names.
#[derive(Clone, Copy, Debug)]
struct NamedInt {
    type_name: &'static str,
    value: i64,
    name: &'static str,
}

impl Object for NamedInt {
    fn type_name(&self) -> &str {
        self.type_name
    }
    fn kind_name(&self) -> &str {
        "int"
    }
    fn member(&self, name: &str) -> Option<Member> {
        let s = self.name;
        (name == "String").then(|| Member::Method(method0(name, move || Value::str(s))))
    }
    fn fmt_v(&self, out: &mut String) {
        out.push_str(self.name);
    }
    fn truthy(&self) -> bool {
        self.value != 0
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    /// encoding/json sees the int (`time.Month` has no `MarshalJSON`).
    fn json_value(&self) -> Option<Value> {
        Some(Value::I64(self.value))
    }
}

fn arg_count(name: &str, args: &[Value], want: usize) -> Result<(), String> {
    if args.len() != want {
        return Err(format!(
            "wrong number of args for {name}: want {want} got {}",
            args.len()
        ));
    }
    Ok(())
}

fn method0(name: &str, f: impl Fn() -> Value + 'static) -> Method {
    let name = name.to_string();
    Rc::new(move |args: &[Value]| {
        arg_count(&name, args, 0)?;
        Ok(f())
    })
}

fn method1(name: &str, f: impl Fn(&Value) -> Result<Value, String> + 'static) -> Method {
    let name = name.to_string();
    Rc::new(move |args: &[Value]| {
        arg_count(&name, args, 1)?;
        f(&args[0])
    })
}

/// Text/template's message for an argument of the wrong type.
fn wrong_type(expected: &str, got: &Value) -> String {
    if got.is_nil() {
        return format!("invalid value; expected {expected}");
    }
    format!(
        "wrong type for value; expected {expected}; got {}",
        got.type_name()
    )
}

/// A `time.Duration` argument: an integer constant or a Duration value.
fn duration_arg(v: &Value) -> Result<i64, String> {
    match v {
        Value::Int(i) | Value::I64(i) => Ok(*i),
        Value::Object(o) => match o.as_any().downcast_ref::<GoDuration>() {
            Some(d) => Ok(d.0),
            None => Err(wrong_type("time.Duration", v)),
        },
        _ => Err(wrong_type("time.Duration", v)),
    }
}

fn int_arg(v: &Value) -> Result<i64, String> {
    match v {
        Value::Int(i) | Value::I64(i) => Ok(*i),
        _ => Err(wrong_type("int", v)),
    }
}

/// The `time.Time` inside a value, if it is one.
pub fn as_time(v: &Value) -> Option<&GoTime> {
    match v {
        Value::Object(o) => o.as_any().downcast_ref::<GoTime>(),
        _ => None,
    }
}

/// A parameter declared `time.Time` in Go: anything else is text/template's
/// type error.
fn time_arg(v: &Value) -> Result<GoTime, String> {
    as_time(v)
        .cloned()
        .ok_or_else(|| wrong_type("time.Time", v))
}

fn time_value(t: GoTime) -> Value {
    Value::Object(Rc::new(t))
}

fn time_method(t: &GoTime, name: &str) -> Option<Method> {
    let t = t.clone();
    let civil = move |t: &GoTime| t.civil();
    Some(match name {
        "Format" => method1(name, move |a| match a {
            Value::Str(layout) => Ok(Value::string(t.format(layout))),
            other => Err(wrong_type("string", other)),
        }),
        "String" => method0(name, move || Value::string(t.go_string())),
        "Unix" => method0(name, move || Value::I64(t.secs)),
        "UnixMilli" => method0(name, move || {
            Value::I64(
                t.secs
                    .wrapping_mul(1_000)
                    .wrapping_add(i64::from(t.nsec / 1_000_000)),
            )
        }),
        "UnixMicro" => method0(name, move || {
            Value::I64(
                t.secs
                    .wrapping_mul(1_000_000)
                    .wrapping_add(i64::from(t.nsec / 1_000)),
            )
        }),
        "UnixNano" => method0(name, move || Value::I64(t.unix_nano())),
        "UTC" => method0(name, move || time_value(t.in_loc(Location::Utc))),
        "Local" => method0(name, move || time_value(t.in_loc(Location::Local))),
        "IsZero" => method0(name, move || Value::Bool(t.is_zero())),
        "Year" => method0(name, move || Value::Int(civil(&t).year)),
        "Month" => method0(name, move || {
            let m = civil(&t).month;
            Value::Object(Rc::new(NamedInt {
                type_name: "time.Month",
                value: m,
                name: gotime::LONG_MONTH_NAMES[(m - 1) as usize],
            }))
        }),
        "Day" => method0(name, move || Value::Int(civil(&t).day)),
        "YearDay" => method0(name, move || Value::Int(civil(&t).yday)),
        "Weekday" => method0(name, move || {
            let w = civil(&t).weekday;
            Value::Object(Rc::new(NamedInt {
                type_name: "time.Weekday",
                value: w,
                name: gotime::LONG_DAY_NAMES[w as usize],
            }))
        }),
        "Hour" => method0(name, move || Value::Int(civil(&t).hour)),
        "Minute" => method0(name, move || Value::Int(civil(&t).min)),
        "Second" => method0(name, move || Value::Int(civil(&t).sec)),
        "Nanosecond" => method0(name, move || Value::Int(i64::from(t.nsec))),
        "Add" => method1(name, move |a| Ok(time_value(t.add(duration_arg(a)?)))),
        "Sub" => method1(name, move |a| {
            Ok(Value::Object(Rc::new(GoDuration(t.sub(&time_arg(a)?)))))
        }),
        "Before" => method1(name, move |a| {
            let u = time_arg(a)?;
            Ok(Value::Bool((t.secs, t.nsec) < (u.secs, u.nsec)))
        }),
        "After" => method1(name, move |a| {
            let u = time_arg(a)?;
            Ok(Value::Bool((t.secs, t.nsec) > (u.secs, u.nsec)))
        }),
        "Equal" => method1(name, move |a| {
            let u = time_arg(a)?;
            Ok(Value::Bool((t.secs, t.nsec) == (u.secs, u.nsec)))
        }),
        "Compare" => method1(name, move |a| {
            let u = time_arg(a)?;
            Ok(Value::Int(match (t.secs, t.nsec).cmp(&(u.secs, u.nsec)) {
                std::cmp::Ordering::Less => -1,
                std::cmp::Ordering::Equal => 0,
                std::cmp::Ordering::Greater => 1,
            }))
        }),
        "Truncate" => method1(name, move |a| Ok(time_value(t.truncate(duration_arg(a)?)))),
        "Round" => method1(name, move |a| Ok(time_value(t.round(duration_arg(a)?)))),
        "Location" => method0(name, move || {
            Value::Object(Rc::new(GoLocation(t.loc.name())))
        }),
        "AddDate" => {
            let name = name.to_string();
            Rc::new(move |args: &[Value]| {
                arg_count(&name, args, 3)?;
                let (y, m, d) = (int_arg(&args[0])?, int_arg(&args[1])?, int_arg(&args[2])?);
                Ok(time_value(t.add_date(y, m, d)))
            })
        }
        _ => return None,
    })
}

/// `time.Now()`: the env's clock, in Local, with a monotonic reading (Go
/// prints it as ` m=+…` in `%v`); in reproducible mode the reading is 0.
fn now_time(env: &Env) -> GoTime {
    use std::sync::OnceLock;
    use std::time::Instant;
    static START: OnceLock<Instant> = OnceLock::new();
    let mut t = GoTime::from_chrono(env.now());
    t.mono = Some(if env.clock_is_fixed() {
        0
    } else {
        let elapsed = START.get_or_init(Instant::now).elapsed();
        i64::try_from(elapsed.as_nanos()).unwrap_or(i64::MAX).max(1)
    });
    t
}

/// The time an `interface{}` date argument stands for in `dateInZone`
/// (`time.Time`, `*time.Time`, `int64`, `int`, `int32` as Unix seconds; any
/// other value, float64 from YAML included, is "now").
fn date_arg(env: &Env, v: &Value) -> GoTime {
    match v {
        Value::Int(i) | Value::I64(i) => GoTime::unix(*i),
        other => as_time(other).cloned().unwrap_or_else(|| now_time(env)),
    }
}

fn str_arg(v: &Value) -> &str {
    v.as_str().unwrap_or_default()
}

/// Sprig's `dateInZone`: an unknown zone formats in UTC.
fn date_in_zone_impl(env: &Env, layout: &str, date: &Value, zone: &str) -> String {
    let t = date_arg(env, date);
    let loc = load_location(zone).unwrap_or(Location::Utc);
    t.in_loc(loc).format(layout)
}

fn now(env: &Env, _: &[Value]) -> FuncResult {
    Ok(time_value(now_time(env)))
}

fn date(env: &Env, a: &[Value]) -> FuncResult {
    Ok(Value::string(date_in_zone_impl(
        env,
        str_arg(&a[0]),
        &a[1],
        "Local",
    )))
}

fn date_in_zone(env: &Env, a: &[Value]) -> FuncResult {
    Ok(Value::string(date_in_zone_impl(
        env,
        str_arg(&a[0]),
        &a[1],
        str_arg(&a[2]),
    )))
}

fn html_date(env: &Env, a: &[Value]) -> FuncResult {
    Ok(Value::string(date_in_zone_impl(
        env,
        "2006-01-02",
        &a[0],
        "Local",
    )))
}

fn html_date_in_zone(env: &Env, a: &[Value]) -> FuncResult {
    Ok(Value::string(date_in_zone_impl(
        env,
        "2006-01-02",
        &a[0],
        str_arg(&a[1]),
    )))
}

/// Sprig's `dateModify`: an unparsable duration leaves the date unchanged.
fn date_modify(_: &Env, a: &[Value]) -> FuncResult {
    let t = time_arg(&a[1])?;
    Ok(time_value(match parse_duration(str_arg(&a[0])) {
        Ok(d) => t.add(d),
        Err(_) => t,
    }))
}

fn must_date_modify(_: &Env, a: &[Value]) -> FuncResult {
    let t = time_arg(&a[1])?;
    let d = parse_duration(str_arg(&a[0]))?;
    Ok(time_value(t.add(d)))
}

/// Sprig's `dateAgo`: time since the date, rounded to seconds.
fn ago(env: &Env, a: &[Value]) -> FuncResult {
    let now = now_time(env);
    let t = match &a[0] {
        Value::Int(i) | Value::I64(i) => GoTime::unix(*i),
        other => as_time(other).cloned().unwrap_or_else(|| now.clone()),
    };
    Ok(Value::string(duration_string(duration_round(
        now.sub(&t),
        NANOS_PER_SEC,
    ))))
}

/// Sprig's `duration`: seconds as a string or int64 (a Go `int`, a float64
/// and anything else count as 0), printed as a Go Duration.
fn duration(_: &Env, a: &[Value]) -> FuncResult {
    let n: i64 = match &a[0] {
        Value::Str(s) => parse_int64(s).unwrap_or(0),
        Value::I64(i) => *i,
        _ => 0,
    };
    Ok(Value::string(duration_string(
        n.wrapping_mul(NANOS_PER_SEC),
    )))
}

/// `strconv.ParseInt(s, 10, 64)`: optional sign, decimal digits only.
fn parse_int64(s: &str) -> Option<i64> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse::<i64>().ok()
}

/// Sprig's `durationRound`: the duration's largest unit, truncated (`2h`,
/// `3mo`, `1y`).
fn duration_round_fn(env: &Env, a: &[Value]) -> FuncResult {
    let d: i64 = match &a[0] {
        Value::Str(s) => parse_duration(s).unwrap_or(0),
        Value::I64(i) => *i,
        other => match as_time(other) {
            Some(t) => now_time(env).sub(t),
            None => 0,
        },
    };
    let u = d.unsigned_abs();
    const SECOND: u64 = 1_000_000_000;
    const MINUTE: u64 = 60 * SECOND;
    const HOUR: u64 = 60 * MINUTE;
    const DAY: u64 = 24 * HOUR;
    const MONTH: u64 = 30 * DAY;
    const YEAR: u64 = 365 * DAY;
    let out = [
        (YEAR, "y"),
        (MONTH, "mo"),
        (DAY, "d"),
        (HOUR, "h"),
        (MINUTE, "m"),
        (SECOND, "s"),
    ]
    .iter()
    .find(|(unit, _)| u > *unit)
    .map_or_else(
        || "0s".to_string(),
        |(unit, suffix)| format!("{}{suffix}", u / unit),
    );
    Ok(Value::string(out))
}

/// Sprig's `toDate`: parse in Local; a parse error gives the zero time.
fn to_date(_: &Env, a: &[Value]) -> FuncResult {
    let t = gotime::parse_in_location(str_arg(&a[0]), str_arg(&a[1]), Location::Local)
        .unwrap_or_else(|_| GoTime::zero());
    Ok(time_value(t))
}

fn must_to_date(_: &Env, a: &[Value]) -> FuncResult {
    let t = gotime::parse_in_location(str_arg(&a[0]), str_arg(&a[1]), Location::Local)?;
    Ok(time_value(t))
}

fn unix_epoch(_: &Env, a: &[Value]) -> FuncResult {
    Ok(Value::string(time_arg(&a[0])?.secs.to_string()))
}

pub const FUNCS: &[FuncDef] = {
    use Param::{Any, Str};
    &[
        super::def("now", &[], now),
        super::def("date", &[Str, Any], date),
        super::def("dateInZone", &[Str, Any, Str], date_in_zone),
        super::def("date_in_zone", &[Str, Any, Str], date_in_zone),
        super::def("htmlDate", &[Any], html_date),
        super::def("htmlDateInZone", &[Any, Str], html_date_in_zone),
        // Go declares the second parameter `time.Time`; checked in the impl.
        super::def("dateModify", &[Str, Any], date_modify),
        super::def("date_modify", &[Str, Any], date_modify),
        super::def("mustDateModify", &[Str, Any], must_date_modify),
        super::def("must_date_modify", &[Str, Any], must_date_modify),
        super::def("ago", &[Any], ago),
        super::def("duration", &[Any], duration),
        super::def("durationRound", &[Any], duration_round_fn),
        super::def("toDate", &[Str, Str], to_date),
        super::def("mustToDate", &[Str, Str], must_to_date),
        super::def("unixEpoch", &[Any], unix_epoch),
    ]
};

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn env() -> Env {
        let now = chrono::FixedOffset::east_opt(0)
            .unwrap()
            .with_ymd_and_hms(2024, 3, 10, 12, 30, 45)
            .unwrap();
        Env::reproducible(1, now)
    }

    fn s(v: &str) -> Value {
        Value::str(v)
    }

    fn call(f: crate::engine::funcs::FuncImpl, args: &[Value]) -> String {
        let v = f(&env(), args).unwrap();
        crate::engine::gofmt::to_string_v(&v)
    }

    #[test]
    fn date_formats_todate() {
        let t = to_date(&env(), &[s("2006-01-02"), s("2017-12-31")]).unwrap();
        assert_eq!(call(date, &[s("2006-01-02"), t.clone()]), "2017-12-31");
        assert_eq!(
            call(
                date_in_zone,
                &[s("02 Jan 06 15:04 MST"), t.clone(), s("UTC")]
            ),
            "31 Dec 17 00:00 UTC"
        );
        assert_eq!(
            call(html_date_in_zone, &[t.clone(), s("Nowhere/Zone")]),
            "2017-12-31"
        );
        assert_eq!(call(unix_epoch, std::slice::from_ref(&t)), "1514678400");
        assert_eq!(call(date, &[s("2006"), Value::Int(0)]), "1970");
        // A float64 (any YAML number) is not a date: Sprig formats "now".
        assert_eq!(
            call(date, &[s("2006-01-02"), Value::Float(0.0)]),
            "2024-03-10"
        );
    }

    #[test]
    fn bad_todate_is_zero_time() {
        assert_eq!(
            call(to_date, &[s("2006-01-02"), s("nope")]),
            "0001-01-01 00:00:00 +0000 UTC"
        );
        assert_eq!(
            must_to_date(&env(), &[s("2006-01-02"), s("nope")]).unwrap_err(),
            "parsing time \"nope\" as \"2006-01-02\": cannot parse \"nope\" as \"2006\""
        );
    }

    #[test]
    fn now_and_modify() {
        assert_eq!(
            call(now, &[]),
            "2024-03-10 12:30:45 +0000 UTC m=+0.000000000"
        );
        let t = now(&env(), &[]).unwrap();
        assert_eq!(
            call(date_modify, &[s("-1.5h"), t.clone()]),
            "2024-03-10 11:00:45 +0000 UTC m=-5400.000000000"
        );
        assert_eq!(
            call(date_modify, &[s("bogus"), t.clone()]),
            "2024-03-10 12:30:45 +0000 UTC m=+0.000000000"
        );
        assert_eq!(
            must_date_modify(&env(), &[s("bogus"), t.clone()]).unwrap_err(),
            "time: invalid duration \"bogus\""
        );
        assert_eq!(
            date_modify(&env(), &[s("1h"), s("2020")]).unwrap_err(),
            "wrong type for value; expected time.Time; got string"
        );
        assert_eq!(call(ago, &[Value::I64(1_710_073_845 - 3_723)]), "1h2m3s");
    }

    #[test]
    fn durations() {
        assert_eq!(call(duration, &[Value::I64(95)]), "1m35s");
        assert_eq!(call(duration, &[s("95")]), "1m35s");
        assert_eq!(call(duration, &[Value::Int(95)]), "0s");
        assert_eq!(call(duration_round_fn, &[s("2h10m")]), "2h");
        assert_eq!(call(duration_round_fn, &[s("-400h")]), "16d");
        assert_eq!(
            call(
                duration_round_fn,
                &[Value::I64(3_600_000_000_000 * 24 * 400)]
            ),
            "1y"
        );
        assert_eq!(call(duration_round_fn, &[s("1s")]), "0s");
    }

    /// Expected values rendered by helm v3.17.3 (with Local = UTC).
    #[test]
    fn parse_and_format_match_helm() {
        let td = |layout: &str, value: &str| call(to_date, &[s(layout), s(value)]);
        let t = to_date(
            &env(),
            &[
                s("2006-01-02 15:04:05.000000 -0700"),
                s("2020-03-04 05:06:07.891011 +0530"),
            ],
        )
        .unwrap();
        assert_eq!(
            crate::engine::gofmt::to_string_v(&t),
            "2020-03-04 05:06:07.891011 +0530 +0530"
        );
        assert_eq!(
            call(
                date_in_zone,
                &[
                    s("Jan _2 3PM pm 03 .000000 ,9 __2 002 Z07 -07:00:00 Monday Mon January 06"),
                    t,
                    s("America/New_York")
                ]
            ),
            "Mar  3 6PM pm 06 .891011 ,8  63 063 -05 -05:00:00 Tuesday Tue March 20"
        );
        assert_eq!(
            td("2006-01-02 15:04:05 -0700", "2020-01-01 10:00:00 +0000"),
            "2020-01-01 10:00:00 +0000 UTC"
        );
        assert_eq!(
            td("2006-01-02 15:04:05 MST", "2020-01-01 10:00:00 PST"),
            "2020-01-01 10:00:00 +0000 PST"
        );
        assert_eq!(
            td("2006-01-02 MST", "2020-01-01 GMT+3"),
            "2020-01-01 03:00:00 +0300 GMT+3"
        );
        assert_eq!(
            td("02/01/06 3:04PM", "31/12/99 12:30AM"),
            "1999-12-31 00:30:00 +0000 UTC"
        );
        assert_eq!(td("2006-002", "2020-060"), "2020-02-29 00:00:00 +0000 UTC");
        assert_eq!(
            td("2006-01-02 15:04:05.999", "2020-01-01 10:00:00.5"),
            "2020-01-01 10:00:00.5 +0000 UTC"
        );
        assert_eq!(
            td("2006-01-02 15:04:05", "2020-01-01 10:00:00.123456789123"),
            "2020-01-01 10:00:00.123456789 +0000 UTC"
        );
        assert_eq!(
            td("Jan 2, 2006 at 3:04pm (MST)", "Feb 3, 2013 at 7:54pm (PST)"),
            "2013-02-03 19:54:00 +0000 PST"
        );
        assert_eq!(
            td("2006-01-02T15:04:05Z07:00", "2020-01-01T10:00:00Z"),
            "2020-01-01 10:00:00 +0000 UTC"
        );
        assert_eq!(
            must_to_date(&env(), &[s("15:04"), s("25:00")]).unwrap_err(),
            "parsing time \"25:00\": hour out of range"
        );
        let day = to_date(&env(), &[s("2006-01-02"), s("2017-12-31")]).unwrap();
        assert_eq!(
            call(html_date_in_zone, &[day, s("Asia/Tokyo")]),
            "2017-12-31"
        );
        assert_eq!(call(html_date, &[Value::Int(86_400)]), "1970-01-02");
        assert_eq!(
            call(
                date,
                &[s("2006-01-02T15:04:05Z07:00"), Value::I64(1_700_000_000)]
            ),
            "2023-11-14T22:13:20Z"
        );
        let rounds: Vec<String> = ["3h", "720h", "721h", "1.5s"]
            .iter()
            .map(|d| call(duration_round_fn, &[s(d)]))
            .collect();
        assert_eq!(rounds, ["3h", "30d", "1mo", "1s"]);
        assert_eq!(call(duration_round_fn, &[Value::I64(1_000_000_000)]), "0s");
    }

    #[test]
    fn time_methods() {
        let t = to_date(&env(), &[s("2006-01-02 15:04"), s("2017-12-31 23:05")]).unwrap();
        let Value::Object(o) = &t else { panic!() };
        let callm = |name: &str, args: &[Value]| {
            let Some(Member::Method(m)) = o.member(name) else {
                panic!("{name}")
            };
            crate::engine::gofmt::to_string_v(&m(args).unwrap())
        };
        assert_eq!(callm("Year", &[]), "2017");
        assert_eq!(callm("Month", &[]), "December");
        assert_eq!(callm("Weekday", &[]), "Sunday");
        assert_eq!(callm("Format", &[s("3:04PM")]), "11:05PM");
        assert_eq!(
            callm("Add", &[Value::Int(3_600_000_000_000)]),
            "2018-01-01 00:05:00 +0000 UTC"
        );
        assert_eq!(
            callm("AddDate", &[Value::Int(0), Value::Int(2), Value::Int(0)]),
            "2018-03-03 23:05:00 +0000 UTC"
        );

        // Expected values rendered by helm v3.17.3.
        let t = to_date(
            &env(),
            &[s("2006-01-02 15:04:05.000"), s("2020-01-01 10:29:31.700")],
        )
        .unwrap();
        let Value::Object(o) = &t else { panic!() };
        let callm = |name: &str, args: &[Value]| {
            let Some(Member::Method(m)) = o.member(name) else {
                panic!("{name}")
            };
            crate::engine::gofmt::to_string_v(&m(args).unwrap())
        };
        let hour = Value::Int(3_600_000_000_000);
        assert_eq!(
            callm("Truncate", std::slice::from_ref(&hour)),
            "2020-01-01 10:00:00 +0000 UTC"
        );
        assert_eq!(callm("Round", &[hour]), "2020-01-01 10:00:00 +0000 UTC");
        assert_eq!(
            callm("Round", &[Value::Int(1_000_000_000)]),
            "2020-01-01 10:29:32 +0000 UTC"
        );
        assert_eq!(
            callm("Round", &[Value::Int(0)]),
            "2020-01-01 10:29:31.7 +0000 UTC"
        );
        assert_eq!(
            callm("Truncate", &[Value::Int(7_000_000_000_000)]),
            "2020-01-01 09:33:20 +0000 UTC"
        );
        assert_eq!(callm("Location", &[]), "Local");
        assert_eq!(callm("Compare", &[now(&env(), &[]).unwrap()]), "-1");
    }
}

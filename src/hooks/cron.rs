//! `schedule[].crontab` as shell-operator reads it (gopkg.in/robfig/cron.v2,
//! `parser.go`/`spec.go`), checked by a small pre-parser and scheduled with
//! `croner`. croner alone differs from robfig in ways a hook author would
//! feel (see runtime.md §1b): robfig takes 5 fields as "seconds = 0", `?` in
//! any field, `N/step` as `N-max/step`, `@every <Go duration>`, `@midnight`,
//! a `TZ=` prefix; it rejects day-of-week 7 and `L`/`W`/`#`; and it ANDs
//! day-of-month with day-of-week whenever either starts with `*` or `?`
//! (`*/2` included), where croner would OR them. So the spec is validated
//! and normalised here, field by field, with robfig's error texts, and croner
//! gets an unambiguous six-field pattern.

use std::time::Duration;

use chrono::{DateTime, Utc};
use croner::parser::{CronParser, Seconds, Year};

/// A validated crontab string.
#[derive(Clone, Debug)]
pub struct Crontab {
    /// The spec exactly as written in the hook's config.
    pub spec: String,
    /// What it means.
    pub schedule: CronSchedule,
}

impl PartialEq for Crontab {
    fn eq(&self, other: &Self) -> bool {
        self.spec == other.spec
    }
}

/// A parsed crontab.
#[derive(Clone, Debug)]
pub enum CronSchedule {
    /// `@every <duration>`; robfig rounds durations below one second up to 1s.
    Every(Duration),
    /// A six-field schedule, in `tz` (IANA name from a `TZ=` prefix) or local time.
    Cron {
        tz: Option<chrono_tz::Tz>,
        /// The normalised six-field pattern given to croner.
        pattern: String,
        cron: Box<croner::Cron>,
    },
}

struct Field {
    min: u32,
    max: u32,
    names: &'static [&'static str],
}

const MONTHS: &[&str] = &[
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];
const DAYS: &[&str] = &["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

const FIELDS: [Field; 6] = [
    Field {
        min: 0,
        max: 59,
        names: &[],
    },
    Field {
        min: 0,
        max: 59,
        names: &[],
    },
    Field {
        min: 0,
        max: 23,
        names: &[],
    },
    Field {
        min: 1,
        max: 31,
        names: &[],
    },
    Field {
        min: 1,
        max: 12,
        names: MONTHS,
    },
    Field {
        min: 0,
        max: 6,
        names: DAYS,
    },
];

impl Crontab {
    /// Parses `spec` as robfig/cron.v2's `Parse` does.
    pub fn parse(spec: &str) -> Result<Crontab, String> {
        let mut rest = spec;
        let mut tz = None;
        // parser.go: `TZ=<location> ` prefix, loaded with time.LoadLocation.
        if let Some(after) = rest.strip_prefix("TZ=") {
            // robfig slices spec[3:i] with i = the first space; with none
            // the slice panics, which its Parse recovers into this error.
            let Some((name, tail)) = after.split_once(' ') else {
                return Err("runtime error: slice bounds out of range [3:-1]".into());
            };
            let zone: chrono_tz::Tz = name
                .parse()
                .map_err(|_| format!("Provided bad location {name}: unknown time zone {name}"))?;
            tz = Some(zone);
            rest = tail.trim();
        }
        if rest.starts_with('@') {
            let schedule = descriptor(rest, tz)?;
            return Ok(Crontab {
                spec: spec.to_string(),
                schedule,
            });
        }
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let fields: Vec<&str> = match fields.len() {
            5 => std::iter::once("0").chain(fields).collect(),
            6 => fields,
            n => return Err(format!("Expected 5 or 6 fields, found {n}: {rest}")),
        };
        let mut out = Vec::with_capacity(6);
        for (text, field) in fields.iter().zip(FIELDS.iter()) {
            out.push(normalise_field(text, field)?);
        }
        // spec.go dayMatches: AND when either field has the star bit, else OR.
        let star = |s: &str| s.starts_with('*') || s.starts_with('?');
        let and = star(fields[3]) || star(fields[5]);
        Self::build(spec, tz, out.join(" "), and)
    }

    fn build(
        spec: &str,
        tz: Option<chrono_tz::Tz>,
        pattern: String,
        and: bool,
    ) -> Result<Crontab, String> {
        let cron = CronParser::builder()
            .seconds(Seconds::Required)
            .year(Year::Disallowed)
            .dom_and_dow(and)
            .sloppy_ranges(true)
            .build()
            .parse(&pattern)
            .map_err(|e| format!("{e}: {spec}"))?;
        Ok(Crontab {
            spec: spec.to_string(),
            schedule: CronSchedule::Cron {
                tz,
                pattern,
                cron: Box::new(cron),
            },
        })
    }

    /// The first time strictly after `after` at which the schedule fires.
    pub fn next_after(&self, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
        match &self.schedule {
            CronSchedule::Every(d) => {
                let d = chrono::Duration::from_std(*d).ok()?;
                after.checked_add_signed(d)
            }
            CronSchedule::Cron { tz, cron, .. } => match tz {
                Some(tz) => cron
                    .find_next_occurrence(&after.with_timezone(tz), false)
                    .ok()
                    .map(|t| t.with_timezone(&Utc)),
                None => cron
                    .find_next_occurrence(&after.with_timezone(&chrono::Local), false)
                    .ok()
                    .map(|t| t.with_timezone(&Utc)),
            },
        }
    }
}

fn descriptor(spec: &str, tz: Option<chrono_tz::Tz>) -> Result<CronSchedule, String> {
    let pattern = match spec {
        "@yearly" | "@annually" => "0 0 0 1 1 *",
        "@monthly" => "0 0 0 1 * *",
        "@weekly" => "0 0 0 * * 0",
        "@daily" | "@midnight" => "0 0 0 * * *",
        "@hourly" => "0 0 * * * *",
        _ => {
            if let Some(d) = spec.strip_prefix("@every ") {
                let dur = parse_go_duration(d)
                    .map_err(|e| format!("Failed to parse duration {spec}: {e}"))?;
                // robfig's Every(): below one second is rounded up to 1s.
                let dur = if dur < Duration::from_secs(1) {
                    Duration::from_secs(1)
                } else {
                    Duration::from_secs(dur.as_secs())
                };
                return Ok(CronSchedule::Every(dur));
            }
            return Err(format!("Unrecognized descriptor: {spec}"));
        }
    };
    // Descriptors use the star bit on both day fields: AND.
    Crontab::build(spec, tz, pattern.to_string(), true).map(|c| c.schedule)
}

/// One field, robfig's `getField`/`getRange`: a comma list of `*`/`?`/N/N-M
/// with an optional `/step`. Returns the croner spelling.
fn normalise_field(text: &str, f: &Field) -> Result<String, String> {
    let mut parts = Vec::new();
    // strings.FieldsFunc: empty items between commas are skipped.
    for expr in text.split(',').filter(|e| !e.is_empty()) {
        parts.push(normalise_range(expr, f)?);
    }
    Ok(parts.join(","))
}

fn normalise_range(expr: &str, f: &Field) -> Result<String, String> {
    let (range, step) = match expr.split('/').collect::<Vec<_>>()[..] {
        [r] => (r, None),
        [r, s] => (r, Some(s)),
        _ => return Err(format!("Too many slashes: {expr}")),
    };
    let (start, end, star) = if range == "*" || range == "?" {
        (f.min, f.max, true)
    } else {
        match range.split('-').collect::<Vec<_>>()[..] {
            [a] => {
                let v = parse_value(a, f)?;
                // `N/step` means N through max.
                (v, if step.is_some() { f.max } else { v }, false)
            }
            [a, b] => (parse_value(a, f)?, parse_value(b, f)?, false),
            _ => return Err(format!("Too many hyphens: {expr}")),
        }
    };
    let step = match step {
        None => 1,
        Some(s) => {
            let n = parse_int(s)?;
            if n == 0 {
                return Err(format!("Step of range should be a positive number: {expr}"));
            }
            n
        }
    };
    if start < f.min {
        return Err(format!(
            "Beginning of range ({start}) below minimum ({}): {expr}",
            f.min
        ));
    }
    if end > f.max {
        return Err(format!(
            "End of range ({end}) above maximum ({}): {expr}",
            f.max
        ));
    }
    if start > end {
        return Err(format!(
            "Beginning of range ({start}) beyond end of range ({end}): {expr}"
        ));
    }
    Ok(match (star, step) {
        (true, 1) => "*".to_string(),
        (true, s) => format!("*/{s}"),
        (false, 1) if start == end => start.to_string(),
        (false, 1) => format!("{start}-{end}"),
        (false, s) => format!("{start}-{end}/{s}"),
    })
}

fn parse_value(s: &str, f: &Field) -> Result<u32, String> {
    let lower = s.to_ascii_lowercase();
    if let Some(i) = f.names.iter().position(|n| *n == lower) {
        // Month names are 1-based, day names 0-based.
        return Ok(i as u32 + f.min);
    }
    parse_int(s)
}

fn parse_int(s: &str) -> Result<u32, String> {
    s.parse::<u32>().map_err(|_| {
        format!("Failed to parse int from {s}: strconv.Atoi: parsing \"{s}\": invalid syntax")
    })
}

/// Go's `time.ParseDuration` (used for `@every` and
/// `settings.executionMinInterval`), as a `Duration`: a negative interval
/// never fires, so callers get zero for it.
pub fn parse_go_duration(s: &str) -> Result<Duration, String> {
    let ns = crate::gocompat::time::parse_duration(s)?;
    Ok(Duration::from_nanos(u64::try_from(ns).unwrap_or(0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn next(spec: &str, from: &str) -> String {
        let c = Crontab::parse(spec).unwrap();
        let t: DateTime<Utc> = from.parse().unwrap();
        c.next_after(t).unwrap().to_rfc3339()
    }

    #[test]
    fn five_fields_mean_second_zero() {
        assert_eq!(
            next("TZ=UTC */5 * * * *", "2026-01-01T00:01:30Z"),
            "2026-01-01T00:05:00+00:00"
        );
        assert_eq!(
            next("TZ=UTC */10 * * * * *", "2026-01-01T00:00:01Z"),
            "2026-01-01T00:00:10+00:00"
        );
    }

    #[test]
    fn robfig_extensions() {
        assert!(matches!(
            Crontab::parse("@every 1m30s").unwrap().schedule,
            CronSchedule::Every(d) if d == Duration::from_secs(90)
        ));
        assert_eq!(
            next("TZ=UTC @midnight", "2026-01-01T10:00:00Z"),
            "2026-01-02T00:00:00+00:00"
        );
        assert_eq!(
            next("TZ=UTC 0/20 * * * * ?", "2026-01-01T00:00:01Z"),
            "2026-01-01T00:00:20+00:00"
        );
        assert_eq!(
            next("TZ=UTC 0 0 12 ? JAN mon", "2026-01-01T00:00:00Z"),
            "2026-01-05T12:00:00+00:00"
        );
        // `*/2` in day-of-month with a restricted day of week: AND, as robfig.
        // 2026-01-03 is a Saturday and an odd day (1, 3, 5 … match */2 from 1).
        assert_eq!(
            next("TZ=UTC 0 0 0 */2 * 6", "2026-01-01T00:00:00Z"),
            "2026-01-03T00:00:00+00:00"
        );
    }

    #[test]
    fn robfig_errors() {
        let err = |s: &str| Crontab::parse(s).unwrap_err();
        assert_eq!(err("* * * *"), "Expected 5 or 6 fields, found 4: * * * *");
        assert_eq!(err("* * * * 7"), "End of range (7) above maximum (6): 7");
        assert_eq!(
            err("* * * * * * *"),
            "Expected 5 or 6 fields, found 7: * * * * * * *"
        );
        assert_eq!(err("@fortnightly"), "Unrecognized descriptor: @fortnightly");
        assert!(err("* * L * *").starts_with("Failed to parse int from L"));
        assert!(err("* * 1#2 * *").starts_with("Failed to parse int from 1#2"));
        assert_eq!(
            err("*/0 * * * *"),
            "Step of range should be a positive number: */0"
        );
        assert_eq!(
            err("5-1 * * * *"),
            "Beginning of range (5) beyond end of range (1): 5-1"
        );
        assert!(err("@every 5x").contains("unknown unit"));
        assert!(err("TZ=Mars/Base * * * * *").contains("bad location"));
    }

    #[test]
    fn go_durations() {
        assert_eq!(
            parse_go_duration("1h2m3s").unwrap(),
            Duration::from_secs(3723)
        );
        assert_eq!(
            parse_go_duration("1.5s").unwrap(),
            Duration::from_millis(1500)
        );
        assert_eq!(parse_go_duration("0").unwrap(), Duration::ZERO);
        assert!(parse_go_duration("5").is_err());
        assert!(parse_go_duration("").is_err());
    }
}

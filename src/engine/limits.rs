//! Render limits: how much one render may write, how deep `include`/`tpl`
//! may nest, and how long it may run, so that a hostile or careless
//! template (a `tpl` of itself, nested `range`s doubling their output,
//! `repeat 2000000000`) ends in an error instead of exhausting memory.
//!
//! Go's text/template and Helm have no such limits (apart from Helm's
//! 1000 nested `include`s of one name): [`Limits::default`] keeps that
//! behaviour, for `antiopa template` as a drop-in for `helm template`.
//! A long-running operator sets [`Limits::operator`] or its own values.
//!
//! The checks are meant for hot paths: the output count is an add and a
//! compare per write, the clock is read once every [`CLOCK_EVERY`]
//! evaluation steps (and after calls that draw randomness, which is where
//! the slow functions — key generation, bcrypt — are).

use std::fmt;
use std::time::{Duration, Instant};

use super::value::Value;

/// Evaluation steps (nodes walked, functions called, range iterations)
/// between two readings of the clock. A step costs some tens of
/// nanoseconds, so the deadline is noticed within a millisecond or so,
/// while reading the clock (~25 ns) costs well under 1 % of the work.
pub const CLOCK_EVERY: u32 = 4096;

/// What an operator may bound in one render. `None` = no limit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Limits {
    /// Bytes the template executions of one render may write, counting
    /// every output buffer: each file's, and those `include` and `tpl`
    /// build their strings in. Also the most any single string or list
    /// made by a function may hold (so `repeat`, `until`, `join` … fail
    /// before allocating more).
    pub max_output: Option<u64>,
    /// How deep `include` and `tpl` calls may nest (any names). Helm's own
    /// limit, 1000 nested `include`s of one name, applies regardless.
    pub max_depth: Option<usize>,
    /// Wall time one render may take.
    pub timeout: Option<Duration>,
}

impl Limits {
    /// No limits beyond Helm's: what `helm template` does.
    pub const fn unlimited() -> Limits {
        Limits {
            max_output: None,
            max_depth: None,
            timeout: None,
        }
    }

    /// Limits for unattended rendering (an operator): 64 MiB of output,
    /// `include`/`tpl` nested 100 deep, 60 seconds. The largest real
    /// charts known (kube-prometheus-stack, the corpus) write a few MiB,
    /// nest helpers less than 20 deep and render in well under a second.
    pub const fn operator() -> Limits {
        Limits {
            max_output: Some(64 << 20),
            max_depth: Some(100),
            timeout: Some(Duration::from_secs(60)),
        }
    }

    /// Whether any limit is set.
    pub fn is_unlimited(&self) -> bool {
        *self == Limits::unlimited()
    }
}

/// Which limit a render hit; `Display` is the error message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LimitHit {
    Output(u64),
    Depth(usize),
    Time(Duration),
}

impl fmt::Display for LimitHit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LimitHit::Output(n) => {
                write!(f, "rendering exceeded the output limit of {}", ByteSize(*n))
            }
            LimitHit::Depth(n) => {
                write!(f, "rendering exceeded the include/tpl nesting limit of {n}")
            }
            LimitHit::Time(d) => {
                write!(f, "rendering took longer than {}", GoDuration(*d))
            }
        }
    }
}

/// A byte count as people write limits: `64 MiB`, `512 KiB`, `1000 bytes`.
pub struct ByteSize(pub u64);

impl fmt::Display for ByteSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0;
        for (unit, shift) in [("GiB", 30), ("MiB", 20), ("KiB", 10)] {
            if n >= 1 << shift && n.is_multiple_of(1 << shift) {
                return write!(f, "{} {unit}", n >> shift);
            }
        }
        write!(f, "{n} bytes")
    }
}

/// A duration as Go's `time.Duration.String` prints whole milliseconds
/// and up (`30s`, `1m0s`, `1.5s`, `250ms`), the form the flags take.
pub struct GoDuration(pub Duration);

impl fmt::Display for GoDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = self.0.as_millis();
        if ms < 1000 {
            return write!(f, "{ms}ms");
        }
        let (h, m) = (ms / 3_600_000, ms / 60_000 % 60);
        let (s, frac) = (ms / 1000 % 60, ms % 1000);
        if h > 0 {
            write!(f, "{h}h")?;
        }
        if h > 0 || m > 0 {
            write!(f, "{m}m")?;
        }
        write!(f, "{s}")?;
        if frac > 0 {
            let digits = format!("{frac:03}");
            write!(f, ".{}", digits.trim_end_matches('0'))?;
        }
        f.write_str("s")
    }
}

/// The running count of one render against its [`Limits`], kept in the
/// render's `Env`. Interior mutability: the evaluator and the functions
/// see the environment through shared references.
#[derive(Debug)]
pub(crate) struct Budget {
    limits: Limits,
    /// `max_output`, or `u64::MAX`: the compare needs no branch on `None`.
    output_cap: u64,
    depth_cap: usize,
    written: std::cell::Cell<u64>,
    depth: std::cell::Cell<usize>,
    steps: std::cell::Cell<u32>,
    deadline: std::cell::Cell<Option<Instant>>,
}

impl Budget {
    pub(crate) fn new(limits: Limits) -> Budget {
        Budget {
            limits,
            output_cap: limits.max_output.unwrap_or(u64::MAX),
            depth_cap: limits.max_depth.unwrap_or(usize::MAX),
            written: Default::default(),
            depth: Default::default(),
            steps: Default::default(),
            deadline: Default::default(),
        }
    }

    pub(crate) fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Start a render: counts from zero, the clock from now.
    pub(crate) fn begin(&self) {
        self.written.set(0);
        self.depth.set(0);
        self.steps.set(0);
        self.deadline
            .set(self.limits.timeout.map(|t| Instant::now() + t));
    }

    /// Count `n` bytes written.
    #[inline]
    pub(crate) fn write(&self, n: usize) -> Result<(), LimitHit> {
        let w = self.written.get().saturating_add(n as u64);
        self.written.set(w);
        if w > self.output_cap {
            return Err(LimitHit::Output(self.output_cap));
        }
        Ok(())
    }

    /// Whether one value of `n` bytes may be made.
    #[inline]
    pub(crate) fn fits(&self, n: u64) -> Result<(), LimitHit> {
        if n > self.output_cap {
            return Err(LimitHit::Output(self.output_cap));
        }
        Ok(())
    }

    /// One evaluation step; the clock is read every [`CLOCK_EVERY`].
    #[inline]
    pub(crate) fn step(&self) -> Result<(), LimitHit> {
        let s = self.steps.get().wrapping_add(1);
        self.steps.set(s);
        if s.is_multiple_of(CLOCK_EVERY) {
            return self.check_clock();
        }
        Ok(())
    }

    /// Have the next step read the clock (after a possibly slow call).
    pub(crate) fn soon(&self) {
        self.steps.set(CLOCK_EVERY - 1);
    }

    fn check_clock(&self) -> Result<(), LimitHit> {
        let Some(t) = self.limits.timeout else {
            return Ok(());
        };
        let now = Instant::now();
        match self.deadline.get() {
            Some(d) if now > d => Err(LimitHit::Time(t)),
            Some(_) => Ok(()),
            // An environment used without `begin`: the clock starts here.
            None => {
                self.deadline.set(Some(now + t));
                Ok(())
            }
        }
    }

    /// Enter an `include` or `tpl`; [`Budget::leave`] when it returns.
    pub(crate) fn enter(&self) -> Result<(), LimitHit> {
        let d = self.depth.get();
        if d >= self.depth_cap {
            return Err(LimitHit::Depth(self.depth_cap));
        }
        self.depth.set(d + 1);
        Ok(())
    }

    pub(crate) fn leave(&self) {
        self.depth.set(self.depth.get().saturating_sub(1));
    }
}

/// Functions that write a whole value out (or copy it whole): a list or
/// map that holds the same nested list twice at each of 40 levels (`$l =
/// list $l $l` in a loop) is small in memory but prints as 2^40 items, so
/// with an output limit their arguments are measured first.
pub(crate) fn writes_whole_values(func: &str) -> bool {
    matches!(
        func,
        "toJson"
            | "mustToJson"
            | "toPrettyJson"
            | "mustToPrettyJson"
            | "toRawJson"
            | "mustToRawJson"
            | "toYaml"
            | "mustToYaml"
            | "toYamlPretty"
            | "toToml"
            | "toString"
            | "printf"
            | "print"
            | "println"
            | "cat"
            | "quote"
            | "squote"
            | "deepCopy"
            | "mustDeepCopy"
            | "fmt"
    )
}

/// Whether `v` written out (as text, JSON or YAML, roughly: strings with
/// their quotes, eight bytes a scalar, a few per entry) exceeds `cap`
/// bytes. Shared parts count each time they appear, as they would print;
/// the walk stops as soon as the count passes `cap`, so it costs at most
/// about `cap / 8` steps.
pub(crate) fn printed_size_exceeds(v: &Value, cap: u64) -> bool {
    let mut size = 0u64;
    let mut todo: Vec<Value> = vec![v.clone()];
    while let Some(v) = todo.pop() {
        size += match &v {
            Value::Str(s) => s.len() as u64 + 2,
            Value::BStr(b) | Value::Bytes(b) => b.len() as u64 + 2,
            Value::List(l) => {
                todo.extend(l.items.iter().cloned());
                2 + l.items.len() as u64
            }
            Value::Map(m) => {
                let m = m.borrow();
                let mut n = 2;
                for (k, item) in m.iter() {
                    n += k.len() as u64 + 4;
                    todo.push(item.clone());
                }
                n
            }
            _ => 8,
        };
        if size > cap {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_limit() {
        assert_eq!(
            LimitHit::Output(64 << 20).to_string(),
            "rendering exceeded the output limit of 64 MiB"
        );
        assert_eq!(
            LimitHit::Output(1000).to_string(),
            "rendering exceeded the output limit of 1000 bytes"
        );
        assert_eq!(
            LimitHit::Time(Duration::from_secs(30)).to_string(),
            "rendering took longer than 30s"
        );
        assert_eq!(
            LimitHit::Time(Duration::from_secs(60)).to_string(),
            "rendering took longer than 1m0s"
        );
        assert_eq!(
            LimitHit::Time(Duration::from_millis(1500)).to_string(),
            "rendering took longer than 1.5s"
        );
        assert_eq!(
            LimitHit::Time(Duration::from_millis(250)).to_string(),
            "rendering took longer than 250ms"
        );
        assert_eq!(
            LimitHit::Depth(100).to_string(),
            "rendering exceeded the include/tpl nesting limit of 100"
        );
    }

    #[test]
    fn default_is_unlimited_and_operator_is_not() {
        assert!(Limits::default().is_unlimited());
        assert!(!Limits::operator().is_unlimited());
        let b = Budget::new(Limits::default());
        b.begin();
        assert!(b.write(usize::MAX).is_ok());
        assert!(b.write(usize::MAX).is_ok());
        assert!(b.fits(u64::MAX).is_ok());
    }

    #[test]
    fn output_counts_across_writes() {
        let b = Budget::new(Limits {
            max_output: Some(10),
            ..Limits::default()
        });
        b.begin();
        assert!(b.write(6).is_ok());
        assert_eq!(b.write(5), Err(LimitHit::Output(10)));
        b.begin();
        assert!(b.write(10).is_ok());
    }

    #[test]
    fn depth_is_nesting_not_calls() {
        let b = Budget::new(Limits {
            max_depth: Some(2),
            ..Limits::default()
        });
        b.begin();
        assert!(b.enter().is_ok());
        assert!(b.enter().is_ok());
        assert_eq!(b.enter(), Err(LimitHit::Depth(2)));
        b.leave();
        assert!(b.enter().is_ok());
    }

    #[test]
    fn deadline_is_read_every_few_thousand_steps() {
        let b = Budget::new(Limits {
            timeout: Some(Duration::ZERO),
            ..Limits::default()
        });
        b.begin();
        std::thread::sleep(Duration::from_millis(2));
        let first = (1..=CLOCK_EVERY).find(|_| b.step().is_err());
        assert_eq!(first, Some(CLOCK_EVERY));
        b.soon();
        assert!(b.step().is_err());
    }
}

//! The render-limit flags shared by `antiopa template` and `antiopa render`
//! (`--render-limits`, `--max-output`, `--max-depth`, `--render-timeout`,
//! each also from the environment), turned into an engine
//! [`Limits`]. Each command picks its own preset when no flag is given:
//! `template` renders as helm does (no limits), `render` as the operator
//! will ([`Limits::operator`]).

use std::time::Duration;

use clap::{Args, ValueEnum};

use crate::engine::Limits;

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Preset {
    /// No limits beyond helm's own (1000 nested includes of one template).
    None,
    /// 64 MiB of output, include/tpl nested 100 deep, 60 seconds.
    Operator,
}

/// Render limits, for one chart render (one module's in `antiopa render`).
#[derive(Args, Debug, Clone, Default)]
pub struct RenderLimitArgs {
    /// Start from these limits (default: none for `template`, operator for `render`).
    #[arg(long = "render-limits", value_enum, env = "ANTIOPA_RENDER_LIMITS")]
    preset: Option<Preset>,
    /// Most bytes one render may write, includes and tpl included (e.g. 64Mi; 0: no limit).
    #[arg(long = "max-output", env = "ANTIOPA_MAX_OUTPUT", value_parser = parse_size)]
    max_output: Option<u64>,
    /// How deep include/tpl calls may nest (0: no limit).
    #[arg(long = "max-depth", env = "ANTIOPA_MAX_DEPTH")]
    max_depth: Option<usize>,
    /// Longest one render may take: a Go duration (30s, 1m) or whole seconds (0: no limit).
    #[arg(long = "render-timeout", env = "ANTIOPA_RENDER_TIMEOUT", value_parser = parse_timeout)]
    timeout: Option<Duration>,
}

impl RenderLimitArgs {
    /// The limits asked for, over `default` when no preset is named; a 0
    /// turns that limit off.
    pub fn limits(&self, default: Limits) -> Limits {
        let mut l = match self.preset {
            None => default,
            Some(Preset::None) => Limits::unlimited(),
            Some(Preset::Operator) => Limits::operator(),
        };
        if let Some(n) = self.max_output {
            l.max_output = (n > 0).then_some(n);
        }
        if let Some(n) = self.max_depth {
            l.max_depth = (n > 0).then_some(n);
        }
        if let Some(t) = self.timeout {
            l.timeout = (!t.is_zero()).then_some(t);
        }
        l
    }
}

/// A byte count: digits with an optional unit (`k`/`Ki`/`KiB`, `M`/`Mi`/`MiB`,
/// `G`/`Gi`/`GiB`; decimal units are powers of 1000, binary of 1024).
fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    let bad = || format!("invalid size {s:?}: expected bytes such as 1048576, 64Mi or 1GiB");
    let n: u64 = digits.parse().map_err(|_| bad())?;
    let mult: u64 = match unit.trim() {
        "" | "B" => 1,
        "k" | "K" | "KB" => 1000,
        "Ki" | "KiB" => 1 << 10,
        "M" | "MB" => 1000 * 1000,
        "Mi" | "MiB" => 1 << 20,
        "G" | "GB" => 1000 * 1000 * 1000,
        "Gi" | "GiB" => 1 << 30,
        _ => return Err(bad()),
    };
    n.checked_mul(mult).ok_or_else(bad)
}

/// Whole seconds, or a Go duration (`90s`, `1m30s`, `500ms`).
fn parse_timeout(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    if let Ok(secs) = t.parse::<u64>() {
        return Ok(Duration::from_secs(secs));
    }
    crate::hooks::cron::parse_go_duration(t).map_err(|e| format!("invalid duration {s:?}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("1048576"), Ok(1 << 20));
        assert_eq!(parse_size("64Mi"), Ok(64 << 20));
        assert_eq!(parse_size("64MiB"), Ok(64 << 20));
        assert_eq!(parse_size("2k"), Ok(2000));
        assert_eq!(parse_size("1Gi"), Ok(1 << 30));
        assert!(parse_size("64 apples").is_err());
        assert!(parse_size("-1").is_err());
        assert!(parse_size("99999999999999Gi").is_err());
    }

    #[test]
    fn timeouts() {
        assert_eq!(parse_timeout("30"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_timeout("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_timeout("250ms"), Ok(Duration::from_millis(250)));
        assert!(parse_timeout("soon").is_err());
    }

    #[test]
    fn presets_and_overrides() {
        let none = RenderLimitArgs::default();
        assert_eq!(none.limits(Limits::unlimited()), Limits::unlimited());
        assert_eq!(none.limits(Limits::operator()), Limits::operator());
        let op = RenderLimitArgs {
            preset: Some(Preset::Operator),
            max_depth: Some(0),
            timeout: Some(Duration::from_secs(5)),
            ..Default::default()
        };
        let l = op.limits(Limits::unlimited());
        assert_eq!(l.max_output, Limits::operator().max_output);
        assert_eq!(l.max_depth, None);
        assert_eq!(l.timeout, Some(Duration::from_secs(5)));
        let off = RenderLimitArgs {
            preset: Some(Preset::None),
            max_output: Some(1000),
            ..Default::default()
        };
        assert_eq!(
            off.limits(Limits::operator()),
            Limits {
                max_output: Some(1000),
                ..Limits::unlimited()
            }
        );
    }
}

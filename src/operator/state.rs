//! What the operator knows of each module and of itself, kept for logs,
//! metrics, the debug API and the status page: a module's phase, its last
//! error and how many times in a row it failed, its last deployed revision,
//! how long its runs take and the drift of its released objects. Written by
//! the converge loop (drift: by the drift task); readers take a snapshot.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

/// Where a module is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "PascalCase")]
pub enum Phase {
    /// Enabled, not run yet.
    Pending,
    /// Its hooks, render or apply are under way.
    Running,
    /// Its last run succeeded.
    Ready,
    /// Its last run failed; a retry is scheduled.
    Failed,
    /// Disabled (its release, if any, uninstalled).
    Disabled,
}

/// One module's state.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ModuleStatus {
    pub phase: Phase,
    /// Why it is (not) enabled, as `module list` says it.
    pub enabled_reason: String,
    /// The last failure's text, until a run succeeds.
    pub last_error: Option<String>,
    /// Failures in a row.
    pub failures: u32,
    /// Runs so far (successful or not).
    pub runs: u64,
    /// The release revision its last successful run left deployed.
    pub revision: Option<i64>,
    /// How long the last run took.
    pub last_run: Option<Duration>,
    /// When the last run ended.
    pub last_run_at: Option<SystemTime>,
    /// When a failed module is tried again.
    pub retry_at: Option<SystemTime>,
    /// Drift of its released objects (`None`: not watched).
    pub drift: Option<crate::drift::ModuleDrift>,
}

impl Default for ModuleStatus {
    fn default() -> Self {
        ModuleStatus {
            phase: Phase::Pending,
            enabled_reason: String::new(),
            last_error: None,
            failures: 0,
            runs: 0,
            revision: None,
            last_run: None,
            last_run_at: None,
            retry_at: None,
            drift: None,
        }
    }
}

/// The operator's own state.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Status {
    /// By module name.
    pub modules: BTreeMap<String, ModuleStatus>,
    /// Converges completed (every enabled module run once each).
    pub converges: u64,
    /// The first converge has completed (`/readyz`).
    pub first_converge_done: bool,
    /// A failing global hook or discovery, until a converge succeeds.
    pub global_error: Option<String>,
    /// The last ConfigMap edit refused, until a good one arrives.
    pub config_error: Option<String>,
    /// ConfigMap edits refused so far (`config_values_errors_total`).
    pub config_errors: u64,
    /// Drift counters and restore latencies, updated in place.
    pub drift_metrics: crate::drift::Metrics,
}

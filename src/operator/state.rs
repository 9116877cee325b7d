//! What the operator knows of each module and of itself, kept for logs,
//! metrics, the debug API and the status page: a module's phase, its last
//! error and how many times in a row it failed, its last deployed revision,
//! how long its runs take and the drift of its released objects; the hook
//! run queues; the health of every shared watch of the kubernetes bindings;
//! whether this replica leads.
//! Written by the converge loop, the queues' workers, the watch tasks and
//! the drift task; readers take a snapshot.

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
    /// Archived through its ConfigMap key (`<module-name>-archived`), or
    /// disabled with its release archived: workloads deleted, claims and
    /// history kept; not run until the key goes.
    Archived,
    /// Enabled, but a module it requires (`module.yaml`) is disabled or
    /// not deployed: not run until that one is.
    Waiting,
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
    /// In `Waiting`: for which modules, and why (`waiting for 'db' (disabled)`).
    pub waiting_for: Option<String>,
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
            waiting_for: None,
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
    /// The operator's ConfigMap has been read (present or missing): a
    /// standby's cache is warm (`/readyz`).
    pub config_read: bool,
    /// A failing global hook or discovery, until a converge succeeds.
    pub global_error: Option<String>,
    /// The last ConfigMap edit refused, until a good one arrives.
    pub config_error: Option<String>,
    /// ConfigMap edits refused so far (`config_values_errors_total`).
    pub config_errors: u64,
    /// The hook run queues, `main` first (addon-operator's `queue list`).
    pub queues: Vec<QueueStatus>,
    /// Drift counters and restore latencies, updated in place.
    pub drift_metrics: crate::drift::Metrics,
    /// The shared watches of the kubernetes bindings, by key.
    pub watches: Vec<WatchHealth>,
    /// Watch restarts after a failure (a broken connection, a silent one,
    /// an error), all watches, since start.
    pub watch_restarts_total: u64,
    /// Relists after the initial list (restarts, `410 Expired`, a binding
    /// joining, a kind coming back), all watches, since start.
    pub watch_relists_total: u64,
    /// Watches restarting or failed now (`Restarting` or `Failed`).
    pub watches_dead: u64,
    /// With `--leader-elect`: this replica's identity and whether it leads.
    pub leader: Option<LeaderStatus>,
}

/// Where this replica stands in the leader election.
#[derive(Clone, Debug, serde::Serialize)]
pub struct LeaderStatus {
    /// Its `holderIdentity` in the Lease.
    pub identity: String,
    /// It holds the Lease now; a standby (`false`) writes nothing.
    pub leading: bool,
}

/// One queue, as addon-operator's `/queue/list` shows it.
#[derive(Clone, Debug, Default, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueStatus {
    pub name: String,
    /// Tasks queued, the one running included.
    pub tasks_count: usize,
    /// What the queue does now (empty when idle): `run …`, `sleep after
    /// fail for 5.3s (attempt 1)`, `waiting for Synchronization`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub status: String,
    /// The head first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tasks: Vec<QueueTask>,
}

/// One task of a queue.
#[derive(Clone, Debug, serde::Serialize)]
pub struct QueueTask {
    /// From 1, the head first.
    pub index: usize,
    pub description: String,
}

/// Where a shared watch is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "PascalCase")]
pub enum WatchState {
    /// Resolving its kind, listing or opening the watch for the first time.
    Starting,
    /// Listed, and the watch delivers.
    Synced,
    /// Its kind is not served (its CRD not installed, or deleted): it
    /// starts when the kind appears.
    WaitingForKind,
    /// It stopped delivering (`last_error` says why) and is being listed
    /// and watched again.
    Restarting,
    /// Restarts keep failing (5 in a row, `last_error`); still retried,
    /// with backoff up to 30 s.
    Failed,
}

/// One shared watch: what it asks the server, who uses it, and whether it
/// delivers.
#[derive(Clone, Debug, serde::Serialize)]
pub struct WatchHealth {
    /// Tells a watch from a later one with the same key.
    #[serde(skip)]
    pub id: u64,
    /// What the server is asked (apiVersion, kind, namespaces, selectors),
    /// the watch's identity.
    pub key: String,
    /// The kind as the bindings name it (resolved: `Kind.group/version`
    /// once served).
    pub kind: String,
    /// Namespaces watched; empty: all.
    pub namespaces: Vec<String>,
    /// The bindings on it (`module/hook: binding`, `hook: binding` for a
    /// global hook).
    pub bindings: Vec<String>,
    pub state: WatchState,
    /// When the watch started (its age is now minus this).
    pub started_at: SystemTime,
    /// When the server last sent anything (an object event or a bookmark).
    pub last_event_at: Option<SystemTime>,
    /// Objects the watch holds (the most over its bindings).
    pub objects: usize,
    /// Relists after the initial list.
    pub relists: u64,
    /// Restarts after a failure.
    pub restarts: u64,
    /// Why it last stopped delivering, or why its kind is not served.
    pub last_error: Option<String>,
}

/// Hook runs kept per module for the status page: the newest
/// [`HOOK_RUNS_KEPT`] of each (global hooks under `None`), stderr tails
/// bounded by the session, metrics dropped.
#[derive(Debug, Default)]
pub struct HookHistory {
    by_module: BTreeMap<Option<String>, std::collections::VecDeque<crate::module::HookRunRecord>>,
}

/// Hook runs kept per module (and for the global hooks).
pub const HOOK_RUNS_KEPT: usize = 10;

impl HookHistory {
    pub fn record(&mut self, runs: &[crate::module::HookRunRecord]) {
        for r in runs {
            let kept = self.by_module.entry(r.module.clone()).or_default();
            if kept.len() == HOOK_RUNS_KEPT {
                kept.pop_front();
            }
            let mut r = r.clone();
            r.metrics = Vec::new();
            kept.push_back(r);
        }
    }

    /// The runs kept of `module`'s hooks (`None`: the global hooks),
    /// newest first.
    pub fn of(&self, module: Option<&str>) -> Vec<crate::module::HookRunRecord> {
        self.by_module
            .get(&module.map(str::to_string))
            .map(|k| k.iter().rev().cloned().collect())
            .unwrap_or_default()
    }

    /// Forgets the runs of modules not in `known` (gone from the tree).
    pub fn retain(&mut self, known: impl Fn(&str) -> bool) {
        self.by_module
            .retain(|m, _| m.as_deref().is_none_or(&known));
    }
}

//! `antiopa run`: the operator. It converges a modules tree into the
//! cluster, in addon-operator's order, and keeps it converged:
//!
//! - **Converge** ([`Operator::converge`]): global `onStartup` (first time)
//!   and `beforeAll` hooks, discovery and enabled state, ModuleDelete for
//!   releases whose module is gone or disabled (`beforeDeleteHelm`,
//!   uninstall, `afterDeleteHelm`), ModuleRun for every enabled module in
//!   module order (modules of equal order together, bounded), then
//!   `afterAll` hooks; hooks that change global values converge again.
//! - **ModuleRun** ([`module_run`]): `onStartup` (first run, or on
//!   enablement), `beforeHelm`, values, the chart rendered, a release
//!   written only when the render differs from the deployed one, then
//!   `afterHelm` (changed values run the module again).
//! - **Config** ([`configmap`]): the ConfigMap is watched; `global` or an
//!   `*Enabled` key converges again, one module's section re-runs that
//!   module alone, a bad edit is reported and never applied.
//! - **Isolation**: every module has its own schedule. A failing module is
//!   retried with addon-operator's backoff ([`backoff`]) while the others
//!   and the global hooks go on; disabling it always wins.
//! - **Schedules** ([`schedule`]): the `schedule` bindings of the global
//!   hooks and of the enabled modules' hooks fire on their crontabs; a
//!   module hook that changes its module's values runs the module again, a
//!   global hook that changes global values converges again.
//! - **Kubernetes bindings** ([`kube_events`]): one watch per kubernetes
//!   binding of the global hooks and of the enabled modules' hooks keeps
//!   its snapshot for every hook run; after the initial list, events run
//!   the hook with an `Event` context, and changed values run its module
//!   again (a global hook's: converge). A watch that stops delivering
//!   (broken, silent past its liveness deadline) is restarted and
//!   re-synchronized; a kind whose CRD appears later starts then; each
//!   watch's health is in [`Status::watches`].
//! - **Hook outputs** ([`patch`]): the kubernetes operations every hook
//!   run writes (`KUBERNETES_PATCH_PATH`) are executed after it.
//! - **Module directories** are rescanned periodically and on a reload
//!   signal; a changed tree is loaded afresh and converged.
//! - **Shutdown**: when the shutdown token fires, no new work starts; the
//!   module runs under way finish (within a grace period), so no release
//!   is left pending by this process.
//!
//! The operator holds one context ([`Ctx`]) with its dependencies; the
//! synchronous session (hooks, values, renders) runs on blocking threads,
//! the cluster side on the caller's tokio runtime.

pub mod backoff;
pub mod configmap;
mod kube_events;
mod module_run;
mod patch;
pub mod render;
mod schedule;
pub mod state;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant, SystemTime};

use tokio::sync::{Notify, watch};
use tokio_util::sync::CancellationToken;

use crate::chart::Limits;
use crate::chart::workers::Pool;
use crate::cluster::Cluster;
use crate::hooks::{BindingType, RunOptions};
use crate::module::{ModuleError, ModulesSettings, OfflineConfig, Session};
use crate::release;
use configmap::ConfigSource;
pub use kube_events::WatchOptions;
pub use state::{ModuleStatus, Phase, Status, WatchHealth, WatchState};

/// How long a converge waits for new kubernetes bindings' initial lists
/// before their hooks run with what is listed so far.
const KUBE_SYNC_WAIT: Duration = Duration::from_secs(10);

/// The label every release the operator writes carries (value: the
/// module's name): how it tells its releases from others in the namespace.
pub const MODULE_LABEL: &str = "antiopa.io/module";

/// How the operator runs (`antiopa run`'s flags and environment).
#[derive(Clone, Debug)]
pub struct Settings {
    /// Release namespace, where the ConfigMap lives too
    /// (`ADDON_OPERATOR_NAMESPACE`).
    pub namespace: String,
    /// `ADDON_OPERATOR_CONFIG_MAP`.
    pub config_map: String,
    pub modules: ModulesSettings,
    /// How hooks run (tmp dir, timeouts, output limits, jq sandbox).
    pub hooks: RunOptions,
    /// Render limits per module.
    pub limits: Limits,
    /// `HELM_HISTORY_MAX`.
    pub history_max: usize,
    /// Converge once and return (failures are errors, not retried).
    pub once: bool,
    /// Modules of equal order applied at once.
    pub parallel: usize,
    /// How often module directories are looked at for changes.
    pub rescan_interval: Option<Duration>,
    /// How long chart hooks (Jobs) may take (`HELM_TIMEOUT`).
    pub chart_hook_timeout: Duration,
    /// Age after which another process's pending release record counts as
    /// abandoned.
    pub lock_timeout: Duration,
    /// How long module runs under way may take to finish after shutdown.
    pub shutdown_grace: Duration,
    /// How watches of kubernetes bindings tell a dead connection from a
    /// quiet one.
    pub watch: WatchOptions,
}

impl Settings {
    /// Defaults as addon-operator's, for namespace `namespace`.
    pub fn new(namespace: &str, modules: ModulesSettings, hooks: RunOptions) -> Settings {
        Settings {
            namespace: namespace.to_string(),
            config_map: "addon-operator".into(),
            modules,
            hooks,
            limits: Limits::operator(),
            history_max: 10,
            once: false,
            parallel: 4,
            rescan_interval: Some(Duration::from_secs(15)),
            chart_hook_timeout: Duration::from_secs(20 * 60),
            lock_timeout: Duration::from_secs(600),
            shutdown_grace: Duration::from_secs(30),
            watch: WatchOptions::default(),
        }
    }
}

/// Why the operator stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum OperatorError {
    /// The modules tree cannot be loaded at start.
    #[error(transparent)]
    Module(#[from] ModuleError),
    /// `--once`: what failed.
    #[error("{0}")]
    Failed(String),
}

/// What the caller signals to a running operator.
#[derive(Clone, Default)]
pub struct Signals {
    /// Stop: finish the runs under way, start nothing new.
    pub shutdown: CancellationToken,
    /// Look at the module directories again now (SIGHUP).
    pub reload: Arc<Notify>,
}

/// The operator's dependencies, shared by its tasks.
#[derive(Clone)]
pub(crate) struct Ctx {
    settings: Arc<Settings>,
    cluster: Cluster,
    session: Arc<Mutex<Session>>,
    status: Arc<RwLock<Status>>,
    /// Render helpers, sized to the CPU quota.
    pool: Arc<Pool>,
}

impl Ctx {
    /// Runs `f` on the session, on a blocking thread with the render pool
    /// entered (hooks are processes, renders are CPU work).
    async fn with_session<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Session) -> T + Send + 'static,
    ) -> T {
        let session = self.session.clone();
        let pool = self.pool.clone();
        let task = tokio::task::spawn_blocking(move || {
            let mut s = session.lock().unwrap_or_else(|p| p.into_inner());
            pool.enter(|| f(&mut s))
        });
        match task.await {
            Ok(v) => v,
            Err(e) => std::panic::resume_unwind(e.into_panic()),
        }
    }

    /// Executes the kubernetes operations the hooks run since the last
    /// call wrote ([`patch`]).
    async fn execute_hook_operations(&self) -> Result<(), String> {
        let batch = self.with_session(|s| s.take_kube_operations()).await;
        if batch.is_empty() {
            return Ok(());
        }
        patch::execute(&self.cluster, &self.settings.hooks.jq, &batch).await
    }

    fn status(&self) -> std::sync::RwLockWriteGuard<'_, Status> {
        self.status.write().unwrap_or_else(|p| p.into_inner())
    }

    fn module_status<R>(&self, name: &str, f: impl FnOnce(&mut ModuleStatus) -> R) -> R {
        f(self.status().modules.entry(name.to_string()).or_default())
    }
}

/// An error text on one log line: Go-style multi-errors ("1 error
/// occurred:\n\t* …") keep their parts, joined.
fn one_line(text: &str) -> String {
    text.lines()
        .map(|l| l.trim().trim_start_matches("* "))
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Hook and script output, as addon-operator logs it.
fn hook_log(line: &str) {
    tracing::info!(target: "antiopa::hook", "{line}");
}

/// What is due, and when.
#[derive(Default)]
struct Work {
    /// A converge of every module.
    converge_at: Option<Instant>,
    converge_failures: u32,
    /// Module runs, by module.
    modules: BTreeMap<String, Instant>,
}

impl Work {
    fn next_due(&self) -> Option<Instant> {
        self.converge_at
            .into_iter()
            .chain(self.modules.values().copied())
            .min()
    }

    fn is_empty(&self) -> bool {
        self.converge_at.is_none() && self.modules.is_empty()
    }
}

/// The converge loop's state.
struct Operator {
    ctx: Ctx,
    signals: Signals,
    config_rx: watch::Receiver<ConfigSource>,
    /// The ConfigMap data in force (the last good one).
    config_data: Option<BTreeMap<String, String>>,
    work: Work,
    /// Global `onStartup` hooks have run for this session.
    global_started: bool,
    /// Modules enabled after the last converge.
    enabled: BTreeSet<String>,
    /// Module directories as last loaded.
    fingerprint: u64,
    /// `--once`: failures seen.
    failures: Vec<String>,
    /// Schedule bindings in force.
    schedules: schedule::Schedules,
    /// Kubernetes bindings' watches in force.
    kube: kube_events::KubeWatches,
}

/// Runs the operator until `signals.shutdown` (or, with `once`, one
/// converge). `status` is kept current for the caller (metrics, debug
/// API, status page).
pub async fn run(
    settings: Settings,
    cluster: Cluster,
    signals: Signals,
    status: Arc<RwLock<Status>>,
) -> Result<(), OperatorError> {
    let settings = Arc::new(settings);
    let s = settings.clone();
    let (session, fingerprint) = tokio::task::spawn_blocking(move || {
        let fp = fingerprint(&s.modules);
        Session::load(&s.modules, OfflineConfig::default(), s.hooks.clone()).map(|x| (x, fp))
    })
    .await
    .map_err(|e| OperatorError::Failed(format!("loading the modules: {e}")))??;
    tracing::info!(
        modules = session.tree.modules.len(),
        namespace = %settings.namespace,
        "modules discovered"
    );
    let config_rx = configmap::watch_config(
        &cluster,
        &settings.namespace,
        &settings.config_map,
        signals.shutdown.clone(),
    );
    let kube = kube_events::KubeWatches::new(status.clone(), settings.watch);
    let mut op = Operator {
        ctx: Ctx {
            settings,
            cluster,
            session: Arc::new(Mutex::new(session)),
            status,
            pool: Arc::new(Pool::for_this_process()),
        },
        signals,
        config_rx,
        config_data: None,
        work: Work::default(),
        global_started: false,
        enabled: BTreeSet::new(),
        fingerprint,
        failures: Vec::new(),
        schedules: schedule::Schedules::default(),
        kube,
    };
    op.set_live_snapshots();
    op.run().await
}

impl Operator {
    async fn run(&mut self) -> Result<(), OperatorError> {
        let shutdown = self.signals.shutdown.clone();
        let reload = self.signals.reload.clone();
        let rescan = self.ctx.settings.rescan_interval;
        let mut next_rescan = rescan.map(|d| Instant::now() + d);
        loop {
            if shutdown.is_cancelled() {
                tracing::info!("shutting down");
                return Ok(());
            }
            if self.config_rx.has_changed().unwrap_or(false) {
                self.take_config().await;
            }
            let now = Instant::now();
            if self.ctx.settings.once
                && self.config_data.is_none()
                && let Some(e) = self.ctx.status().config_error.clone()
            {
                return Err(OperatorError::Failed(e));
            }
            if self.config_data.is_some() {
                if self.work.converge_at.is_some_and(|t| t <= now) {
                    self.converge().await;
                    continue;
                }
                let due: Vec<String> = self
                    .work
                    .modules
                    .iter()
                    .filter(|(_, t)| **t <= now)
                    .map(|(m, _)| m.clone())
                    .collect();
                if !due.is_empty() {
                    self.run_modules(due).await;
                    continue;
                }
                let fired = self.schedules.take_due(chrono::Utc::now());
                if !fired.is_empty() {
                    self.run_schedules(fired).await;
                    continue;
                }
                let events = self.kube.take_ready();
                if !events.is_empty() {
                    self.run_kube_events(events).await;
                    continue;
                }
                if self.ctx.settings.once && self.work.is_empty() {
                    return match self.failures.is_empty() {
                        true => Ok(()),
                        false => Err(OperatorError::Failed(self.failures.join("\n"))),
                    };
                }
            }
            let next_schedule = self
                .schedules
                .next_due()
                .map(|t| schedule::instant_at(t, chrono::Utc::now(), now));
            let wake = [self.work.next_due(), next_rescan, next_schedule]
                .into_iter()
                .flatten()
                .min()
                .unwrap_or_else(|| now + Duration::from_secs(3600));
            tokio::select! {
                _ = shutdown.cancelled() => {}
                r = self.config_rx.changed() => match r {
                    Ok(()) => self.take_config().await,
                    // The watch task ended: only at shutdown.
                    Err(_) => shutdown.cancelled().await,
                },
                ev = self.kube.recv(), if self.config_data.is_some() => {
                    self.run_kube_events(vec![ev]).await;
                }
                _ = reload.notified() => {
                    tracing::info!("reload requested: looking at the module directories");
                    self.rescan(true).await;
                }
                _ = tokio::time::sleep_until(wake.into()) => {
                    if next_rescan.is_some_and(|t| t <= Instant::now()) {
                        self.rescan(false).await;
                        next_rescan = rescan.map(|d| Instant::now() + d);
                    }
                }
            }
        }
    }

    /// A new ConfigMap state: checked, then in force, or refused whole.
    async fn take_config(&mut self) {
        let Some(data) = self.config_rx.borrow_and_update().data() else {
            return;
        };
        if self.config_data.as_ref() == Some(&data) {
            return;
        }
        let name = self.ctx.settings.config_map.clone();
        let parsed = OfflineConfig::from_data(data.clone());
        let delta = match parsed {
            Ok(cfg) => self.ctx.with_session(move |s| s.set_config(cfg)).await,
            Err(e) => Err(ModuleError::Config {
                path: format!("ConfigMap {name}"),
                message: e,
            }),
        };
        let delta = match delta {
            Ok(d) => d,
            Err(e) => {
                let first = self.config_data.is_none();
                tracing::error!(
                    configmap = %self.ctx.settings.config_map,
                    "config refused, {}: {}",
                    if first { "nothing converges until it is fixed" } else { "keeping the last good config" },
                    one_line(&e.to_string())
                );
                let mut st = self.ctx.status();
                st.config_errors += 1;
                st.config_error = Some(e.to_string());
                // A section that fails its module's schema shows on the module too.
                if let ModuleError::Values { module, .. } = &e
                    && let Some(m) = st.modules.get_mut(module)
                {
                    m.last_error = Some(format!("config refused: {e}"));
                }
                return;
            }
        };
        self.ctx.status().config_error = None;
        let first = self.config_data.is_none();
        self.config_data = Some(data);
        let now = Instant::now();
        if first || delta.reconverge {
            if !first {
                tracing::info!("config changed: global section or enabled flags; converging");
            }
            self.work.converge_at = Some(now);
        }
        for m in delta.modules {
            if !first && self.enabled.contains(&m) {
                tracing::info!(module = %m, "config changed: module section; running it again");
                self.work.modules.insert(m, now);
            }
        }
    }

    /// Looks at the module directories; when they changed (or `force`),
    /// loads the tree afresh (as a restart would) and converges.
    async fn rescan(&mut self, force: bool) {
        let settings = self.ctx.settings.clone();
        let fp = tokio::task::spawn_blocking(move || fingerprint(&settings.modules))
            .await
            .unwrap_or_default();
        if fp == self.fingerprint && !force {
            return;
        }
        let settings = self.ctx.settings.clone();
        let config = self.config_data.clone().unwrap_or_default();
        let loaded = tokio::task::spawn_blocking(move || {
            let cfg = OfflineConfig::from_data(config).unwrap_or_default();
            Session::load(&settings.modules, cfg, settings.hooks.clone())
        })
        .await;
        match loaded {
            Ok(Ok(session)) => {
                tracing::info!(
                    modules = session.tree.modules.len(),
                    "module directories changed: loaded again"
                );
                *self.ctx.session.lock().unwrap_or_else(|p| p.into_inner()) = session;
                self.fingerprint = fp;
                self.global_started = false;
                // The hooks are loaded afresh: the converge sets them again.
                self.schedules.clear();
                self.kube.clear();
                self.set_live_snapshots();
                self.work.converge_at = Some(Instant::now());
            }
            Ok(Err(e)) => {
                tracing::error!(
                    "module directories changed but cannot be loaded: {e}; keeping the modules loaded before"
                );
                self.ctx.status().global_error = Some(e.to_string());
                self.fingerprint = fp;
            }
            Err(e) => tracing::error!("loading the module directories: {e}"),
        }
    }

    /// One converge of every module (see the module comment).
    async fn converge(&mut self) {
        self.work.converge_at = None;
        let started = Instant::now();
        let first = !self.global_started;
        if first {
            // Global hooks' Synchronization runs with the initial lists.
            self.refresh_kube().await;
        }
        let view = self.ctx.with_session(move |s| enabled_view(s, first)).await;
        let view = match view {
            Ok(v) => v,
            Err(e) => return self.converge_failed(format!("global hooks: {e}")),
        };
        if let Err(e) = self.ctx.execute_hook_operations().await {
            return self.converge_failed(format!("global hooks: {e}"));
        }
        self.global_started = true;
        for (name, why) in &view.script_errors {
            tracing::error!(module = %name, "{why}");
            self.ctx.module_status(name, |m| {
                m.phase = Phase::Failed;
                m.last_error = Some(why.clone());
            });
        }
        {
            let mut st = self.ctx.status();
            for (name, on, reason) in &view.modules {
                let m = st.modules.entry(name.clone()).or_default();
                m.enabled_reason = reason.clone();
                if !on && !view.script_errors.contains_key(name) {
                    m.phase = Phase::Disabled;
                    m.last_error = None;
                    m.retry_at = None;
                }
            }
        }

        // ModuleDelete: releases (and modules enabled before) whose module
        // is gone or disabled now. Modules whose `enabled` script failed
        // keep what they have.
        let ns = self.ctx.settings.namespace.clone();
        let releases = match release::names_labelled(&self.ctx.cluster, &ns, MODULE_LABEL).await {
            Ok(r) => r,
            Err(e) => return self.converge_failed(format!("listing releases: {e}")),
        };
        let enabled_now: BTreeSet<String> = view
            .modules
            .iter()
            .filter(|(_, on, _)| *on)
            .map(|(n, _, _)| n.clone())
            .collect();
        let in_tree: BTreeSet<String> = view.modules.iter().map(|(n, _, _)| n.clone()).collect();
        let to_delete: BTreeSet<String> = releases
            .iter()
            .chain(self.enabled.iter())
            .filter(|n| !enabled_now.contains(*n) && !view.script_errors.contains_key(*n))
            .cloned()
            .collect();
        for name in &to_delete {
            self.work.modules.remove(name);
            if let Err(e) = module_run::delete(
                &self.ctx,
                name,
                in_tree.contains(name),
                releases.contains(name),
            )
            .await
            {
                tracing::error!(module = %name, "delete failed: {e}");
                self.ctx
                    .module_status(name, |m| m.last_error = Some(e.clone()));
                return self.converge_failed(format!("module '{name}': delete: {e}"));
            }
        }
        self.enabled = enabled_now;
        // Enabled modules' watches, listed before their Synchronization.
        self.refresh_kube().await;

        // ModuleRun, by order; modules of equal order together.
        let mut groups: BTreeMap<u32, Vec<String>> = BTreeMap::new();
        for (name, order) in &view.order {
            if self.enabled.contains(name) {
                groups.entry(*order).or_default().push(name.clone());
            }
        }
        for (_, names) in groups {
            if self.signals.shutdown.is_cancelled() {
                return;
            }
            for n in &names {
                self.work.modules.remove(n);
            }
            self.run_modules(names).await;
        }
        if self.signals.shutdown.is_cancelled() {
            return;
        }

        let after_all = self
            .ctx
            .with_session(|s| s.run_after_all(&mut hook_log))
            .await;
        let after_all = match after_all {
            Ok(changed) => self
                .ctx
                .execute_hook_operations()
                .await
                .map(|()| changed)
                .map_err(crate::module::ModuleError::Hook),
            Err(e) => Err(e),
        };
        self.refresh_schedules().await;
        match after_all {
            Ok(changed) => {
                self.work.converge_failures = 0;
                {
                    let mut st = self.ctx.status();
                    st.global_error = None;
                    st.converges += 1;
                    st.first_converge_done = true;
                }
                tracing::info!(
                    modules = self.enabled.len(),
                    seconds = started.elapsed().as_secs_f64(),
                    "converged"
                );
                if changed {
                    tracing::info!("afterAll hooks changed global values: converging again");
                    self.work.converge_at = Some(Instant::now());
                } else if !view.script_errors.is_empty() && !self.ctx.settings.once {
                    // Their modules keep what they had; ask again later.
                    self.work.converge_failures += 1;
                    let delay = backoff::delay_with_jitter(self.work.converge_failures);
                    self.work.converge_at = Some(Instant::now() + delay);
                }
                if self.ctx.settings.once {
                    self.failures.extend(view.script_errors.values().cloned());
                }
            }
            Err(e) => return self.converge_failed(format!("afterAll hooks: {e}")),
        }
        self.store_remembered().await;
    }

    /// Takes the schedule bindings of the global hooks and the enabled
    /// modules' hooks (a disabled module's stop). Not with `--once`.
    async fn refresh_schedules(&mut self) {
        if self.ctx.settings.once {
            return;
        }
        let enabled: Vec<String> = self.enabled.iter().cloned().collect();
        let bindings = self
            .ctx
            .with_session(move |s| s.schedule_bindings(&enabled, &mut hook_log))
            .await;
        match bindings {
            Ok(b) => {
                let before = self.schedules.len();
                self.schedules.set(b, chrono::Utc::now());
                if self.schedules.len() != before {
                    tracing::info!(
                        bindings = self.schedules.len(),
                        "schedule bindings in force"
                    );
                }
            }
            Err(e) => tracing::error!("schedule bindings: {e}"),
        }
    }

    /// Gives the session the watches' live snapshots (not with `--once`,
    /// which watches nothing).
    fn set_live_snapshots(&mut self) {
        if self.ctx.settings.once {
            return;
        }
        let live = self.kube.live();
        let mut s = self.ctx.session.lock().unwrap_or_else(|p| p.into_inner());
        s.snapshots = crate::module::SnapshotInput::Live(live);
    }

    /// Puts in force the kubernetes bindings of the global hooks and the
    /// enabled modules' hooks (a disabled module's stop), then waits for
    /// their initial lists. Not with `--once`.
    async fn refresh_kube(&mut self) {
        if self.ctx.settings.once {
            return;
        }
        let enabled: Vec<String> = self.enabled.iter().cloned().collect();
        let bindings = self
            .ctx
            .with_session(move |s| s.kubernetes_bindings(&enabled, &mut hook_log))
            .await;
        let bindings = match bindings {
            Ok(b) => b,
            Err(e) => return tracing::error!("kubernetes bindings: {e}"),
        };
        let before = self.kube.len();
        let started = self.kube.set(
            bindings,
            &self.ctx.cluster,
            &self.ctx.settings.hooks.jq,
            &self.signals.shutdown,
        );
        if self.kube.len() != before {
            tracing::info!(
                bindings = self.kube.len(),
                watches = self.kube.watches(),
                "kubernetes bindings in force"
            );
        }
        let shutdown = self.signals.shutdown.clone();
        let late = tokio::select! {
            late = self.kube.wait_synced(&started, KUBE_SYNC_WAIT) => late,
            _ = shutdown.cancelled() => return,
        };
        if !late.is_empty() {
            tracing::warn!(
                "kubernetes bindings not synchronized within {}s, their hooks see what is listed so far: {}",
                KUBE_SYNC_WAIT.as_secs(),
                late.join(", ")
            );
        }
    }

    /// Runs hooks for kubernetes events: consecutive events of one hook
    /// in one run, then what their values changes ask for.
    async fn run_kube_events(&mut self, events: Vec<kube_events::HookEvent>) {
        let mut batches: Vec<Vec<kube_events::HookEvent>> = Vec::new();
        for ev in events {
            match batches.last_mut() {
                Some(b) if b[0].module == ev.module && b[0].hook == ev.hook => b.push(ev),
                _ => batches.push(vec![ev]),
            }
        }
        for batch in batches {
            if self.signals.shutdown.is_cancelled() {
                return;
            }
            let (module, hook) = (batch[0].module.clone(), batch[0].hook.clone());
            if module.as_ref().is_some_and(|m| !self.enabled.contains(m)) {
                continue;
            }
            let allow_failure = batch.iter().all(|e| e.allow_failure);
            let mut names: Vec<String> = batch.iter().map(|e| e.binding.clone()).collect();
            names.dedup();
            let ctx = crate::hooks::context::combine_contexts(
                batch.into_iter().map(|e| vec![e.context]).collect(),
            );
            let (m, h) = (module.clone(), hook.clone());
            let ran = self
                .ctx
                .with_session(move |s| match &m {
                    Some(m) => s.run_module_hook_by_name(
                        m,
                        &h,
                        BindingType::Kubernetes,
                        &ctx,
                        &mut hook_log,
                    ),
                    None => {
                        s.run_global_hook_by_name(&h, BindingType::Kubernetes, &ctx, &mut hook_log)
                    }
                })
                .await
                .map_err(|e| e.to_string());
            let ops = self.ctx.execute_hook_operations().await;
            let who = match &module {
                Some(m) => format!("module '{m}': hook '{hook}'"),
                None => format!("hook '{hook}'"),
            };
            let binding = names.join(",");
            match ran.and_then(|changed| ops.map(|()| changed)) {
                Ok(changed) => {
                    tracing::info!(binding = %binding, "{who}: kubernetes event run done");
                    if !changed {
                        continue;
                    }
                    let now = Instant::now();
                    match &module {
                        Some(m) => {
                            tracing::info!(module = %m, "kubernetes hook changed the values: running it again");
                            self.work.modules.insert(m.clone(), now);
                        }
                        None => {
                            tracing::info!(
                                "kubernetes hook changed global values: converging again"
                            );
                            self.work.converge_at = Some(now);
                        }
                    }
                }
                Err(e) if allow_failure => {
                    tracing::warn!(binding = %binding, "{who}: kubernetes event run failed (allowFailure): {e}")
                }
                Err(e) => {
                    tracing::error!(binding = %binding, "{who}: kubernetes event run failed: {e}")
                }
            }
        }
    }

    /// Runs the hooks whose schedule bindings fired, one after another,
    /// then what their values changes ask for: a module run, a converge.
    async fn run_schedules(&mut self, fired: Vec<schedule::Firing>) {
        for f in fired {
            if self.signals.shutdown.is_cancelled() {
                return;
            }
            if f.module.as_ref().is_some_and(|m| !self.enabled.contains(m)) {
                continue;
            }
            let (module, hook, indexes) = (f.module.clone(), f.hook.clone(), f.indexes.clone());
            let ran = self
                .ctx
                .with_session(move |s| {
                    s.run_schedule(module.as_deref(), &hook, &indexes, &mut hook_log)
                })
                .await
                .map_err(|e| e.to_string());
            let ops = self.ctx.execute_hook_operations().await;
            let who = match &f.module {
                Some(m) => format!("module '{m}': hook '{}'", f.hook),
                None => format!("hook '{}'", f.hook),
            };
            let binding = f.names.join(",");
            match ran.and_then(|changed| ops.map(|()| changed)) {
                Ok(changed) => {
                    tracing::info!(binding = %binding, "{who}: schedule run done");
                    if !changed {
                        continue;
                    }
                    let now = Instant::now();
                    match &f.module {
                        Some(m) => {
                            tracing::info!(module = %m, "schedule hook changed the values: running it again");
                            self.work.modules.insert(m.clone(), now);
                        }
                        None => {
                            tracing::info!("schedule hook changed global values: converging again");
                            self.work.converge_at = Some(now);
                        }
                    }
                }
                Err(e) if f.allow_failure => {
                    tracing::warn!(binding = %binding, "{who}: schedule run failed (allowFailure): {e}")
                }
                Err(e) => {
                    tracing::error!(binding = %binding, "{who}: schedule run failed: {e}; it runs again at its next time")
                }
            }
        }
    }

    fn converge_failed(&mut self, why: String) {
        self.work.converge_failures += 1;
        let delay = backoff::delay_with_jitter(self.work.converge_failures);
        tracing::error!(
            "converge failed: {}; retrying in {:.1}s",
            one_line(&why),
            delay.as_secs_f64()
        );
        self.ctx.status().global_error = Some(why.clone());
        if self.ctx.settings.once {
            self.failures.push(why);
        } else {
            self.work.converge_at = Some(Instant::now() + delay);
        }
    }

    /// ModuleRuns of `names`, at most `parallel` at a time, each recorded
    /// and, on failure, scheduled again with backoff.
    async fn run_modules(&mut self, names: Vec<String>) {
        let limit = Arc::new(tokio::sync::Semaphore::new(
            self.ctx.settings.parallel.max(1),
        ));
        let mut set = tokio::task::JoinSet::new();
        for name in names {
            self.work.modules.remove(&name);
            if !self.enabled.contains(&name) {
                continue;
            }
            self.ctx.module_status(&name, |m| m.phase = Phase::Running);
            let ctx = self.ctx.clone();
            let limit = limit.clone();
            set.spawn(async move {
                let _permit = limit.acquire_owned().await;
                let t = Instant::now();
                let r = module_run::run(&ctx, &name).await;
                (name, r, t.elapsed())
            });
        }
        let shutdown = self.signals.shutdown.clone();
        let grace = self.ctx.settings.shutdown_grace;
        let deadline = async {
            shutdown.cancelled().await;
            tokio::time::sleep(grace).await;
        };
        tokio::pin!(deadline);
        loop {
            tokio::select! {
                j = set.join_next() => match j {
                    None => break,
                    Some(Ok((name, r, took))) => self.record(&name, r, took),
                    Some(Err(e)) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                    Some(Err(_)) => {}
                },
                _ = &mut deadline => {
                    tracing::warn!("shutdown grace period over: abandoning the module runs under way");
                    set.abort_all();
                }
            }
        }
    }

    fn record(&mut self, name: &str, r: Result<module_run::Ran, String>, took: Duration) {
        let once = self.ctx.settings.once;
        match r {
            Ok(ran) => {
                tracing::info!(
                    module = %name,
                    revision = ran.revision,
                    written = ran.written,
                    seconds = took.as_secs_f64(),
                    "module run done"
                );
                self.ctx.module_status(name, |m| {
                    m.phase = Phase::Ready;
                    m.last_error = None;
                    m.failures = 0;
                    m.runs += 1;
                    m.retry_at = None;
                    m.revision = ran.revision.or(m.revision);
                    m.last_run = Some(took);
                    m.last_run_at = Some(SystemTime::now());
                });
                if ran.values_changed {
                    tracing::info!(module = %name, "afterHelm hooks changed the values: running it again");
                    self.work.modules.insert(name.to_string(), Instant::now());
                }
            }
            Err(e) => {
                let failures = self.ctx.module_status(name, |m| {
                    m.failures += 1;
                    m.failures
                });
                let delay = backoff::delay_with_jitter(failures);
                tracing::error!(
                    module = %name,
                    attempt = failures,
                    "module run failed: {}; retrying in {:.1}s",
                    one_line(&e),
                    delay.as_secs_f64()
                );
                self.ctx.module_status(name, |m| {
                    m.phase = Phase::Failed;
                    m.last_error = Some(e.clone());
                    m.runs += 1;
                    m.last_run = Some(took);
                    m.last_run_at = Some(SystemTime::now());
                    m.retry_at = (!once).then(|| SystemTime::now() + delay);
                });
                if once {
                    self.failures.push(format!("module '{name}': {e}"));
                } else {
                    self.work
                        .modules
                        .insert(name.to_string(), Instant::now() + delay);
                }
            }
        }
    }

    /// Stores in the ConfigMap what must outlive the process: config values
    /// hooks patched, and original-layout `initial_values` output.
    async fn store_remembered(&mut self) {
        let remembered = self.ctx.with_session(|s| s.remembered_config()).await;
        let remembered = match remembered {
            Ok(r) => r,
            Err(e) => {
                tracing::error!("config to remember: {e}");
                return;
            }
        };
        let current = self.config_data.clone().unwrap_or_default();
        let updates: BTreeMap<String, String> = remembered
            .iter()
            .map(|(k, v)| (k.clone(), crate::values::values_to_yaml(v)))
            .filter(|(k, v)| current.get(k) != Some(v))
            .collect();
        if updates.is_empty() {
            return;
        }
        let s = &self.ctx.settings;
        match configmap::store(&self.ctx.cluster, &s.namespace, &s.config_map, &updates).await {
            Ok(()) => {
                let mut data = current;
                data.extend(updates);
                if let Ok(cfg) = OfflineConfig::from_data(data.clone()) {
                    let _ = self.ctx.with_session(move |s| s.set_config(cfg)).await;
                }
                // The watch will echo this state: it is the one in force.
                self.config_data = Some(data);
            }
            Err(e) => {
                tracing::error!(configmap = %s.config_map, "storing remembered config: {}", crate::cluster::error_text(&e))
            }
        }
    }
}

/// What a converge needs of the enabled state.
struct EnabledView {
    /// (name, enabled, why) of every module, in module order.
    modules: Vec<(String, bool, String)>,
    /// (name, order).
    order: Vec<(String, u32)>,
    /// Modules whose `enabled` script failed, with why.
    script_errors: BTreeMap<String, String>,
}

/// Global hooks (`onStartup` the first time, Synchronization, `beforeAll`)
/// and the enabled state of every module.
fn enabled_view(s: &mut Session, first: bool) -> Result<EnabledView, ModuleError> {
    if first {
        s.run_global_hooks(&mut hook_log)?;
    } else {
        s.run_global_binding(BindingType::BeforeAll, &mut hook_log)?;
    }
    let mut script_errors = BTreeMap::new();
    match s.compute_enabled(&mut hook_log) {
        Ok(()) => {}
        Err(ModuleError::EnabledScripts(failed)) => {
            for f in failed {
                script_errors.insert(f.module.clone(), f.to_string());
            }
        }
        Err(e) => return Err(e),
    }
    let modules = s
        .tree
        .modules
        .iter()
        .map(|m| {
            let st = s.enabled.get(&m.name);
            (
                m.name.clone(),
                st.is_some_and(|st| st.enabled),
                st.map(|st| st.reason.clone()).unwrap_or_default(),
            )
        })
        .collect();
    let order = s
        .tree
        .modules
        .iter()
        .map(|m| (m.name.clone(), m.order))
        .collect();
    Ok(EnabledView {
        modules,
        order,
        script_errors,
    })
}

/// A hash of the module directories' file tree (paths, sizes, mtimes,
/// symlink targets), to notice a new image layer or a git-sync flip.
fn fingerprint(settings: &ModulesSettings) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    fn walk(p: &Path, h: &mut impl Hasher, depth: usize) {
        if depth > 32 {
            return;
        }
        p.hash(h);
        if let Ok(target) = std::fs::read_link(p) {
            target.hash(h);
        }
        let Ok(md) = std::fs::metadata(p) else {
            0u8.hash(h);
            return;
        };
        md.len().hash(h);
        md.modified().ok().hash(h);
        if md.is_dir() {
            // Python writes byte code beside imported hook libraries: not
            // a change of the modules.
            let mut entries: Vec<_> = std::fs::read_dir(p)
                .map(|rd| {
                    rd.flatten()
                        .map(|e| e.path())
                        .filter(|p| p.file_name().is_none_or(|n| n != "__pycache__"))
                        .collect()
                })
                .unwrap_or_default();
            entries.sort();
            for e in entries {
                walk(&e, h, depth + 1);
            }
        }
    }
    for d in &settings.modules_dirs {
        walk(d, &mut h, 0);
    }
    if let Some(g) = &settings.global_hooks_dir {
        walk(g, &mut h, 0);
    }
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multi_errors_log_on_one_line() {
        assert_eq!(
            one_line(
                "module 'alpha': validate config values: 1 error occurred:\n\t* alphaConfig.greeting must be of type string: \"number\"\n\n"
            ),
            "module 'alpha': validate config values: 1 error occurred: alphaConfig.greeting must be of type string: \"number\""
        );
    }

    #[test]
    fn the_earliest_work_wakes_the_loop() {
        let now = Instant::now();
        let mut w = Work::default();
        assert!(w.is_empty() && w.next_due().is_none());
        w.modules.insert("a".into(), now + Duration::from_secs(9));
        w.modules.insert("b".into(), now + Duration::from_secs(3));
        w.converge_at = Some(now + Duration::from_secs(5));
        assert_eq!(w.next_due(), Some(now + Duration::from_secs(3)));
    }
}

//! `antiopa run`: the operator. It converges a modules tree into the
//! cluster, in addon-operator's order, and keeps it converged:
//!
//! - **Converge** ([`Operator::converge`]): global `onStartup` (first time)
//!   and `beforeAll` hooks, discovery and enabled state, ModuleDelete for
//!   releases whose module is gone or disabled (`beforeDeleteHelm`,
//!   uninstall, `afterDeleteHelm`), ModuleRun for every enabled module in
//!   module order (modules of equal order together, bounded), then
//!   `afterAll` hooks; hooks that change global values converge again.
//!   Modules archived through their ConfigMap key are archived instead of
//!   run, and their releases never uninstalled ([`archive`]).
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
//! - **Queues** ([`queue`]): schedule and kubernetes hook runs go through
//!   the queue their binding names: `main`, drained here between module
//!   runs, or a named queue running beside it; batched per hook, retried
//!   with backoff at the head of their queue, rate-limited per hook.
//! - **Kubernetes bindings** ([`kube_events`]): one watch per kubernetes
//!   binding of the global hooks and of the enabled modules' hooks keeps
//!   its snapshot for every hook run; after the initial list, events run
//!   the hook with an `Event` context, and changed values run its module
//!   again (a global hook's: converge). A watch that stops delivering
//!   (broken, silent past its liveness deadline) is restarted and
//!   re-synchronized; a kind whose CRD appears later starts then; each
//!   watch's health is in [`Status::watches`].
//! - **Drift** ([`crate::drift`]): after each successful module run, the
//!   objects of its release are watched (metadata only); one deleted is
//!   restored alone, one changed is re-applied or reported per the module's
//!   `driftMode`. Every drift write goes through [`Ctx::drift_writes`].
//! - **Hook outputs** ([`patch`]): the kubernetes operations every hook
//!   run writes (`KUBERNETES_PATCH_PATH`) are executed after it.
//! - **Module directories** are rescanned periodically and on a reload
//!   signal; a changed tree is loaded afresh and converged.
//! - **Shutdown**: when the shutdown token fires, no new work starts; the
//!   module runs under way finish (within a grace period), so no release
//!   is left pending by this process.
//! - **Leader election** ([`leader`], with [`Settings::leader`]): a standby
//!   keeps its config and module directories current but runs no hook and
//!   writes nothing; on taking the Lease it converges at once; on losing
//!   it, the work under way is dropped at its next await and the operator
//!   starts over as at start-up (addon-operator restarts its process).
//!
//! - **HTTP** ([`http`]): `/metrics` ([`metrics`]), `/metrics/hooks`,
//!   `/healthz`, `/readyz`, and the debug API ([`debug`]) on a unix socket.
//!
//! The operator holds one context ([`Ctx`]) with its dependencies; the
//! synchronous session (hooks, values, renders) runs on blocking threads,
//! the cluster side on the caller's tokio runtime.

pub mod archive;
pub mod backoff;
pub mod configmap;
pub mod debug;
mod http;
pub mod install;
mod kube_events;
pub mod leader;
pub mod metrics;
mod module_run;
mod patch;
mod queue;
pub mod render;
mod schedule;
pub mod state;
mod status_api;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant, SystemTime};

use tokio::sync::{Notify, mpsc, watch};
use tokio_util::sync::CancellationToken;

use crate::chart::Limits;
use crate::chart::workers::Pool;
use crate::cluster::Cluster;
use crate::hooks::{BindingType, RunOptions};
use crate::module::{DependencyGraph, ModuleError, ModulesSettings, OfflineConfig, Session};
use crate::release;
use configmap::ConfigSource;
pub use kube_events::WatchOptions;
pub use state::{LeaderStatus, ModuleStatus, Phase, Status, WatchHealth, WatchState};
pub use status_api::{ApiError, HookRun, LastChange, ModulePage, Overview, StatusApi};

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
    /// `host:port` of the HTTP server (metrics, health); `None`: none.
    pub listen: Option<String>,
    /// The debug API's unix socket; `None`: none.
    pub debug_socket: Option<PathBuf>,
    /// `host:port` serving the debug API over HTTP too
    /// (`DEBUG_HTTP_SERVER_ADDR`); `None`: none.
    pub debug_http_addr: Option<String>,
    /// `ADDON_OPERATOR_PROMETHEUS_METRICS_PREFIX`.
    pub metrics_prefix: String,
    /// Run only while holding this Lease (`--leader-elect`).
    pub leader: Option<leader::LeaderSettings>,
    /// How watches of kubernetes bindings tell a dead connection from a
    /// quiet one.
    pub watch: WatchOptions,
    /// Archived module releases older than this are cleaned up.
    pub archive_retention: Duration,
    /// How often the retention sweep looks (and once at start).
    pub archive_sweep_interval: Duration,
    /// The status page's actions need the bearer token in this file
    /// (`--ui-token-file`); `None`: the page is read-only.
    pub ui_token_file: Option<PathBuf>,
    /// Serve the status page to clients on other hosts too
    /// (`--ui-remote`); by default only to loopback ones (a `kubectl
    /// port-forward`, a sidecar).
    pub ui_remote: bool,
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
            listen: None,
            debug_socket: None,
            debug_http_addr: None,
            metrics_prefix: metrics::DEFAULT_PREFIX.to_string(),
            leader: None,
            watch: WatchOptions::default(),
            archive_retention: release::lifecycle::DEFAULT_RETENTION,
            archive_sweep_interval: archive::DEFAULT_SWEEP_INTERVAL,
            ui_token_file: None,
            ui_remote: false,
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
    #[error(transparent)]
    Metrics(#[from] metrics::MetricsError),
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
    metrics: Arc<metrics::Metrics>,
    /// What the loop publishes for the debug API.
    view: Arc<RwLock<debug::View>>,
    /// The drift task (disabled with `--once`).
    drift: crate::drift::Handle,
    /// With leader election: `true` while this replica leads (status page).
    leading: Option<watch::Receiver<bool>>,
    /// Asks the converge loop for a module run (status page), once the
    /// queues exist.
    requests: Arc<std::sync::OnceLock<mpsc::UnboundedSender<queue::Request>>>,
    /// The newest hook runs of each module (status page).
    hook_history: Arc<Mutex<state::HookHistory>>,
}

impl Ctx {
    /// Runs `f` on the session, on a blocking thread with the render pool
    /// entered (hooks are processes, renders are CPU work); the hook runs
    /// it made are logged and recorded in the metrics.
    async fn with_session<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Session) -> T + Send + 'static,
    ) -> T {
        let session = self.session.clone();
        let pool = self.pool.clone();
        let metrics = self.metrics.clone();
        let history = self.hook_history.clone();
        let task = tokio::task::spawn_blocking(move || {
            let mut s = session.lock().unwrap_or_else(|p| p.into_inner());
            let v = pool.enter(|| f(&mut s));
            let runs = s.take_hook_runs();
            drop(s);
            log_hook_runs(&runs);
            metrics.hook_runs(&runs);
            history
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .record(&runs);
            v
        });
        match task.await {
            Ok(v) => v,
            Err(e) => std::panic::resume_unwind(e.into_panic()),
        }
    }

    /// Runs `f` on a blocking thread with the render pool entered, given
    /// the shared session unlocked: for work that takes the lock only for
    /// its own steps, so modules' hooks and renders run side by side.
    async fn with_shared<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Mutex<Session>) -> T + Send + 'static,
    ) -> T {
        let session = self.session.clone();
        let pool = self.pool.clone();
        let metrics = self.metrics.clone();
        let history = self.hook_history.clone();
        let task = tokio::task::spawn_blocking(move || {
            let v = pool.enter(|| f(&session));
            let runs = session
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .take_hook_runs();
            log_hook_runs(&runs);
            metrics.hook_runs(&runs);
            history
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .record(&runs);
            v
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

    /// The one way drift writes to the cluster (restores, Events): the
    /// place to gate them on holding the leader lease.
    /// Drift's writes, allowed only while this replica leads (always
    /// without leader election).
    fn drift_writes(&self, leading: Option<watch::Receiver<bool>>) -> crate::drift::Writes {
        crate::drift::Writes::new(
            self.cluster.clone(),
            Arc::new(move || leading.as_ref().is_none_or(|rx| *rx.borrow())),
        )
    }

    /// Starts the drift task, which reports into the status.
    fn start_drift(
        &mut self,
        shutdown: &CancellationToken,
        leading: Option<watch::Receiver<bool>>,
    ) {
        let status = self.status.clone();
        let sink: crate::drift::engine::StatusSink = Arc::new(move |module, d| {
            let mut st = status.write().unwrap_or_else(|p| p.into_inner());
            let m = st.modules.entry(module.to_string()).or_default();
            m.drift = d.cloned();
        });
        let metrics = self.status().drift_metrics.clone();
        self.drift = crate::drift::start(
            self.drift_writes(leading),
            metrics,
            sink,
            Default::default(),
            shutdown.child_token(),
        );
    }

    fn status(&self) -> std::sync::RwLockWriteGuard<'_, Status> {
        self.status.write().unwrap_or_else(|p| p.into_inner())
    }

    fn module_status<R>(&self, name: &str, f: impl FnOnce(&mut ModuleStatus) -> R) -> R {
        f(self.status().modules.entry(name.to_string()).or_default())
    }

    fn view(&self) -> std::sync::RwLockReadGuard<'_, debug::View> {
        self.view.read().unwrap_or_else(|p| p.into_inner())
    }

    fn view_mut(&self) -> std::sync::RwLockWriteGuard<'_, debug::View> {
        self.view.write().unwrap_or_else(|p| p.into_inner())
    }
}

/// One line per hook run: module, hook, binding, duration, outcome.
fn log_hook_runs(runs: &[crate::module::HookRunRecord]) {
    for r in runs {
        let module = r.module.as_deref().unwrap_or("");
        let seconds = r.duration.as_secs_f64();
        match &r.error {
            None => tracing::info!(
                module = %module,
                hook = %r.hook,
                binding = r.binding.as_str(),
                queue = %r.queue,
                seconds,
                outcome = "ok",
                "hook run"
            ),
            Some(e) => tracing::warn!(
                module = %module,
                hook = %r.hook,
                binding = r.binding.as_str(),
                queue = %r.queue,
                seconds,
                outcome = if r.allow_failure { "allowed error" } else { "error" },
                "hook run failed: {}",
                one_line(e)
            ),
        }
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

    /// The tasks due, soonest first, as the debug API lists them.
    fn tasks(&self, now: Instant) -> Vec<debug::QueuedTask> {
        let due = |t: Instant| t.saturating_duration_since(now).as_secs_f64();
        let mut out: Vec<debug::QueuedTask> = self
            .converge_at
            .map(|t| debug::QueuedTask {
                kind: "ConvergeModules".into(),
                module: None,
                due_in_seconds: due(t),
            })
            .into_iter()
            .chain(self.modules.iter().map(|(m, t)| debug::QueuedTask {
                kind: "ModuleRun".into(),
                module: Some(m.clone()),
                due_in_seconds: due(*t),
            }))
            .collect();
        out.sort_by(|a, b| a.due_in_seconds.total_cmp(&b.due_in_seconds));
        out
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
    /// Which module waits for which, as of the last converge.
    graph: DependencyGraph,
    /// Why the next converge runs (its `activation` label).
    activation: &'static str,
    /// Hook run queues.
    queues: queue::Queues,
    /// With leader election: `true` while this replica leads.
    leading: Option<watch::Receiver<bool>>,
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
    let leadership = settings
        .leader
        .clone()
        .map(|l| leader::Leadership::start(cluster.client().clone(), &settings.namespace, l));
    if let (Some(l), Some(ls)) = (&leadership, &settings.leader) {
        mirror_leadership(
            l.receiver(),
            &ls.identity,
            status.clone(),
            &signals.shutdown,
        );
    }
    let config_rx = configmap::watch_config(
        &cluster,
        &settings.namespace,
        &settings.config_map,
        signals.shutdown.clone(),
    );
    let metrics = Arc::new(metrics::Metrics::new(&settings.metrics_prefix)?);
    let kube = kube_events::KubeWatches::new(status.clone(), settings.watch);
    let mut ctx = Ctx {
        settings,
        cluster,
        session: Arc::new(Mutex::new(session)),
        status,
        pool: Arc::new(Pool::for_this_process()),
        metrics: metrics.clone(),
        view: Arc::default(),
        drift: crate::drift::Handle::disabled(),
        leading: leadership.as_ref().map(|l| l.receiver()),
        requests: Arc::default(),
        hook_history: Arc::default(),
    };
    if !ctx.settings.once {
        ctx.start_drift(&signals.shutdown, leadership.as_ref().map(|l| l.receiver()));
        let leading = leadership.as_ref().map(|l| l.receiver());
        archive::start_retention_sweep(&ctx, &signals.shutdown, leading);
    }
    http::start(&ctx, &signals.shutdown).await;
    // addon-operator's live_ticks: every 10 seconds while the process runs.
    let ticks = signals.shutdown.clone();
    tokio::spawn(async move {
        let mut every = tokio::time::interval(Duration::from_secs(10));
        loop {
            tokio::select! {
                _ = every.tick() => metrics.tick(),
                _ = ticks.cancelled() => return,
            }
        }
    });
    let queues = queue::Queues::new(
        ctx.clone(),
        kube.live(),
        signals.shutdown.clone(),
        leadership.as_ref().map(|l| l.receiver()),
    );
    let _ = ctx.requests.set(queues.requester());
    let mut op = Operator {
        ctx,
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
        queues,
        graph: DependencyGraph::default(),
        activation: metrics::OPERATOR_STARTUP,
        leading: leadership.as_ref().map(|l| l.receiver()),
    };
    op.set_live_snapshots();
    let r = op.run().await;
    // Only once nothing writes any more: the next leader may start.
    if let Some(l) = leadership {
        l.release().await;
    }
    r
}

impl Operator {
    /// Publishes the work due (debug API, `tasks_queue_length`) and what
    /// the loop does now.
    fn publish_queue(&self, doing: &str) {
        let tasks = self.work.tasks(Instant::now());
        self.ctx.metrics.set_queue_length("main", tasks.len());
        let mut v = self.ctx.view_mut();
        v.queue = tasks;
        v.doing = doing.to_string();
    }

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
            let mut main_wait = None;
            if self.ctx.settings.once
                && self.config_data.is_none()
                && let Some(e) = self.ctx.status().config_error.clone()
            {
                return Err(OperatorError::Failed(e));
            }
            let leading = self.is_leading();
            if self.config_data.is_some() && leading {
                if self.work.converge_at.is_some_and(|t| t <= now) {
                    let rx = self.leading.clone();
                    if while_leading(rx, self.converge()).await.is_none() {
                        self.step_down();
                    }
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
                    let rx = self.leading.clone();
                    if while_leading(rx, self.run_modules(due)).await.is_none() {
                        self.step_down();
                    }
                    continue;
                }
                let fired = self.schedules.take_due(chrono::Utc::now());
                self.enqueue_schedules(fired);
                let events = self.kube.take_ready();
                self.enqueue_kube_events(events);
                match self.queues.take_main(now) {
                    queue::Take::Run(task) => {
                        let rx = self.leading.clone();
                        if while_leading(rx, self.run_main(task)).await.is_none() {
                            self.step_down();
                        }
                        continue;
                    }
                    queue::Take::WaitUntil(t) => main_wait = Some(t),
                    queue::Take::Idle => {}
                }
                if self.ctx.settings.once && self.work.is_empty() {
                    return match self.failures.is_empty() {
                        true => Ok(()),
                        false => Err(OperatorError::Failed(self.failures.join("\n"))),
                    };
                }
            }
            self.publish_queue("idle");
            let next_schedule = self
                .schedules
                .next_due()
                .map(|t| schedule::instant_at(t, chrono::Utc::now(), now));
            // A standby has work noted (the first converge) but does none.
            let next_work = self.work.next_due().filter(|_| leading);
            let main_wait = main_wait.filter(|_| leading);
            let wake = [next_work, next_rescan, next_schedule, main_wait]
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
                ev = self.kube.recv(), if self.config_data.is_some() && leading => {
                    self.enqueue_kube_events(vec![ev]);
                }
                now_leading = leadership_changed(&mut self.leading) => {
                    if now_leading {
                        tracing::info!("this replica leads now: converging");
                        self.work.converge_at = Some(Instant::now());
                    } else {
                        self.step_down();
                    }
                }
                req = self.queues.recv() => self.request(req),
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

    /// Without leader election, always; with it, while holding the Lease.
    fn is_leading(&self) -> bool {
        self.leading.as_ref().is_none_or(|rx| *rx.borrow())
    }

    /// The Lease is lost: the work under way has been dropped; forget
    /// what this term started (hooks, watches, schedules) so the next term
    /// starts as the process did, with global `onStartup` hooks.
    fn step_down(&mut self) {
        tracing::warn!("not the leader any more: standing by, writing nothing");
        self.work = Work::default();
        self.global_started = false;
        self.enabled.clear();
        self.schedules.clear();
        self.kube.clear();
        self.queues.clear();
        self.set_live_snapshots();
        // This change is handled; a term that began meanwhile converges.
        if let Some(rx) = &mut self.leading
            && *rx.borrow_and_update()
        {
            self.work.converge_at = Some(Instant::now());
        }
    }

    /// A new ConfigMap state: checked, then in force, or refused whole.
    async fn take_config(&mut self) {
        let Some(data) = self.config_rx.borrow_and_update().data() else {
            return;
        };
        // Its watch has listed: a standby is ready to take over (`/readyz`).
        self.ctx.status().config_read = true;
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
                self.ctx.metrics.config_values_error();
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
        let archived_before = self.config_data.as_ref().map(archived_of);
        let archived_changed = archived_before.is_some_and(|a| a != archived_of(&data));
        self.config_data = Some(data);
        let now = Instant::now();
        if first || delta.reconverge || archived_changed {
            if !first {
                tracing::info!("config changed: global section or enabled flags; converging");
                self.activation = "KubeConfigChanged";
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
                let known: std::collections::HashSet<String> = session
                    .tree
                    .modules
                    .iter()
                    .map(|m| m.name.clone())
                    .collect();
                self.ctx
                    .hook_history
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .retain(|m| known.contains(m));
                *self.ctx.session.lock().unwrap_or_else(|p| p.into_inner()) = session;
                self.fingerprint = fp;
                self.global_started = false;
                // The hooks are loaded afresh: the converge sets them again.
                self.schedules.clear();
                self.kube.clear();
                self.queues.clear();
                self.queues.update_hooks(|h| {
                    h.global_started = false;
                    h.started.clear();
                    h.settings.clear();
                });
                self.set_live_snapshots();
                self.activation = "ReloadAllModules";
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
        self.publish_queue("ConvergeModules");
        let started = Instant::now();
        let first = !self.global_started;
        if first && self.leading.is_some() {
            // Operations a hook of a lost term wrote: that term is over.
            let stale = self.ctx.with_session(|s| s.take_kube_operations()).await;
            if !stale.is_empty() {
                tracing::warn!(
                    hooks = stale.len(),
                    "dropping the kubernetes operations of hooks that ran before the Lease was lost"
                );
            }
        }
        if first {
            // Global hooks' Synchronization runs with the initial lists.
            self.refresh_kube().await;
        }
        let view = self.ctx.with_session(move |s| enabled_view(s, first)).await;
        let view = match view {
            Ok(v) => v,
            Err(e) => {
                self.ctx.metrics.discover_error();
                return self.converge_failed(format!("global hooks: {e}"));
            }
        };
        if !view.script_errors.is_empty() {
            self.ctx.metrics.discover_error();
        }
        self.ctx.view_mut().order = view.order.clone();
        if let Err(e) = self.ctx.execute_hook_operations().await {
            return self.converge_failed(format!("global hooks: {e}"));
        }
        self.global_started = true;
        self.sync_state().await;
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
                self.ctx.metrics.set_module_enabled(name, *on);
                let m = st.modules.entry(name.clone()).or_default();
                m.enabled_reason = reason.clone();
                if !on && !view.script_errors.contains_key(name) {
                    m.phase = Phase::Disabled;
                    m.last_error = None;
                    m.retry_at = None;
                    m.waiting_for = None;
                }
            }
        }

        // ModuleDelete: releases (and modules enabled before) whose module
        // is gone or disabled now. Modules whose `enabled` script failed
        // keep what they have.
        let ns = self.ctx.settings.namespace.clone();
        let releases = match release::names_labelled(&self.ctx.cluster, &ns, MODULE_LABEL).await {
            Ok(r) => r,
            Err(e) => {
                self.ctx.metrics.discover_error();
                return self.converge_failed(format!("listing releases: {e}"));
            }
        };
        // Archived modules (their ConfigMap key) are archived, not run.
        let archived = self
            .config_data
            .as_ref()
            .map(archived_of)
            .unwrap_or_default();
        let enabled_now: BTreeSet<String> = view
            .modules
            .iter()
            .filter(|(n, on, _)| *on && !archived.contains(n))
            .map(|(n, _, _)| n.clone())
            .collect();
        let in_tree: BTreeSet<String> = view.modules.iter().map(|(n, _, _)| n.clone()).collect();
        let mut to_delete: BTreeSet<String> = releases
            .iter()
            .chain(self.enabled.iter())
            .filter(|n| !enabled_now.contains(*n) && !view.script_errors.contains_key(*n))
            .filter(|n| !archived.contains(*n))
            .cloned()
            .collect();
        // One module's failed archive holds up no other: it is marked
        // failed and tried again with the converge's backoff.
        let mut archive_errors = Vec::new();
        for name in archived
            .iter()
            .filter(|n| in_tree.contains(*n) || releases.contains(*n))
        {
            self.work.modules.remove(name);
            if let Err(e) = archive::archive_module(&self.ctx, name).await {
                tracing::error!(module = %name, "archive failed: {e}");
                self.ctx.module_status(name, |m| {
                    m.phase = Phase::Failed;
                    m.last_error = Some(e.clone());
                });
                archive_errors.push(format!("module '{name}': archive: {e}"));
            }
        }
        // An archived release stays archived until cleaned up, disabled or not.
        for name in to_delete.clone().iter().filter(|n| releases.contains(*n)) {
            if let Ok(Some(release::lifecycle::State::Archived)) =
                archive::release_state(&self.ctx, name).await
            {
                to_delete.remove(name);
                self.ctx.module_status(name, |m| m.phase = Phase::Archived);
            }
        }
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
                self.ctx.metrics.module_delete_failed(name);
                self.ctx
                    .module_status(name, |m| m.last_error = Some(e.clone()));
                return self.converge_failed(format!("module '{name}': delete: {e}"));
            }
        }
        self.enabled = enabled_now;
        // Enabled modules' watches, listed before their Synchronization.
        self.refresh_kube().await;

        // ModuleRun of every enabled module, as the dependency graph orders
        // them (addon-operator's order for modules that declare nothing).
        self.graph = view.graph.clone();
        let names: Vec<String> = view
            .order
            .iter()
            .filter(|(n, _)| self.enabled.contains(n))
            .map(|(n, _)| n.clone())
            .collect();
        self.run_modules(names).await;
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
                let took = started.elapsed();
                tracing::info!(
                    modules = self.enabled.len(),
                    activation = self.activation,
                    seconds = took.as_secs_f64(),
                    outcome = "ok",
                    "converged"
                );
                self.ctx.metrics.converged(self.activation, took);
                self.ctx.metrics.set_started();
                if changed {
                    tracing::info!("afterAll hooks changed global values: converging again");
                    self.activation = "GlobalValuesChanged";
                    self.work.converge_at = Some(Instant::now());
                } else if (!view.script_errors.is_empty() || !archive_errors.is_empty())
                    && !self.ctx.settings.once
                {
                    // Their modules keep what they had; ask again later.
                    self.work.converge_failures += 1;
                    let delay = backoff::delay_with_jitter(self.work.converge_failures);
                    self.work.converge_at = Some(Instant::now() + delay);
                }
                if self.ctx.settings.once {
                    self.failures.extend(view.script_errors.values().cloned());
                    self.failures.extend(archive_errors);
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
            .with_session(move |s| {
                let b = s.schedule_bindings(&enabled, &mut hook_log)?;
                let settings = hook_settings(s, b.iter().map(|b| (&b.module, &b.hook)));
                Ok::<_, ModuleError>((b, settings))
            })
            .await;
        match bindings {
            Ok((b, settings)) => {
                self.queues.update_hooks(|h| h.settings.extend(settings));
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
        // Bindings that do not wait: their Synchronization runs in their
        // queue ([`Operator::sync_state`]).
        s.defer_unwaited_syncs = true;
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
            .with_session(move |s| {
                let b = s.kubernetes_bindings(&enabled, &mut hook_log)?;
                let settings = hook_settings(s, b.iter().map(|b| (&b.module, &b.hook)));
                Ok::<_, ModuleError>((b, settings))
            })
            .await;
        let bindings = match bindings {
            Ok((b, settings)) => {
                self.queues.update_hooks(|h| h.settings.extend(settings));
                b
            }
            Err(e) => return tracing::error!("kubernetes bindings: {e}"),
        };
        self.kube.resolve_kinds(&bindings, &self.ctx.cluster).await;
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
        self.ctx
            .metrics
            .set_kube_bindings(self.kube.len(), self.kube.watches());
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

    /// Queues the hook runs of kubernetes events (of enabled modules' and
    /// global hooks) in their bindings' queues.
    fn enqueue_kube_events(&mut self, events: Vec<kube_events::HookEvent>) {
        let mut tasks = Vec::new();
        for ev in events {
            if ev
                .module
                .as_ref()
                .is_some_and(|m| !self.enabled.contains(m))
            {
                continue;
            }
            let task = queue::Task {
                module: ev.module,
                hook: ev.hook,
                binding_type: BindingType::Kubernetes,
                bindings: vec![ev.binding],
                contexts: vec![ev.context],
                allow_failure: ev.allow_failure,
            };
            tasks.push((ev.queue, task));
        }
        self.queues.push_all(tasks);
    }

    /// Queues the hook runs of the schedule bindings that fired.
    fn enqueue_schedules(&mut self, fired: Vec<schedule::Firing>) {
        let mut tasks = Vec::new();
        for f in fired {
            if f.module.as_ref().is_some_and(|m| !self.enabled.contains(m)) {
                continue;
            }
            for b in &f.bindings {
                let task = queue::Task::schedule(f.module.clone(), f.hook.clone(), b);
                tasks.push((f.queue.clone(), task));
            }
        }
        self.queues.push_all(tasks);
    }

    /// One run of the main queue (see [`queue::run_task`]).
    async fn run_main(&mut self, mut task: queue::Task) {
        let r = self.queues.run(&mut task).await;
        queue::log_outcome(queue::MAIN, &task, &r);
        if let Ok(true) = r {
            self.request(match &task.module {
                Some(m) => queue::Request::ModuleRun(m.clone()),
                None => queue::Request::Converge,
            });
        }
        let (who, allowed) = (task.who(), task.allow_failure);
        if let Some(d) = self.queues.done_main(task, r.is_err())
            && !allowed
        {
            tracing::warn!(
                queue = queue::MAIN,
                "{who}: retrying in {:.1}s",
                d.as_secs_f64()
            );
        }
    }

    /// What a hook run's values change asks for: its module run again, or
    /// (a global hook's) a converge; in the main queue.
    fn request(&mut self, req: queue::Request) {
        let now = Instant::now();
        match req {
            queue::Request::ModuleRun(m) => {
                if self.enabled.contains(&m) {
                    tracing::info!(module = %m, "a hook changed the module's values: running it again");
                    self.work.modules.insert(m, now);
                }
            }
            queue::Request::RunNow(m) => {
                if self.enabled.contains(&m) {
                    tracing::info!(module = %m, "a run was asked for on the status page: running the module");
                    self.work.modules.insert(m, now);
                } else {
                    tracing::warn!(module = %m, "a run was asked for on the status page, but the module is not enabled: not run");
                }
            }
            queue::Request::Converge => {
                tracing::info!("a global hook changed global values: converging again");
                self.activation = "GlobalValuesChanged";
                self.work.converge_at = Some(now);
            }
        }
    }

    /// Tells the queues which hooks have had their Synchronization (and
    /// which modules are enabled), and queues the Synchronization of the
    /// bindings that do not wait for it (`waitForSynchronization: false`).
    async fn sync_state(&mut self) {
        let enabled: Vec<String> = self.enabled.iter().cloned().collect();
        let (started, deferred) = self
            .ctx
            .with_session(move |s| {
                let started: BTreeSet<String> = enabled
                    .into_iter()
                    .filter(|m| s.module_started(m))
                    .collect();
                (started, s.take_deferred_syncs())
            })
            .await;
        let (global, enabled) = (self.global_started, self.enabled.clone());
        self.queues.update_hooks(|h| {
            h.global_started = global;
            h.started = started;
            h.enabled = enabled;
        });
        for d in deferred {
            if d.module.as_ref().is_some_and(|m| !self.enabled.contains(m)) {
                continue;
            }
            let b = &d.binding;
            let context = crate::hooks::BindingContext::kubernetes(
                b,
                crate::hooks::context::KubeEvent::Synchronization {
                    objects: Vec::new(),
                },
                &crate::hooks::Snapshots::new(),
            );
            let task = queue::Task {
                module: d.module.clone(),
                hook: d.hook.clone(),
                binding_type: BindingType::Kubernetes,
                bindings: vec![b.name.clone()],
                contexts: vec![context],
                allow_failure: b.allow_failure,
            };
            self.queues.push(&b.queue, task);
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
    /// and, on failure, scheduled again with backoff. A module starts once
    /// what it waits for among `names` has finished (the dependency graph:
    /// declared requirements, else lower orders); a module whose declared
    /// requirement is disabled or not deployed is not run but `Waiting`,
    /// until that one's next successful run wakes it.
    async fn run_modules(&mut self, names: Vec<String>) {
        let limit = self.ctx.settings.parallel.max(1);
        self.publish_queue(&format!("ModuleRun {}", names.join(", ")));
        let mut pending: Vec<String> = Vec::new();
        for name in names {
            self.work.modules.remove(&name);
            if self.enabled.contains(&name) && !pending.contains(&name) {
                pending.push(name);
            }
        }
        let batch: BTreeSet<String> = pending.iter().cloned().collect();
        let mut finished: BTreeSet<String> = BTreeSet::new();
        let mut set = tokio::task::JoinSet::new();
        let shutdown = self.signals.shutdown.clone();
        let grace = self.ctx.settings.shutdown_grace;
        let deadline = async {
            shutdown.cancelled().await;
            tokio::time::sleep(grace).await;
        };
        tokio::pin!(deadline);
        loop {
            // Start whatever may start now, in module order.
            let mut i = 0;
            while i < pending.len() && set.len() < limit && !self.signals.shutdown.is_cancelled() {
                let name = pending[i].clone();
                let waits = self
                    .graph
                    .prerequisites(&name)
                    .any(|(d, _)| batch.contains(d) && !finished.contains(d));
                if waits {
                    i += 1;
                    continue;
                }
                pending.remove(i);
                let blocked = {
                    let st = self.ctx.status.read().unwrap_or_else(|e| e.into_inner());
                    self.graph.blocked_by(
                        &name,
                        |d| self.enabled.contains(d),
                        |d| st.modules.get(d).is_some_and(|m| m.phase == Phase::Ready),
                    )
                };
                if let Some(why) = blocked {
                    tracing::info!(module = %name, "not run: {why}");
                    if self.ctx.settings.once {
                        self.failures.push(format!("module '{name}': {why}"));
                    }
                    self.ctx.module_status(&name, |m| {
                        m.phase = Phase::Waiting;
                        m.waiting_for = Some(why.clone());
                        m.retry_at = None;
                    });
                    finished.insert(name);
                    // What waited for it may be decided now.
                    i = 0;
                    continue;
                }
                self.ctx.module_status(&name, |m| {
                    m.phase = Phase::Running;
                    m.waiting_for = None;
                });
                let ctx = self.ctx.clone();
                set.spawn(async move {
                    let t = Instant::now();
                    let r = module_run::run(&ctx, &name).await;
                    (name, r, t.elapsed())
                });
            }
            if set.is_empty() {
                // Nothing runs and nothing more can start: done (or shut
                // down; the graph has no cycle, so nothing else is left).
                if !pending.is_empty() && !self.signals.shutdown.is_cancelled() {
                    tracing::error!(modules = ?pending, "modules left unscheduled");
                }
                break;
            }
            tokio::select! {
                j = set.join_next() => match j {
                    None => {}
                    Some(Ok((name, r, took))) => {
                        self.record(&name, r, took);
                        finished.insert(name);
                    }
                    Some(Err(e)) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                    Some(Err(_)) => {}
                },
                _ = &mut deadline => {
                    tracing::warn!("shutdown grace period over: abandoning the module runs under way");
                    set.abort_all();
                }
            }
        }
        self.sync_state().await;
    }

    fn record(&mut self, name: &str, r: Result<module_run::Ran, String>, took: Duration) {
        let once = self.ctx.settings.once;
        self.ctx.metrics.module_run(name, took, r.is_ok());
        match r {
            Ok(ran) => {
                tracing::info!(
                    module = %name,
                    revision = ran.revision,
                    written = ran.written,
                    seconds = took.as_secs_f64(),
                    outcome = "ok",
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
                // Modules that waited for this one may run now.
                let waiting: Vec<String> = {
                    let st = self.ctx.status.read().unwrap_or_else(|e| e.into_inner());
                    st.modules
                        .iter()
                        .filter(|(n, m)| {
                            m.phase == Phase::Waiting
                                && self.graph.prerequisites(n).any(|(d, _)| d == name)
                        })
                        .map(|(n, _)| n.clone())
                        .collect()
                };
                for n in waiting {
                    self.work.modules.entry(n).or_insert_with(Instant::now);
                }
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
                    seconds = took.as_secs_f64(),
                    outcome = "error",
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

/// The `settings` of the hooks named, by hook.
fn hook_settings<'a>(
    s: &Session,
    hooks: impl Iterator<Item = (&'a Option<String>, &'a String)>,
) -> Vec<(crate::module::HookKey, crate::hooks::config::Settings)> {
    hooks
        .filter_map(|(m, h)| {
            let settings = s.hook_settings(m.as_deref(), h)?;
            Some(((m.clone(), h.clone()), settings))
        })
        .collect()
}

/// Runs `work` to its end, or drops it at its next await when leadership
/// is lost (`None`). Without leader election (`rx` is `None`) it just runs.
async fn while_leading<T>(
    rx: Option<watch::Receiver<bool>>,
    work: impl std::future::Future<Output = T>,
) -> Option<T> {
    let Some(mut rx) = rx else {
        return Some(work.await);
    };
    tokio::select! {
        biased;
        _ = rx.wait_for(|leading| !*leading) => None,
        v = work => Some(v),
    }
}

/// Keeps `status.leader` current with the election, for `/readyz`, the
/// metrics and the debug API.
fn mirror_leadership(
    mut rx: watch::Receiver<bool>,
    identity: &str,
    status: Arc<RwLock<Status>>,
    shutdown: &CancellationToken,
) {
    let identity = identity.to_string();
    let stop = shutdown.clone();
    tokio::spawn(async move {
        loop {
            let leading = *rx.borrow_and_update();
            status.write().unwrap_or_else(|p| p.into_inner()).leader = Some(LeaderStatus {
                identity: identity.clone(),
                leading,
            });
            tokio::select! {
                r = rx.changed() => if r.is_err() { return },
                _ = stop.cancelled() => return,
            }
        }
    });
}

/// The next leadership change; never without leader election.
async fn leadership_changed(rx: &mut Option<watch::Receiver<bool>>) -> bool {
    match rx {
        Some(rx) => match rx.changed().await {
            Ok(()) => *rx.borrow_and_update(),
            Err(_) => std::future::pending().await,
        },
        None => std::future::pending().await,
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
    graph: DependencyGraph,
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
        graph: s.tree.graph.clone(),
    })
}

/// A hash of the module directories' file tree (paths, sizes, mtimes,
/// symlink targets), to notice a new image layer or a git-sync flip.
/// The modules the ConfigMap's data marks archived (a config in force has
/// been checked: a bad archive key refuses it whole).
fn archived_of(data: &BTreeMap<String, String>) -> BTreeSet<String> {
    crate::module::config::archived_modules(data).unwrap_or_default()
}

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

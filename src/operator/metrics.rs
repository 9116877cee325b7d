//! The operator's Prometheus metrics, in one [`Metrics`] its context owns
//! (nothing goes to the process-wide default registry):
//!
//! - addon-operator's own, under its names, labels and buckets
//!   (`pkg/metrics/metrics.go`), prefixed with
//!   `ADDON_OPERATOR_PROMETHEUS_METRICS_PREFIX` (default `addon_operator_`),
//!   served on `/metrics`;
//! - antiopa's own (`antiopa_…`): kubernetes bindings; and, read from the
//!   operator's [`Status`] at each scrape (the watch tasks, the drift
//!   engine and the election keep their figures there, so there is one
//!   source and nothing to keep in step): watch health, drift counters and
//!   restore latency, leadership;
//! - what hooks write to `METRICS_PATH`, served apart on `/metrics/hooks`
//!   as addon-operator serves them: names as the hooks wrote them, a `hook`
//!   label (and `module` for a module hook's), gauges set, counters added,
//!   histograms observed; a group's series (a hook's metrics without a
//!   group form the group named after the hook) are all removed before the
//!   hook's new ones are applied, and `expire` removes them alone.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use prometheus::proto;
use prometheus::{
    Counter, CounterVec, Encoder, GaugeVec, HistogramOpts, HistogramVec, Opts, Registry,
    TextEncoder,
};

use super::state::{Status, WatchState};
use crate::hooks::output::MetricOperation;
use crate::module::HookRunRecord;

/// addon-operator's default prefix.
pub const DEFAULT_PREFIX: &str = "addon_operator_";

/// addon-operator's `buckets_1msTo10s`.
const BUCKETS: &[f64] = &[
    0.0, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0,
];

/// The activation label of work done during the first converge.
pub const OPERATOR_STARTUP: &str = "OperatorStartup";

/// Why the metrics cannot be set up.
#[derive(Debug, thiserror::Error)]
pub enum MetricsError {
    #[error("metrics prefix '{prefix}': {source}")]
    Prefix {
        prefix: String,
        source: prometheus::Error,
    },
}

/// A hook kind's run metrics (module or global hooks).
struct HookRunMetrics {
    seconds: HistogramVec,
    errors: CounterVec,
    allowed_errors: CounterVec,
    success: CounterVec,
}

/// Every metric the operator records, and what hooks export.
pub struct Metrics {
    registry: Registry,
    /// The first converge is under way (activation `OperatorStartup`).
    startup: AtomicBool,
    live_ticks: Counter,
    tasks_queue_length: GaugeVec,
    module_run_seconds: HistogramVec,
    module_run_errors: CounterVec,
    module_delete_errors: CounterVec,
    module_helm_seconds: HistogramVec,
    helm_operation_seconds: HistogramVec,
    module_hooks: HookRunMetrics,
    global_hooks: HookRunMetrics,
    convergence_seconds: CounterVec,
    convergence_total: CounterVec,
    config_values_errors: Counter,
    modules_discover_errors: Counter,
    module_enabled: GaugeVec,
    kube_bindings: GaugeVec,
    hooks: Mutex<HookMetricStore>,
}

impl Metrics {
    /// All metrics registered, addon-operator's under `prefix`.
    pub fn new(prefix: &str) -> Result<Metrics, MetricsError> {
        let registry = Registry::new();
        let err = |source| MetricsError::Prefix {
            prefix: prefix.to_string(),
            source,
        };
        let r = Reg {
            registry: &registry,
            prefix,
        };
        let hook_runs = |kind: &str, labels: &[&str]| -> prometheus::Result<HookRunMetrics> {
            Ok(HookRunMetrics {
                seconds: r.histogram(
                    &format!("{kind}_hook_run_seconds"),
                    &format!("Histogram of {kind} hook execution times in seconds"),
                    labels,
                    BUCKETS,
                )?,
                errors: r.counter_vec(
                    &format!("{kind}_hook_errors_total"),
                    &format!("Counter of {kind} hook execution errors (allowFailure: false)"),
                    labels,
                )?,
                allowed_errors: r.counter_vec(
                    &format!("{kind}_hook_allowed_errors_total"),
                    &format!(
                        "Counter of {kind} hook execution errors that are allowed to fail (allowFailure: true)"
                    ),
                    labels,
                )?,
                success: r.counter_vec(
                    &format!("{kind}_hook_success_total"),
                    &format!("Counter of successful {kind} hook executions"),
                    labels,
                )?,
            })
        };
        let build = || -> prometheus::Result<Metrics> {
            Ok(Metrics {
                live_ticks: r.counter(
                    "live_ticks",
                    "Counter that increases every 10 seconds to indicate the operator is alive",
                )?,
                tasks_queue_length: r.gauge_vec(
                    "tasks_queue_length",
                    "Gauge showing the length of the task queue",
                    &["queue"],
                )?,
                module_run_seconds: r.histogram(
                    "module_run_seconds",
                    "Histogram of module execution times in seconds",
                    &["module", "activation"],
                    BUCKETS,
                )?,
                module_run_errors: r.counter_vec(
                    "module_run_errors_total",
                    "Counter of module execution errors",
                    &["module"],
                )?,
                module_delete_errors: r.counter_vec(
                    "module_delete_errors_total",
                    "Counter of errors during module deletion",
                    &["module"],
                )?,
                module_helm_seconds: r.histogram(
                    "module_helm_seconds",
                    "Histogram of release (render and apply) times for modules in seconds",
                    &["module", "activation"],
                    BUCKETS,
                )?,
                helm_operation_seconds: r.histogram(
                    "helm_operation_seconds",
                    "Histogram of release operation durations in seconds",
                    &["module", "activation", "operation"],
                    BUCKETS,
                )?,
                module_hooks: hook_runs(
                    "module",
                    &["module", "hook", "binding", "queue", "activation"],
                )?,
                global_hooks: hook_runs("global", &["hook", "binding", "queue", "activation"])?,
                convergence_seconds: r.counter_vec(
                    "convergence_seconds",
                    "Counter of convergence duration in seconds",
                    &["activation"],
                )?,
                convergence_total: r.counter_vec(
                    "convergence_total",
                    "Counter of convergence executions",
                    &["activation"],
                )?,
                config_values_errors: r.counter(
                    "config_values_errors_total",
                    "Counter of ConfigMap validation errors",
                )?,
                modules_discover_errors: r.counter(
                    "modules_discover_errors_total",
                    "Counter of errors during module discovery",
                )?,
                module_enabled: r.gauge_vec(
                    "mm_module_enabled",
                    "1 for an enabled module, 0 for a disabled one",
                    &["module"],
                )?,
                kube_bindings: r.raw_gauge_vec(
                    "antiopa_kube_bindings",
                    "Kubernetes bindings in force (what=bindings) and the watches they share (what=watches)",
                    &["what"],
                )?,
                registry: registry.clone(),
                startup: AtomicBool::new(true),
                hooks: Mutex::new(HookMetricStore::default()),
            })
        };
        build().map_err(err)
    }

    /// The activation label: `OperatorStartup` until the first converge
    /// is done, then empty (as addon-operator labels task metrics).
    fn activation(&self) -> &'static str {
        if self.startup.load(Ordering::Relaxed) {
            OPERATOR_STARTUP
        } else {
            ""
        }
    }

    /// The first converge is done.
    pub fn set_started(&self) {
        self.startup.store(false, Ordering::Relaxed);
    }

    /// One more 10-second tick.
    pub fn tick(&self) {
        self.live_ticks.inc();
    }

    pub fn set_queue_length(&self, queue: &str, n: usize) {
        self.tasks_queue_length
            .with_label_values(&[queue])
            .set(n as f64);
    }

    /// A ModuleRun ended.
    pub fn module_run(&self, module: &str, took: Duration, ok: bool) {
        self.module_run_seconds
            .with_label_values(&[module, self.activation()])
            .observe(took.as_secs_f64());
        if !ok {
            self.module_run_errors.with_label_values(&[module]).inc();
        }
    }

    /// A ModuleDelete failed.
    pub fn module_delete_failed(&self, module: &str) {
        self.module_delete_errors.with_label_values(&[module]).inc();
    }

    /// A module's release step (render, compare, apply) took `took`;
    /// `operation` is `upgrade` when a revision was written, `none` when the
    /// render equalled the deployed one.
    pub fn release_operation(&self, module: &str, operation: &str, took: Duration) {
        let a = self.activation();
        self.module_helm_seconds
            .with_label_values(&[module, a])
            .observe(took.as_secs_f64());
        self.helm_operation_seconds
            .with_label_values(&[module, a, operation])
            .observe(took.as_secs_f64());
    }

    /// A converge of every module ended.
    pub fn converged(&self, activation: &str, took: Duration) {
        self.convergence_seconds
            .with_label_values(&[activation])
            .inc_by(took.as_secs_f64());
        self.convergence_total
            .with_label_values(&[activation])
            .inc();
    }

    /// A ConfigMap edit was refused.
    pub fn config_values_error(&self) {
        self.config_values_errors.inc();
    }

    /// Discovery, global hooks or the enabled state failed.
    pub fn discover_error(&self) {
        self.modules_discover_errors.inc();
    }

    pub fn set_module_enabled(&self, module: &str, enabled: bool) {
        self.module_enabled
            .with_label_values(&[module])
            .set(f64::from(u8::from(enabled)));
    }

    /// Kubernetes bindings in force and the watches they share.
    pub fn set_kube_bindings(&self, bindings: usize, watches: usize) {
        self.kube_bindings
            .with_label_values(&["bindings"])
            .set(bindings as f64);
        self.kube_bindings
            .with_label_values(&["watches"])
            .set(watches as f64);
    }

    /// Records hook runs: their durations and outcomes, and what they
    /// wrote to `METRICS_PATH`.
    pub fn hook_runs(&self, runs: &[HookRunRecord]) {
        let activation = self.activation();
        for r in runs {
            let binding = r.binding.as_str();
            let (m, labels): (&HookRunMetrics, Vec<&str>) = match &r.module {
                Some(module) => (
                    &self.module_hooks,
                    vec![module, &r.hook, binding, &r.queue, activation],
                ),
                None => (
                    &self.global_hooks,
                    vec![&r.hook, binding, &r.queue, activation],
                ),
            };
            m.seconds
                .with_label_values(&labels)
                .observe(r.duration.as_secs_f64());
            let counter = match (&r.error, r.allow_failure) {
                (None, _) => &m.success,
                (Some(_), true) => &m.allowed_errors,
                (Some(_), false) => &m.errors,
            };
            counter.with_label_values(&labels).inc();
            if r.error.is_none() && !r.metrics.is_empty() {
                let mut common = BTreeMap::from([("hook".to_string(), r.hook.clone())]);
                if let Some(module) = &r.module {
                    common.insert("module".into(), module.clone());
                }
                let skipped = self.hooks.lock().unwrap_or_else(|p| p.into_inner()).apply(
                    r.module.as_deref().unwrap_or(""),
                    &r.metrics,
                    &common,
                );
                for why in skipped {
                    tracing::warn!(hook = %r.hook, module = r.module.as_deref().unwrap_or(""), "metric not exported: {why}");
                }
            }
        }
    }

    /// `/metrics`: the Prometheus text format, the registered metrics and
    /// what `status` holds (watches, drift, leadership), read now.
    pub fn encode(&self, status: &Status) -> String {
        let mut families = self.registry.gather();
        families.extend(status_families(status));
        families.sort_by(|a, b| a.name().cmp(b.name()));
        encode(&families)
    }

    /// `/metrics/hooks`: what hooks exported.
    pub fn encode_hooks(&self) -> String {
        let families = self
            .hooks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .families();
        encode(&families)
    }
}

fn encode(families: &[proto::MetricFamily]) -> String {
    let mut buf = Vec::new();
    // The text encoder fails only on a family without metrics or a writer
    // error; neither happens with a Vec and gathered families.
    if let Err(e) = TextEncoder::new().encode(families, &mut buf) {
        tracing::warn!("encoding metrics: {e}");
    }
    String::from_utf8_lossy(&buf).into_owned()
}

/// Registers metrics in one registry, addon-operator's under its prefix.
struct Reg<'a> {
    registry: &'a Registry,
    prefix: &'a str,
}

impl Reg<'_> {
    fn name(&self, n: &str) -> String {
        format!("{}{n}", self.prefix)
    }

    fn counter(&self, n: &str, help: &str) -> prometheus::Result<Counter> {
        let c = Counter::with_opts(Opts::new(self.name(n), help))?;
        self.registry.register(Box::new(c.clone()))?;
        Ok(c)
    }

    fn counter_vec(&self, n: &str, help: &str, labels: &[&str]) -> prometheus::Result<CounterVec> {
        self.raw_counter_vec(&self.name(n), help, labels)
    }

    fn raw_counter_vec(
        &self,
        n: &str,
        help: &str,
        labels: &[&str],
    ) -> prometheus::Result<CounterVec> {
        let c = CounterVec::new(Opts::new(n, help), labels)?;
        self.registry.register(Box::new(c.clone()))?;
        Ok(c)
    }

    fn gauge_vec(&self, n: &str, help: &str, labels: &[&str]) -> prometheus::Result<GaugeVec> {
        self.raw_gauge_vec(&self.name(n), help, labels)
    }

    fn raw_gauge_vec(&self, n: &str, help: &str, labels: &[&str]) -> prometheus::Result<GaugeVec> {
        let g = GaugeVec::new(Opts::new(n, help), labels)?;
        self.registry.register(Box::new(g.clone()))?;
        Ok(g)
    }

    fn histogram(
        &self,
        n: &str,
        help: &str,
        labels: &[&str],
        buckets: &[f64],
    ) -> prometheus::Result<HistogramVec> {
        let h = HistogramVec::new(
            HistogramOpts::new(self.name(n), help).buckets(buckets.to_vec()),
            labels,
        )?;
        self.registry.register(Box::new(h.clone()))?;
        Ok(h)
    }
}

// ---- status metrics ---------------------------------------------------------------

/// Every watch state, for `antiopa_watches{state}` (all present, 0 too).
const WATCH_STATES: [(WatchState, &str); 5] = [
    (WatchState::Starting, "starting"),
    (WatchState::Synced, "synced"),
    (WatchState::WaitingForKind, "waiting_for_kind"),
    (WatchState::Restarting, "restarting"),
    (WatchState::Failed, "failed"),
];

/// One family of plain series (labels → value).
fn family(
    name: &str,
    help: &str,
    kind: proto::MetricType,
    series: impl IntoIterator<Item = (Vec<(&'static str, String)>, f64)>,
) -> proto::MetricFamily {
    let mut mf = proto::MetricFamily::default();
    mf.set_name(name.to_string());
    mf.set_help(help.to_string());
    mf.set_field_type(kind);
    let metrics = series
        .into_iter()
        .map(|(labels, v)| {
            let mut m = proto::Metric::default();
            m.set_label(label_pairs(labels));
            if kind == proto::MetricType::COUNTER {
                let mut c = proto::Counter::default();
                c.set_value(v);
                m.set_counter(c);
            } else {
                let mut g = proto::Gauge::default();
                g.set_value(v);
                m.set_gauge(g);
            }
            m
        })
        .collect();
    mf.set_metric(metrics);
    mf
}

fn label_pairs(labels: Vec<(&'static str, String)>) -> Vec<proto::LabelPair> {
    labels
        .into_iter()
        .map(|(k, v)| {
            let mut l = proto::LabelPair::default();
            l.set_name(k.to_string());
            l.set_value(v);
            l
        })
        .collect()
}

/// `module → kind → n` as `{module,kind}` series.
fn by_module_kind(
    m: &BTreeMap<String, BTreeMap<String, u64>>,
) -> Vec<(Vec<(&'static str, String)>, f64)> {
    m.iter()
        .flat_map(|(module, kinds)| {
            kinds.iter().map(move |(kind, n)| {
                (
                    vec![("module", module.clone()), ("kind", kind.clone())],
                    *n as f64,
                )
            })
        })
        .collect()
}

/// The figures the operator keeps in its status, as metric families.
/// Cardinality stays bounded: watches are per kind and namespace set of
/// the bindings in force, drift per module and kind of released objects.
fn status_families(st: &Status) -> Vec<proto::MetricFamily> {
    use proto::MetricType::{COUNTER, GAUGE};
    let mut out = Vec::new();
    out.push(family(
        "antiopa_watches",
        "Shared watches of the kubernetes bindings, by state",
        GAUGE,
        WATCH_STATES.iter().map(|(s, name)| {
            let n = st.watches.iter().filter(|w| w.state == *s).count();
            (vec![("state", name.to_string())], n as f64)
        }),
    ));
    out.push(family(
        "antiopa_watches_dead",
        "Watches restarting or failed now",
        GAUGE,
        [(vec![], st.watches_dead as f64)],
    ));
    out.push(family(
        "antiopa_watch_restarts_total",
        "Watch restarts after a failure (a broken, silent or failing watch), all watches",
        COUNTER,
        [(vec![], st.watch_restarts_total as f64)],
    ));
    out.push(family(
        "antiopa_watch_relists_total",
        "Relists after the initial list (restarts, 410 Expired, a binding joining, a kind coming back), all watches",
        COUNTER,
        [(vec![], st.watch_relists_total as f64)],
    ));
    let mut objects: BTreeMap<(String, String), usize> = BTreeMap::new();
    for w in &st.watches {
        *objects
            .entry((w.kind.clone(), w.namespaces.join(",")))
            .or_default() += w.objects;
    }
    if !objects.is_empty() {
        out.push(family(
            "antiopa_watch_objects",
            "Objects the shared watches hold, by kind and namespaces watched (empty: all)",
            GAUGE,
            objects
                .into_iter()
                .map(|((kind, ns), n)| (vec![("kind", kind), ("namespace", ns)], n as f64)),
        ));
    }
    let drift = st.drift_metrics.snapshot();
    for (name, help, m) in [
        (
            "antiopa_drift_detected_total",
            "Released objects found changed or deleted",
            &drift.detected,
        ),
        (
            "antiopa_drift_restored_total",
            "Released objects restored after drift",
            &drift.restored,
        ),
    ] {
        let series = by_module_kind(m);
        if !series.is_empty() {
            out.push(family(name, help, COUNTER, series));
        }
    }
    let h = &drift.restore_seconds;
    if h.count > 0 {
        let mut ph = proto::Histogram::default();
        ph.set_sample_count(h.count);
        ph.set_sample_sum(h.sum);
        ph.set_bucket(
            h.buckets
                .iter()
                .map(|(bound, n)| {
                    let mut b = proto::Bucket::default();
                    b.set_upper_bound(*bound);
                    b.set_cumulative_count(*n);
                    b
                })
                .collect(),
        );
        let mut m = proto::Metric::default();
        m.set_histogram(ph);
        let mut mf = proto::MetricFamily::default();
        mf.set_name("antiopa_drift_restore_seconds".into());
        mf.set_help("Time from drift detected to the object restored".into());
        mf.set_field_type(proto::MetricType::HISTOGRAM);
        mf.set_metric(vec![m]);
        out.push(mf);
    }
    if let Some(l) = &st.leader {
        out.push(family(
            "antiopa_leader",
            "1 while this replica holds the leader lease, 0 while it stands by",
            GAUGE,
            [(
                vec![("identity", l.identity.clone())],
                f64::from(u8::from(l.leading)),
            )],
        ));
    }
    out
}

// ---- hook metrics ---------------------------------------------------------------

type Labels = BTreeMap<String, String>;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Counter,
    Gauge,
    Histogram,
}

#[derive(Clone, Debug)]
enum Series {
    Value(f64),
    Histogram {
        /// Upper bounds, ascending.
        bounds: Vec<f64>,
        /// Observations per bucket (not cumulative).
        counts: Vec<u64>,
        count: u64,
        sum: f64,
    },
}

#[derive(Default)]
struct Family {
    kind: Option<Kind>,
    series: BTreeMap<Labels, Series>,
}

/// The series hooks exported, and which group each belongs to. Groups are
/// per module (a global hook's: module ""): two modules' hooks of one name
/// never expire each other's metrics.
#[derive(Default)]
struct HookMetricStore {
    families: BTreeMap<String, Family>,
    groups: BTreeMap<(String, String), BTreeSet<(String, Labels)>>,
}

impl HookMetricStore {
    /// Applies one hook run's operations: each group named is expired first,
    /// then the operations are applied with `common` labels (which win over
    /// the hook's own). Returns why operations were skipped.
    fn apply(&mut self, scope: &str, ops: &[MetricOperation], common: &Labels) -> Vec<String> {
        let mut skipped = Vec::new();
        let groups: BTreeSet<&str> = ops
            .iter()
            .filter(|o| !o.group.is_empty())
            .map(|o| o.group.as_str())
            .collect();
        for g in groups {
            self.expire(scope, g);
        }
        for op in ops {
            if op.action == "expire" {
                continue;
            }
            if !valid_name(&op.name, true) {
                skipped.push(format!("'{}' is not a valid metric name", op.name));
                continue;
            }
            if let Some(bad) = op.labels.keys().find(|k| !valid_name(k, false)) {
                skipped.push(format!(
                    "metric '{}': '{bad}' is not a valid label name",
                    op.name
                ));
                continue;
            }
            let kind = match op.action.as_str() {
                "set" => Kind::Gauge,
                "add" => Kind::Counter,
                "observe" => Kind::Histogram,
                other => {
                    skipped.push(format!("metric '{}': unknown action '{other}'", op.name));
                    continue;
                }
            };
            let value = op.value.unwrap_or(0.0);
            let family = self.families.entry(op.name.clone()).or_default();
            if family.kind.is_some_and(|k| k != kind) {
                skipped.push(format!(
                    "metric '{}': action '{}' on a metric that is a {:?}",
                    op.name,
                    op.action,
                    family.kind.unwrap_or(kind)
                ));
                continue;
            }
            family.kind = Some(kind);
            let mut labels = op.labels.clone();
            labels.extend(common.iter().map(|(k, v)| (k.clone(), v.clone())));
            match kind {
                Kind::Gauge => {
                    family.series.insert(labels.clone(), Series::Value(value));
                }
                Kind::Counter => {
                    let s = family
                        .series
                        .entry(labels.clone())
                        .or_insert(Series::Value(0.0));
                    if let Series::Value(v) = s {
                        *v += value;
                    }
                }
                Kind::Histogram => {
                    let mut bounds = op.buckets.clone().unwrap_or_default();
                    bounds.retain(|b| b.is_finite());
                    bounds.sort_by(f64::total_cmp);
                    bounds.dedup();
                    let s =
                        family
                            .series
                            .entry(labels.clone())
                            .or_insert_with(|| Series::Histogram {
                                counts: vec![0; bounds.len()],
                                bounds,
                                count: 0,
                                sum: 0.0,
                            });
                    if let Series::Histogram {
                        bounds,
                        counts,
                        count,
                        sum,
                    } = s
                    {
                        if let Some(i) = bounds.iter().position(|b| value <= *b) {
                            counts[i] += 1;
                        }
                        *count += 1;
                        *sum += value;
                    }
                }
            }
            if !op.group.is_empty() {
                self.groups
                    .entry((scope.to_string(), op.group.clone()))
                    .or_default()
                    .insert((op.name.clone(), labels));
            }
        }
        skipped
    }

    /// Removes every series of a group.
    fn expire(&mut self, scope: &str, group: &str) {
        let Some(members) = self.groups.remove(&(scope.to_string(), group.to_string())) else {
            return;
        };
        for (name, labels) in members {
            if let Some(f) = self.families.get_mut(&name) {
                f.series.remove(&labels);
                if f.series.is_empty() {
                    self.families.remove(&name);
                }
            }
        }
    }

    fn families(&self) -> Vec<proto::MetricFamily> {
        let mut out = Vec::new();
        for (name, f) in &self.families {
            let Some(kind) = f.kind else { continue };
            if f.series.is_empty() {
                continue;
            }
            let mut mf = proto::MetricFamily::default();
            mf.set_name(name.clone());
            mf.set_help(name.clone());
            mf.set_field_type(match kind {
                Kind::Counter => proto::MetricType::COUNTER,
                Kind::Gauge => proto::MetricType::GAUGE,
                Kind::Histogram => proto::MetricType::HISTOGRAM,
            });
            let metrics = f
                .series
                .iter()
                .map(|(labels, s)| {
                    let mut m = proto::Metric::default();
                    m.set_label(
                        labels
                            .iter()
                            .map(|(k, v)| {
                                let mut l = proto::LabelPair::default();
                                l.set_name(k.clone());
                                l.set_value(v.clone());
                                l
                            })
                            .collect(),
                    );
                    match s {
                        Series::Value(v) => match kind {
                            Kind::Gauge => {
                                let mut g = proto::Gauge::default();
                                g.set_value(*v);
                                m.set_gauge(g);
                            }
                            _ => {
                                let mut c = proto::Counter::default();
                                c.set_value(*v);
                                m.set_counter(c);
                            }
                        },
                        Series::Histogram {
                            bounds,
                            counts,
                            count,
                            sum,
                        } => {
                            let mut h = proto::Histogram::default();
                            h.set_sample_count(*count);
                            h.set_sample_sum(*sum);
                            let mut cumulative = 0;
                            h.set_bucket(
                                bounds
                                    .iter()
                                    .zip(counts)
                                    .map(|(b, c)| {
                                        cumulative += c;
                                        let mut bucket = proto::Bucket::default();
                                        bucket.set_upper_bound(*b);
                                        bucket.set_cumulative_count(cumulative);
                                        bucket
                                    })
                                    .collect(),
                            );
                            m.set_histogram(h);
                        }
                    }
                    m
                })
                .collect();
            mf.set_metric(metrics);
            out.push(mf);
        }
        out
    }
}

/// A Prometheus metric name (`[a-zA-Z_:][a-zA-Z0-9_:]*`) or label name
/// (no `:`; `__` names are reserved).
fn valid_name(n: &str, metric: bool) -> bool {
    let ok_first = |c: char| c.is_ascii_alphabetic() || c == '_' || (metric && c == ':');
    let ok = |c: char| ok_first(c) || c.is_ascii_digit();
    let mut chars = n.chars();
    chars.next().is_some_and(ok_first) && chars.all(ok) && (metric || !n.starts_with("__"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hooks::BindingType;

    fn op(
        name: &str,
        action: &str,
        value: f64,
        labels: &[(&str, &str)],
        group: &str,
    ) -> MetricOperation {
        MetricOperation {
            name: name.into(),
            action: action.into(),
            value: Some(value),
            buckets: (action == "observe").then(|| vec![1.0, 5.0]),
            labels: labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            group: group.into(),
        }
    }

    fn run(module: Option<&str>, hook: &str, ops: Vec<MetricOperation>) -> HookRunRecord {
        HookRunRecord {
            module: module.map(str::to_string),
            hook: hook.into(),
            binding: BindingType::BeforeHelm,
            queue: "main".into(),
            duration: Duration::from_millis(30),
            error: None,
            allow_failure: false,
            metrics: ops,
            finished: std::time::SystemTime::UNIX_EPOCH,
            stderr_tail: String::new(),
        }
    }

    #[test]
    fn addon_operator_names_under_the_prefix() {
        let m = Metrics::new("ao_").unwrap();
        m.module_run("alpha", Duration::from_millis(5), false);
        m.hook_runs(&[run(Some("alpha"), "hooks/a.sh", vec![])]);
        m.converged(OPERATOR_STARTUP, Duration::from_secs(1));
        let text = m.encode(&Status::default());
        assert!(
            text.contains(
                "ao_module_run_seconds_count{activation=\"OperatorStartup\",module=\"alpha\"} 1"
            ),
            "{text}"
        );
        assert!(
            text.contains("ao_module_run_errors_total{module=\"alpha\"} 1"),
            "{text}"
        );
        assert!(text.contains("ao_module_hook_success_total{activation=\"OperatorStartup\",binding=\"beforeHelm\",hook=\"hooks/a.sh\",module=\"alpha\",queue=\"main\"} 1"), "{text}");
        assert!(
            text.contains("ao_convergence_total{activation=\"OperatorStartup\"} 1"),
            "{text}"
        );
        assert!(Metrics::new("bad prefix ").is_err());
    }

    #[test]
    fn groups_expire_before_a_hooks_new_metrics() {
        let m = Metrics::new(DEFAULT_PREFIX).unwrap();
        m.hook_runs(&[run(
            Some("alpha"),
            "hooks/m.sh",
            vec![
                op("things", "set", 3.0, &[("kind", "pod")], "g"),
                op("things", "set", 4.0, &[("kind", "svc")], "g"),
                op("runs", "add", 1.0, &[], "hooks/m.sh"),
                op("lat", "observe", 2.0, &[], "other"),
            ],
        )]);
        let t = m.encode_hooks();
        assert!(
            t.contains("things{hook=\"hooks/m.sh\",kind=\"pod\",module=\"alpha\"} 3"),
            "{t}"
        );
        assert!(t.contains("# TYPE runs counter"), "{t}");
        assert!(
            t.contains("lat_bucket{hook=\"hooks/m.sh\",module=\"alpha\",le=\"5\"} 1"),
            "{t}"
        );
        // Group g again: svc is gone, pod moves; `other` is expired alone.
        m.hook_runs(&[run(
            Some("alpha"),
            "hooks/m.sh",
            vec![
                op("things", "set", 7.0, &[("kind", "pod")], "g"),
                MetricOperation {
                    name: String::new(),
                    action: "expire".into(),
                    value: None,
                    buckets: None,
                    labels: BTreeMap::new(),
                    group: "other".into(),
                },
            ],
        )]);
        let t = m.encode_hooks();
        assert!(
            t.contains("things{hook=\"hooks/m.sh\",kind=\"pod\",module=\"alpha\"} 7"),
            "{t}"
        );
        assert!(!t.contains("kind=\"svc\""), "{t}");
        assert!(!t.contains("lat_bucket"), "{t}");
        assert!(
            t.contains("runs{hook=\"hooks/m.sh\",module=\"alpha\"} 1"),
            "{t}"
        );
        // Another module's group of the same name is its own.
        m.hook_runs(&[run(
            Some("beta"),
            "hooks/m.sh",
            vec![op("things", "set", 1.0, &[("kind", "x")], "g")],
        )]);
        assert!(
            m.encode_hooks()
                .contains("kind=\"pod\",module=\"alpha\"} 7")
        );
    }

    #[test]
    fn status_figures_are_read_at_each_scrape() {
        use crate::operator::{LeaderStatus, WatchHealth};
        let m = Metrics::new(DEFAULT_PREFIX).unwrap();
        let watch = |ns: &[&str], state, objects| WatchHealth {
            id: 0,
            key: String::new(),
            kind: "v1 Pod".into(),
            namespaces: ns.iter().map(|s| s.to_string()).collect(),
            bindings: vec![],
            state,
            started_at: std::time::SystemTime::now(),
            last_event_at: None,
            objects,
            relists: 0,
            restarts: 0,
            last_error: None,
        };
        let mut st = Status {
            watches: vec![
                watch(&["a"], WatchState::Synced, 3),
                watch(&["a"], WatchState::Restarting, 2),
                watch(&[], WatchState::Synced, 7),
            ],
            watch_restarts_total: 4,
            watches_dead: 1,
            leader: Some(LeaderStatus {
                identity: "pod-a".into(),
                leading: false,
            }),
            ..Status::default()
        };
        let t = m.encode(&st);
        for line in [
            "antiopa_watches{state=\"synced\"} 2",
            "antiopa_watches{state=\"failed\"} 0",
            "antiopa_watches_dead 1",
            "antiopa_watch_restarts_total 4",
            "antiopa_watch_objects{kind=\"v1 Pod\",namespace=\"a\"} 5",
            "antiopa_watch_objects{kind=\"v1 Pod\",namespace=\"\"} 7",
            "antiopa_leader{identity=\"pod-a\"} 0",
        ] {
            assert!(t.contains(line), "{line}:\n{t}");
        }
        assert!(!t.contains("antiopa_drift_restore_seconds"), "{t}");
        st.leader = None;
        assert!(!m.encode(&st).contains("antiopa_leader"));
    }

    #[test]
    fn bad_names_and_kind_changes_are_skipped() {
        let mut s = HookMetricStore::default();
        let common = Labels::new();
        let skipped = s.apply(
            "",
            &[
                op("ok", "set", 1.0, &[], ""),
                op("ok", "add", 1.0, &[], ""),
                op("bad-name", "set", 1.0, &[], ""),
                op("x", "set", 1.0, &[("bad-label", "v")], ""),
            ],
            &common,
        );
        assert_eq!(skipped.len(), 3, "{skipped:?}");
        assert!(valid_name("a:b_1", true) && !valid_name("a:b", false) && !valid_name("1a", true));
    }
}

//! `antiopa apply` (helm upgrade --install with server-side apply),
//! `antiopa uninstall` and `antiopa history`: clap types, rendering through
//! [`crate::chart::render_chart`], and terminal output over [`crate::release`].
//! Each command starts its own tokio runtime; the rest of the CLI stays
//! synchronous.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use serde_json::{Map, Value as Json};

use crate::apply::{ApplyOptions, Progress, Rendered, objects::to_json};
use crate::chart::capabilities::KubeVersion;
use crate::chart::{Env, LoadedChart, RenderOptions, render_chart, template};
use crate::cluster::{Cluster, ClusterOptions};
use crate::release::{self, InstallOutcome, InstallRequest};
use crate::yaml::Yaml;

/// How to reach the cluster.
#[derive(Args, Debug, Clone)]
pub struct ClusterArgs {
    /// Path to the kubeconfig file (default: $KUBECONFIG, ~/.kube/config, in-cluster).
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use.
    #[arg(long = "kube-context", visible_alias = "context")]
    context: Option<String>,
    /// Client-side request rate limit (requests per second; 0: none).
    #[arg(long, default_value_t = 50.0)]
    qps: f64,
    /// Client-side request burst.
    #[arg(long = "burst-limit", default_value_t = 100)]
    burst: u32,
    /// The length of time to wait before giving up on a single server
    /// request, as kubectl's --request-timeout: a Go duration (1s, 2m,
    /// 3h) or whole seconds; 0 means don't time out requests. A request
    /// that times out fails the command naming the request; a write may
    /// still be carried out by the server, and the next apply completes
    /// the release either way. (helm has no such flag; its --timeout is
    /// antiopa's --timeout, the wait for hooks.)
    #[arg(
        long = "request-timeout",
        env = "ANTIOPA_REQUEST_TIMEOUT",
        default_value = "0",
        value_parser = parse_timeout
    )]
    request_timeout: Duration,
}

/// client-go's `clientcmd.ParseTimeout`: whole seconds, or a Go duration.
/// Used for every duration flag here, so `--timeout 300` (antiopa's older
/// spelling) and helm's `--timeout 5m0s` both work.
fn parse_timeout(s: &str) -> Result<Duration, String> {
    if let Ok(n) = s.trim().parse::<u64>() {
        return Ok(Duration::from_secs(n));
    }
    crate::hooks::cron::parse_go_duration(s.trim())
        .ok()
        .filter(|_| !s.trim().starts_with('-'))
        .ok_or_else(|| {
            "invalid timeout value: a timeout must be a single integer in seconds, or an integer followed by a corresponding time unit (e.g. 1s | 2m | 3h)".to_string()
        })
}

impl ClusterArgs {
    pub(super) fn options(&self) -> ClusterOptions {
        ClusterOptions {
            kubeconfig: self.kubeconfig.clone(),
            context: self.context.clone(),
            rate_limit: Some(crate::cluster::RateLimit {
                qps: self.qps,
                burst: self.burst,
            }),
            request_timeout: Some(self.request_timeout),
            user_agent: None,
        }
    }
}

/// A release name, a chart and its values.
#[derive(Args, Debug, Clone)]
pub struct ReleaseChartArgs {
    /// Release name.
    name: String,
    /// Chart directory or archive.
    chart: String,
    /// Namespace of the release.
    #[arg(short = 'n', long, default_value = "default", env = "HELM_NAMESPACE")]
    namespace: String,
    #[command(flatten)]
    values: super::ValuesFlags,
    /// Do not apply the charts' crds/ files.
    #[arg(long = "skip-crds")]
    skip_crds: bool,
    /// Kubernetes version for .Capabilities.KubeVersion.
    #[arg(long = "kube-version")]
    kube_version: Option<String>,
    /// Extra API versions for .Capabilities.APIVersions.
    #[arg(short = 'a', long = "api-versions", value_delimiter = ',')]
    api_versions: Vec<String>,
    /// Seed for random functions (reproducible renders, so re-applies are no-ops).
    #[arg(long)]
    seed: Option<u64>,
    /// Take over fields other field managers own (server-side apply force).
    #[arg(long = "force-conflicts")]
    force_conflicts: bool,
    /// Adopt existing objects that carry no release metadata (made by
    /// kubectl, say) instead of refusing them. Objects of another release
    /// are refused all the same.
    #[arg(long = "take-ownership")]
    take_ownership: bool,
    /// How long to wait for CRDs to become Established (a Go duration or
    /// seconds).
    #[arg(long = "crd-timeout", default_value = "60", value_parser = parse_timeout)]
    crd_timeout: Duration,
    #[command(flatten)]
    cluster: ClusterArgs,
}

impl ReleaseChartArgs {
    pub(super) fn cluster_options(&self) -> ClusterOptions {
        self.cluster.options()
    }
    pub(super) fn name(&self) -> &str {
        &self.name
    }
    pub(super) fn namespace(&self) -> &str {
        &self.namespace
    }
    pub(super) fn skip_crds(&self) -> bool {
        self.skip_crds
    }
    pub(super) fn take_ownership(&self) -> bool {
        self.take_ownership
    }
}

#[derive(Args, Debug)]
pub struct ApplyArgs {
    #[command(flatten)]
    chart: ReleaseChartArgs,
    /// Dry-run every apply on the server; write nothing.
    #[arg(long = "dry-run")]
    dry_run: bool,
    /// Create the release namespace if it is missing.
    #[arg(long = "create-namespace")]
    create_namespace: bool,
    /// Do not run chart hooks.
    #[arg(long = "no-hooks")]
    no_hooks: bool,
    /// Time to wait for any individual Kubernetes operation (like Jobs for
    /// hooks), as helm's --timeout: a Go duration (5m0s) or seconds. Single
    /// API requests are bounded by --request-timeout instead.
    #[arg(long = "timeout", default_value = "5m0s", value_parser = parse_timeout)]
    timeout: Duration,
    /// Revisions to keep (0: all).
    #[arg(long = "history-max", env = "HELM_HISTORY_MAX", default_value_t = 10)]
    history_max: usize,
    /// Seconds after which a pending record of a process that cannot be
    /// checked is taken over.
    #[arg(
        long = "lock-timeout",
        env = "ANTIOPA_LOCK_TIMEOUT",
        default_value_t = 600
    )]
    lock_timeout_s: u64,
}

#[derive(Args, Debug)]
pub struct UninstallArgs {
    /// Release name.
    name: String,
    #[arg(short = 'n', long, default_value = "default", env = "HELM_NAMESPACE")]
    namespace: String,
    /// Keep the release records, marked uninstalled.
    #[arg(long = "keep-history")]
    keep_history: bool,
    /// Do not run chart hooks.
    #[arg(long = "no-hooks")]
    no_hooks: bool,
    /// Time to wait for any individual Kubernetes operation (like Jobs for
    /// hooks), as helm's --timeout: a Go duration (5m0s) or seconds. Single
    /// API requests are bounded by --request-timeout instead.
    #[arg(long = "timeout", default_value = "5m0s", value_parser = parse_timeout)]
    timeout: Duration,
    #[arg(
        long = "lock-timeout",
        env = "ANTIOPA_LOCK_TIMEOUT",
        default_value_t = 600
    )]
    lock_timeout_s: u64,
    #[command(flatten)]
    cluster: ClusterArgs,
}

#[derive(Args, Debug)]
pub struct HistoryArgs {
    /// Release name.
    name: String,
    #[arg(short = 'n', long, default_value = "default", env = "HELM_NAMESPACE")]
    namespace: String,
    /// Output format, as `helm history -o`.
    #[arg(short = 'o', long, value_enum, default_value = "table")]
    output: HistoryFormat,
    #[command(flatten)]
    cluster: ClusterArgs,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq)]
enum HistoryFormat {
    Table,
    Json,
    Yaml,
}

/// A failed command: the message printed after `Error: `.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct CmdError(pub String);

pub(super) fn cerr(e: impl std::fmt::Display) -> CmdError {
    CmdError(e.to_string())
}

pub(super) fn runtime() -> Result<tokio::runtime::Runtime, CmdError> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(cerr)
}

/// What the render produced, ready for the release code.
pub(super) struct RenderedChart {
    pub rendered: Rendered,
    pub chart: Json,
    pub config: Map<String, Json>,
    /// The top chart's rendered NOTES.txt.
    pub notes: String,
}

/// Renders the chart as `helm template --include-crds` does, for the
/// revision about to be written (`.Release.Revision`, `.Release.IsUpgrade`
/// and `.Release.IsInstall` as helm's `upgrade --install` sets them), with
/// `lookup` reading `cluster`, and collects the chart metadata, values and
/// notes the release records. The chart is loaded once; its warnings go to
/// stderr as helm prints them.
pub(super) fn render(
    a: &ReleaseChartArgs,
    next: release::Next,
    cluster: &Cluster,
) -> Result<RenderedChart, CmdError> {
    let provider = std::rc::Rc::new(crate::apply::ClusterLookup::new(cluster));
    crate::chart::lookup::with_lookup(provider, || render_offline(a, next))
}

fn render_offline(a: &ReleaseChartArgs, next: release::Next) -> Result<RenderedChart, CmdError> {
    let values = a.values.options().merge().map_err(cerr)?;
    let config = match to_json(&Yaml::Map(values.clone())) {
        Json::Object(m) => m,
        _ => Map::new(),
    };
    let kube_version = match a.kube_version.as_deref() {
        Some(v) if !v.is_empty() => Some(KubeVersion::parse(v).map_err(cerr)?),
        _ => None,
    };
    let path = template::locate_chart(&a.chart).map_err(cerr)?;
    let mut log = |line: &str| {
        let _ = writeln!(std::io::stderr(), "{line}");
    };
    let loaded = LoadedChart::load(&path, &mut log).map_err(cerr)?;
    // Recorded in the release: the chart's metadata and its own values,
    // taken before the render consumes them.
    let chart = crate::chart::release_json(loaded.chart());
    let mut env = Env::new();
    if let Some(seed) = a.seed {
        env.seed(seed);
    }
    let opts = RenderOptions {
        release_name: a.name.clone(),
        namespace: a.namespace.clone(),
        revision: next.version,
        is_upgrade: next.is_upgrade,
        values,
        kube_version,
        api_versions: a.api_versions.clone(),
        include_crds: true,
        env,
        ..Default::default()
    };
    let rendered = render_chart(loaded, &opts).map_err(|failure| {
        failure.warnings.iter().for_each(|w| log(w));
        cerr(failure)
    })?;
    rendered.warnings.iter().for_each(|w| log(w));
    Ok(RenderedChart {
        rendered: Rendered::from_chart(&rendered),
        chart,
        config,
        notes: rendered.notes,
    })
}

pub(super) fn apply_options(a: &ReleaseChartArgs, dry_run: bool) -> ApplyOptions {
    let mut o = ApplyOptions::new(&a.namespace);
    o.force_conflicts = a.force_conflicts;
    o.dry_run = dry_run;
    o.crd_timeout = a.crd_timeout;
    o
}

/// A progress printer: `[applied/total]` on one rewritten terminal line.
fn progress_printer() -> impl FnMut(Progress<'_>) + Send {
    let tty = std::io::stderr().is_terminal();
    move |p| {
        if !tty {
            return;
        }
        let line = match p {
            Progress::Applied {
                done,
                total,
                key,
                outcome,
            } => format!("[{done}/{total}] {key} {outcome}"),
            Progress::Pruned { key } => format!("pruned {key}"),
        };
        let _ = write!(std::io::stderr(), "\r\x1b[2K{line}");
    }
}

fn end_progress() {
    if std::io::stderr().is_terminal() {
        let _ = write!(std::io::stderr(), "\r\x1b[2K");
    }
}

/// `helm history` of a release, the records that cannot be read named on
/// stderr and skipped.
pub(super) async fn read_history(
    cluster: &Cluster,
    name: &str,
    namespace: &str,
) -> Result<Vec<release::Release>, CmdError> {
    let h = release::read_history(cluster, name, namespace)
        .await
        .map_err(cerr)?;
    for w in &h.warnings {
        let _ = writeln!(std::io::stderr(), "{w}");
    }
    Ok(h.releases)
}

pub fn run_apply(a: ApplyArgs) -> Result<(), CmdError> {
    let rt = runtime()?;
    rt.block_on(async {
        let cluster = Cluster::connect(&a.chart.cluster.options()).await.map_err(cerr)?;
        let hist = read_history(&cluster, &a.chart.name, &a.chart.namespace).await?;
        let next = release::next_revision(&hist);
        let r = render(&a.chart, next, &cluster)?;
        let req = InstallRequest {
            name: a.chart.name.clone(),
            namespace: a.chart.namespace.clone(),
            chart: r.chart,
            config: r.config,
            rendered: r.rendered,
            notes: r.notes,
            labels: Default::default(),
            apply: apply_options(&a.chart, a.dry_run),
            history_max: a.history_max,
            skip_crds: a.chart.skip_crds,
            create_namespace: a.create_namespace,
            no_hooks: a.no_hooks,
            hook_timeout: a.timeout,
            lock_timeout: Duration::from_secs(a.lock_timeout_s),
            take_ownership: a.chart.take_ownership,
        };
        let mut progress = progress_printer();
        let mut log = |line: &str| {
            let _ = writeln!(std::io::stderr(), "{line}");
        };
        let out =
            release::upgrade_install_rendered_for(&cluster, &req, Some(next), &mut progress, &mut log)
                .await;
        end_progress();
        let mut stdout = std::io::stdout().lock();
        match out.map_err(cerr)? {
            InstallOutcome::Unchanged { version } => writeln!(
                stdout,
                "release {:?} unchanged (revision {version}): the render equals the deployed one, nothing applied",
                req.name
            ),
            InstallOutcome::Deployed { version, report } => {
                for (k, why) in &report.foreign {
                    log(&format!("warning: {k} not pruned: {why}"));
                }
                writeln!(
                stdout,
                "release {:?} revision {version} deployed: {}",
                req.name,
                report.summary()
                )
            }
            InstallOutcome::DryRun { report } => writeln!(
                stdout,
                "release {:?} (dry run, nothing written): {}",
                req.name,
                report.summary()
            ),
        }
        .map_err(cerr)?;
        // helm's PrintRelease: the notes after every install/upgrade.
        if !req.notes.trim().is_empty() {
            writeln!(stdout, "NOTES:\n{}", req.notes.trim()).map_err(cerr)?;
        }
        Ok(())
    })
}

pub fn run_uninstall(a: UninstallArgs) -> Result<(), CmdError> {
    let rt = runtime()?;
    rt.block_on(async {
        let cluster = Cluster::connect(&a.cluster.options()).await.map_err(cerr)?;
        let mut log = |line: &str| {
            let _ = writeln!(std::io::stderr(), "{line}");
        };
        let opts = release::UninstallOptions {
            keep_history: a.keep_history,
            no_hooks: a.no_hooks,
            hook_timeout: a.timeout,
            lock_timeout: Duration::from_secs(a.lock_timeout_s),
        };
        let rep = release::uninstall(&cluster, &a.name, &a.namespace, &opts, &mut log)
            .await
            .map_err(cerr)?;
        for (k, why) in &rep.foreign {
            log(&format!("warning: {k} left in place: {why}"));
        }
        let mut stdout = std::io::stdout().lock();
        if !rep.kept.is_empty() {
            let _ = writeln!(
                stdout,
                "These resources were kept due to the resource policy:"
            );
            for k in &rep.kept {
                let _ = writeln!(stdout, "[{k}]");
            }
            let _ = writeln!(stdout);
        }
        writeln!(
            stdout,
            "release \"{}\" uninstalled ({} objects deleted)",
            a.name,
            rep.deleted.len()
        )
        .map_err(cerr)
    })
}

pub fn run_history(a: HistoryArgs) -> Result<(), CmdError> {
    let rt = runtime()?;
    rt.block_on(async {
        let cluster = Cluster::connect(&a.cluster.options()).await.map_err(cerr)?;
        let hist = read_history(&cluster, &a.name, &a.namespace).await?;
        if hist.is_empty() {
            return Err(CmdError("release: not found".into()));
        }
        if a.output != HistoryFormat::Table {
            // helm's `releaseHistory` entries: these keys, `updated` as Go
            // marshals a time (RFC 3339 with nanoseconds).
            let entries: Vec<serde_json::Map<String, serde_json::Value>> = hist
                .iter()
                .map(|r| {
                    let info = r.info.clone().unwrap_or_default();
                    let mut m = serde_json::Map::new();
                    m.insert("revision".into(), r.version.into());
                    m.insert("updated".into(), info.last_deployed.clone().into());
                    m.insert("status".into(), info.status.to_string().into());
                    m.insert("chart".into(), r.chart_label().into());
                    m.insert("app_version".into(), r.app_version().into());
                    m.insert("description".into(), info.description.clone().into());
                    // Beyond helm's keys: the revision's lifecycle state
                    // (Octopod's names); the table stays helm's.
                    m.insert(
                        "state".into(),
                        crate::release::lifecycle::state(r).as_str().into(),
                    );
                    m
                })
                .collect();
            let text = match a.output {
                HistoryFormat::Json => serde_json::to_string(&entries).map_err(cerr)?,
                _ => {
                    let mut out = String::new();
                    for e in &entries {
                        let doc = crate::values::values_to_yaml(e);
                        for (i, line) in doc.lines().enumerate() {
                            out.push_str(if i == 0 { "- " } else { "  " });
                            out.push_str(line);
                            out.push('\n');
                        }
                    }
                    if out.is_empty() {
                        "[]".to_string()
                    } else {
                        out.trim_end().to_string()
                    }
                }
            };
            writeln!(std::io::stdout().lock(), "{text}").map_err(cerr)?;
            return Ok(());
        }
        let mut rows = vec![[
            "REVISION".to_string(),
            "UPDATED".into(),
            "STATUS".into(),
            "CHART".into(),
            "APP VERSION".into(),
            "DESCRIPTION".into(),
        ]];
        for r in &hist {
            let info = r.info.clone().unwrap_or_default();
            rows.push([
                r.version.to_string(),
                ansic(&info.last_deployed),
                info.status.to_string(),
                r.chart_label(),
                r.app_version(),
                info.description.clone(),
            ]);
        }
        let mut w = [0usize; 6];
        for row in &rows {
            for (i, c) in row.iter().enumerate() {
                w[i] = w[i].max(c.chars().count());
            }
        }
        let mut stdout = std::io::stdout().lock();
        for row in &rows {
            let line: Vec<String> = row
                .iter()
                .enumerate()
                .map(|(i, c)| format!("{c:<width$}", width = w[i]))
                .collect();
            writeln!(stdout, "{}", line.join("\t").trim_end()).map_err(cerr)?;
        }
        Ok(())
    })
}

/// Go's ANSIC layout (`Mon Jan _2 15:04:05 2006`), as `helm history` prints.
fn ansic(t: &str) -> String {
    chrono::DateTime::parse_from_rfc3339(t)
        .map(|d| d.format("%a %b %e %H:%M:%S %Y").to_string())
        .unwrap_or_else(|_| t.to_string())
}

//! `antiopa run`: the operator's flags (each also read from addon-operator's
//! environment variable), logging as addon-operator logs (`LOG_LEVEL`,
//! `LOG_TYPE`), and the process's signals: the first SIGTERM/SIGINT stops
//! the operator gracefully, a second exits at once (128 + signal, as
//! addon-operator), SIGHUP makes it look at the module directories again.

use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use clap::{Args, ValueEnum};
use tokio::signal::unix::{SignalKind, signal};

use super::module::{HookLimits, run_options_with};
use crate::cluster::{Cluster, ClusterOptions, RateLimit};
use crate::module::ModulesSettings;
use crate::operator::{self, Settings, Signals, Status};

#[derive(Args, Debug)]
pub struct RunArgs {
    /// Namespace of the releases and of the ConfigMap (also
    /// $SHELL_OPERATOR_NAMESPACE).
    #[arg(short = 'n', long, env = "ADDON_OPERATOR_NAMESPACE")]
    namespace: Option<String>,
    /// The ConfigMap with the config values.
    #[arg(
        long = "config-map",
        env = "ADDON_OPERATOR_CONFIG_MAP",
        default_value = "addon-operator"
    )]
    config_map: String,
    /// Modules directories, colon-separated (default: $MODULES_DIR,
    /// $ADDON_OPERATOR_MODULES_DIR, or ./modules).
    #[arg(long = "modules-dir")]
    modules_dir: Option<String>,
    /// Global hooks directory (default: $GLOBAL_HOOKS_DIR,
    /// $ADDON_OPERATOR_GLOBAL_HOOKS_DIR, or ./global-hooks).
    #[arg(long = "global-hooks-dir")]
    global_hooks_dir: Option<PathBuf>,
    /// Address of the HTTP server (metrics, health; also
    /// $SHELL_OPERATOR_LISTEN_ADDRESS) [default: 0.0.0.0].
    #[arg(long = "listen-address", env = "ADDON_OPERATOR_LISTEN_ADDRESS")]
    listen_address: Option<String>,
    /// Port of the HTTP server (also $SHELL_OPERATOR_LISTEN_PORT) [default: 9650].
    #[arg(long = "listen-port", env = "ADDON_OPERATOR_LISTEN_PORT")]
    listen_port: Option<u16>,
    /// Prefix of the operator's own metrics (also
    /// $SHELL_OPERATOR_PROMETHEUS_METRICS_PREFIX) [default: addon_operator_].
    #[arg(
        long = "prometheus-metrics-prefix",
        env = "ADDON_OPERATOR_PROMETHEUS_METRICS_PREFIX"
    )]
    metrics_prefix: Option<String>,
    /// Unix socket of the debug API (`antiopa module …`, `queue list`); an
    /// empty value: none.
    #[arg(
        long = "debug-unix-socket",
        env = "DEBUG_UNIX_SOCKET",
        default_value = super::ctl::DEFAULT_SOCKET
    )]
    debug_socket: PathBuf,
    /// Also serve the debug API over HTTP on this host:port (it shows
    /// values and, on request, Secret data: keep it private).
    #[arg(long = "debug-http-server-addr", env = "DEBUG_HTTP_SERVER_ADDR")]
    debug_http_addr: Option<String>,
    /// File holding the bearer token the status page's actions (`/ui/`:
    /// run, archive, restore) need, e.g. a mounted Secret; without it the
    /// page is read-only.
    #[arg(long = "ui-token-file", env = "ANTIOPA_UI_TOKEN_FILE")]
    ui_token_file: Option<PathBuf>,
    /// Serve the status page (`/ui/`) to clients on other hosts too; by
    /// default it answers loopback clients only (`kubectl port-forward`)
    /// while metrics and health stay open on the HTTP port.
    #[arg(long = "ui-remote", env = "ANTIOPA_UI_REMOTE", value_parser = clap::builder::BoolishValueParser::new(), default_value = "false", num_args = 0..=1, default_missing_value = "true")]
    ui_remote: bool,
    /// Log level: error, warn, info, debug, trace.
    #[arg(long = "log-level", env = "LOG_LEVEL", default_value = "info")]
    log_level: String,
    /// Log format.
    #[arg(
        long = "log-type",
        env = "LOG_TYPE",
        value_enum,
        default_value = "text"
    )]
    log_type: LogType,
    /// Release revisions kept per module (0: all).
    #[arg(long = "history-max", env = "HELM_HISTORY_MAX", default_value_t = 10)]
    history_max: usize,
    /// How long chart hooks may run (a Go duration or seconds).
    #[arg(long = "helm-timeout", env = "HELM_TIMEOUT", default_value = "20m", value_parser = super::module::parse_duration_arg)]
    helm_timeout: Duration,
    /// Path to the kubeconfig file (default: in-cluster, then ~/.kube/config).
    #[arg(long, env = "KUBE_CONFIG")]
    kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use.
    #[arg(long = "kube-context", env = "KUBE_CONTEXT")]
    context: Option<String>,
    /// Client-side request rate limit (requests per second; 0: none).
    #[arg(
        long = "kube-client-qps",
        env = "KUBE_CLIENT_QPS",
        default_value_t = 50.0
    )]
    qps: f64,
    /// Client-side request burst.
    #[arg(
        long = "kube-client-burst",
        env = "KUBE_CLIENT_BURST",
        default_value_t = 100
    )]
    burst: u32,
    /// Modules of equal order run at once.
    #[arg(long, env = "ANTIOPA_PARALLEL_MODULES", default_value_t = 4)]
    parallel: usize,
    /// How often module directories are looked at for changes (0: only
    /// on SIGHUP).
    #[arg(long = "rescan-interval", env = "ANTIOPA_RESCAN_INTERVAL", default_value = "15s", value_parser = super::module::parse_duration_arg)]
    rescan_interval: Duration,
    /// A watch of kubernetes bindings whose server sends bookmarks and
    /// that got neither an event nor a bookmark for this long is restarted
    /// (real apiservers send a bookmark about every minute).
    #[arg(long = "watch-liveness", env = "ANTIOPA_WATCH_LIVENESS", default_value = "2m", value_parser = super::module::parse_duration_arg)]
    watch_liveness: Duration,
    /// Archived module releases older than this are cleaned up (Go
    /// duration: 336h; or days: 14d).
    #[arg(long = "archive-retention", env = "ANTIOPA_ARCHIVE_RETENTION", default_value = "14d", value_parser = super::lifecycle::parse_retention)]
    archive_retention: Duration,
    /// How often expired archives are looked for (and once at start).
    #[arg(long = "archive-sweep-interval", env = "ANTIOPA_ARCHIVE_SWEEP_INTERVAL", default_value = "1h", value_parser = super::module::parse_duration_arg)]
    archive_sweep_interval: Duration,
    /// Converge once, then exit (non-zero when a module or global hook
    /// failed).
    #[arg(long)]
    once: bool,
    /// Run as one of several replicas: only the holder of the Lease runs
    /// hooks and writes (addon-operator's $ADDON_OPERATOR_HA=true). The
    /// identity is $POD_NAME (else $ADDON_OPERATOR_POD, else the host name).
    #[arg(
        long = "leader-elect",
        env = "ADDON_OPERATOR_HA",
        num_args = 0..=1,
        require_equals = true,
        default_value_t = false,
        default_missing_value = "true",
        value_parser = clap::builder::BoolishValueParser::new()
    )]
    leader_elect: bool,
    /// The Lease of leader election, in the operator's namespace.
    #[arg(
        long = "leader-election-lease",
        env = "ANTIOPA_LEADER_ELECTION_LEASE",
        default_value = operator::leader::DEFAULT_LEASE_NAME
    )]
    lease: String,
    #[command(flatten)]
    limits: HookLimits,
}

#[derive(ValueEnum, Clone, Copy, Debug)]
enum LogType {
    Text,
    Json,
    Color,
}

/// Logging for the operator's process: one line per event on stderr.
fn init_logging(a: &RunArgs) -> Result<(), String> {
    let filter = tracing_subscriber::EnvFilter::try_new(a.log_level.to_lowercase())
        .map_err(|e| format!("bad LOG_LEVEL '{}': {e}", a.log_level))?;
    let b = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false);
    let r = match a.log_type {
        LogType::Json => b.json().flatten_event(true).try_init(),
        LogType::Text => b.with_ansi(false).try_init(),
        LogType::Color => b.with_ansi(true).try_init(),
    };
    r.map_err(|e| e.to_string())
}

/// A set, non-empty environment variable.
fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// The kernel's host name (a pod's name, in a pod).
fn host_name() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .or_else(|| env("HOSTNAME"))
}

fn settings(a: &RunArgs) -> Result<Settings, String> {
    let mut modules = ModulesSettings::from_env().map_err(|e| e.to_string())?;
    if let Some(d) = &a.modules_dir {
        modules.modules_dirs = crate::module::discovery::split_dirs(d);
    }
    if let Some(g) = &a.global_hooks_dir {
        modules.global_hooks_dir = Some(g.clone());
    }
    let namespace = a
        .namespace
        .clone()
        .or_else(|| env("SHELL_OPERATOR_NAMESPACE"))
        .filter(|n| !n.trim().is_empty())
        .ok_or("ADDON_OPERATOR_NAMESPACE (--namespace) is required")?;
    let mut s = Settings::new(&namespace, modules, run_options_with(&a.limits));
    s.config_map = a.config_map.clone();
    s.history_max = a.history_max;
    s.chart_hook_timeout = a.helm_timeout;
    s.once = a.once;
    s.parallel = a.parallel;
    s.rescan_interval = (!a.rescan_interval.is_zero()).then_some(a.rescan_interval);
    s.archive_retention = a.archive_retention;
    if a.archive_sweep_interval.is_zero() {
        return Err("--archive-sweep-interval must be more than 0".into());
    }
    s.archive_sweep_interval = a.archive_sweep_interval;
    let address = a
        .listen_address
        .clone()
        .or_else(|| env("SHELL_OPERATOR_LISTEN_ADDRESS"))
        .unwrap_or_else(|| "0.0.0.0".into());
    let port = match a.listen_port {
        Some(p) => p,
        None => match env("SHELL_OPERATOR_LISTEN_PORT") {
            Some(p) => p
                .parse()
                .map_err(|_| format!("SHELL_OPERATOR_LISTEN_PORT: '{p}' is not a port"))?,
            None => 9650,
        },
    };
    // An IPv6 address is bracketed in host:port.
    s.listen = Some(if address.contains(':') && !address.starts_with('[') {
        format!("[{address}]:{port}")
    } else {
        format!("{address}:{port}")
    });
    s.metrics_prefix = a
        .metrics_prefix
        .clone()
        .or_else(|| env("SHELL_OPERATOR_PROMETHEUS_METRICS_PREFIX"))
        .unwrap_or_else(|| operator::metrics::DEFAULT_PREFIX.into());
    s.debug_socket = (!a.debug_socket.as_os_str().is_empty()).then(|| a.debug_socket.clone());
    s.debug_http_addr = a.debug_http_addr.clone().filter(|v| !v.is_empty());
    s.ui_token_file = a
        .ui_token_file
        .clone()
        .filter(|p| !p.as_os_str().is_empty());
    s.ui_remote = a.ui_remote;
    if a.leader_elect && a.once {
        return Err("--once converges once and exits: it cannot take part in leader election (--leader-elect, $ADDON_OPERATOR_HA)".into());
    }
    if a.leader_elect {
        let identity = env("POD_NAME")
            .or_else(|| env("ADDON_OPERATOR_POD"))
            .or_else(host_name)
            .ok_or("--leader-elect: no identity: set POD_NAME")?;
        let mut l = operator::leader::LeaderSettings::new(&identity);
        l.lease = a.lease.clone();
        s.leader = Some(l);
        // The Lease is the release lock: only its holder writes, so a
        // release another replica left pending is taken over at once.
        s.lock_timeout = Duration::ZERO;
    }
    if a.watch_liveness.is_zero() {
        return Err("--watch-liveness must be more than 0".into());
    }
    s.watch.liveness = a.watch_liveness;
    Ok(s)
}

pub fn run_operator(a: RunArgs) -> i32 {
    let fail = |e: String| {
        let _ = writeln!(std::io::stderr(), "Error: {e}");
        1
    };
    // addon-operator refuses to start with Helm 2's settings: they name a
    // Tiller that neither it nor antiopa talks to.
    if let Some((k, _)) = std::env::vars().find(|(k, _)| {
        k == "HELM2" || k.starts_with("TILLER_") || k.starts_with("ADDON_OPERATOR_TILLER_")
    }) {
        return fail(format!("{k} is set: Helm 2 (Tiller) is not supported"));
    }
    if let Err(e) = init_logging(&a) {
        return fail(e);
    }
    let settings = match settings(&a) {
        Ok(s) => s,
        Err(e) => return fail(e),
    };
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return fail(e.to_string()),
    };
    let kubeconfig = a
        .kubeconfig
        .clone()
        .or_else(|| std::env::var_os("KUBECONFIG").map(PathBuf::from));
    let opts = ClusterOptions {
        kubeconfig,
        context: a.context.clone(),
        rate_limit: Some(RateLimit {
            qps: a.qps,
            burst: a.burst,
        }),
        request_timeout: Some(Duration::from_secs(60)),
        // `antiopa/0.1.0 (POD)`: which replica made a request.
        user_agent: Some(match &settings.leader {
            Some(l) => format!("antiopa/{} ({})", env!("CARGO_PKG_VERSION"), l.identity),
            None => format!("antiopa/{}", env!("CARGO_PKG_VERSION")),
        }),
    };
    rt.block_on(async move {
        let cluster = match Cluster::connect(&opts).await {
            Ok(c) => c,
            Err(e) => return fail(e.to_string()),
        };
        let signals = Signals::default();
        if let Err(e) = watch_signals(signals.clone()) {
            return fail(e);
        }
        let status = Arc::new(RwLock::new(Status::default()));
        match operator::run(settings, cluster, signals, status).await {
            Ok(()) => 0,
            Err(e) => {
                tracing::error!("{e}");
                1
            }
        }
    })
}

/// SIGTERM/SIGINT: the first stops the operator gracefully, a second exits
/// at once; SIGHUP: reload.
fn watch_signals(signals: Signals) -> Result<(), String> {
    let mut term = signal(SignalKind::terminate()).map_err(|e| e.to_string())?;
    let mut int = signal(SignalKind::interrupt()).map_err(|e| e.to_string())?;
    let mut hup = signal(SignalKind::hangup()).map_err(|e| e.to_string())?;
    tokio::spawn(async move {
        loop {
            let sig = tokio::select! {
                _ = term.recv() => 15,
                _ = int.recv() => 2,
                _ = hup.recv() => {
                    signals.reload.notify_one();
                    continue;
                }
            };
            if signals.shutdown.is_cancelled() {
                tracing::warn!("second signal: exiting now");
                std::process::exit(128 + sig);
            }
            tracing::info!(
                signal = sig,
                "stopping: finishing the module runs under way (signal again to exit now)"
            );
            signals.shutdown.cancel();
        }
    });
    Ok(())
}

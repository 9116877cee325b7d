//! `antiopa archive`, `restore`, `cleanup`: a release's life after install
//! (see [`crate::release::lifecycle`]), each action named with who did it.

use std::io::Write;
use std::time::Duration;

use clap::Args;

use super::apply::{ClusterArgs, CmdError, cerr, runtime};
use crate::cluster::Cluster;
use crate::release::lifecycle;

#[derive(Args, Debug)]
pub struct LifecycleArgs {
    /// Release name (a module's release is named after the module).
    name: String,
    #[arg(short = 'n', long, default_value = "default", env = "HELM_NAMESPACE")]
    namespace: String,
    /// Who acts, for the action log (default: $USER@host).
    #[arg(long)]
    actor: Option<String>,
    #[command(flatten)]
    cluster: ClusterArgs,
}

#[derive(Args, Debug)]
pub struct CleanupArgs {
    /// Release name; with --expired, none.
    #[arg(required_unless_present = "expired")]
    name: Option<String>,
    #[arg(short = 'n', long, default_value = "default", env = "HELM_NAMESPACE")]
    namespace: String,
    /// Clean up every archived release of the namespace older than --retention.
    #[arg(long)]
    expired: bool,
    /// How long archived releases are kept (Go duration: 336h, 90m; or days: 14d).
    #[arg(long, default_value = "14d", env = "ANTIOPA_ARCHIVE_RETENTION", value_parser = parse_retention)]
    retention: Duration,
    /// Who acts, for the action log (default: $USER@host).
    #[arg(long)]
    actor: Option<String>,
    #[command(flatten)]
    cluster: ClusterArgs,
}

/// `14d`, or a Go duration.
pub fn parse_retention(s: &str) -> Result<Duration, String> {
    if let Some(d) = s.strip_suffix('d')
        && let Ok(n) = d.parse::<u64>()
    {
        return Ok(Duration::from_secs(n * 24 * 3600));
    }
    crate::gocompat::time::parse_duration(s)
        .map_err(|e| format!("'{s}': {e} (a Go duration such as 336h, or days: 14d)"))
        .and_then(|d| u64::try_from(d).map_err(|_| format!("'{s}': a negative retention")))
        .map(Duration::from_nanos)
}

fn stderr_log() -> impl FnMut(&str) + Send {
    |line: &str| {
        let _ = writeln!(std::io::stderr(), "{line}");
    }
}

pub fn run_archive(a: LifecycleArgs) -> Result<(), CmdError> {
    let rt = runtime()?;
    rt.block_on(async {
        let cluster = Cluster::connect(&a.cluster.options()).await.map_err(cerr)?;
        let actor = a.actor.clone().unwrap_or_else(lifecycle::default_actor);
        let mut log = stderr_log();
        let rep = lifecycle::archive(&cluster, &a.name, &a.namespace, &actor, &mut log)
            .await
            .map_err(cerr)?;
        let mut out = std::io::stdout().lock();
        for k in &rep.kept {
            let _ = writeln!(out, "kept: {k}");
        }
        for (k, why) in &rep.foreign {
            let _ = writeln!(std::io::stderr(), "warning: {k} left in place: {why}");
        }
        writeln!(
            out,
            "release \"{}\" archived (revision {}, {} objects deleted, {} kept)",
            a.name,
            rep.version,
            rep.deleted.len(),
            rep.kept.len()
        )
        .map_err(cerr)
    })
}

pub fn run_restore(a: LifecycleArgs) -> Result<(), CmdError> {
    let rt = runtime()?;
    rt.block_on(async {
        let cluster = Cluster::connect(&a.cluster.options()).await.map_err(cerr)?;
        let actor = a.actor.clone().unwrap_or_else(lifecycle::default_actor);
        let mut log = stderr_log();
        let v = lifecycle::restore(&cluster, &a.name, &a.namespace, &actor, &mut log)
            .await
            .map_err(cerr)?;
        writeln!(
            std::io::stdout(),
            "release \"{}\" restored (revision {v})",
            a.name
        )
        .map_err(cerr)
    })
}

pub fn run_cleanup(a: CleanupArgs) -> Result<(), CmdError> {
    let rt = runtime()?;
    rt.block_on(async {
        let cluster = Cluster::connect(&a.cluster.options()).await.map_err(cerr)?;
        let actor = a.actor.clone().unwrap_or_else(lifecycle::default_actor);
        let mut log = stderr_log();
        let names: Vec<String> = match (&a.name, a.expired) {
            (Some(n), false) => vec![n.clone()],
            _ => lifecycle::expired_archives(&cluster, &a.namespace, a.retention)
                .await
                .map_err(cerr)?
                .into_iter()
                .map(|(n, _)| n)
                .collect(),
        };
        let mut out = std::io::stdout().lock();
        for name in names {
            let rep = lifecycle::cleanup(&cluster, &name, &a.namespace, &actor, &mut log)
                .await
                .map_err(cerr)?;
            writeln!(
                out,
                "release \"{name}\" cleaned up ({} claims deleted, history removed)",
                rep.deleted.len()
            )
            .map_err(cerr)?;
        }
        Ok(())
    })
}

//! `antiopa drift [MODULE]`: what of the deployed releases differs on the
//! cluster now. Each object of a module's deployed revision is read and
//! dry-run applied (`dryRun=All`, field manager `antiopa`), as the operator
//! checks it; objects gone and objects whose fields differ are listed as
//! `antiopa diff --live` lists changes, with the module's `driftIgnore`
//! rules (from the release's values) applied. Exit 0: nothing differs; 1:
//! something does; 2: an error.

use std::io::Write;

use clap::Args;

use super::apply::{ClusterArgs, CmdError, runtime};
use crate::apply::LiveChange;
use crate::cluster::Cluster;
use crate::drift::Finding;

#[derive(Args, Debug)]
pub struct DriftArgs {
    /// Only this module (default: every module's release in the namespace).
    module: Option<String>,
    /// Namespace of the releases (the operator's namespace).
    #[arg(short = 'n', long, env = "ADDON_OPERATOR_NAMESPACE")]
    namespace: String,
    /// Print Secret values; by default they are masked as `kubectl diff`
    /// masks them.
    #[arg(long = "show-secrets")]
    show_secrets: bool,
    #[command(flatten)]
    cluster: ClusterArgs,
}

fn cerr(e: impl std::fmt::Display) -> CmdError {
    CmdError(e.to_string())
}

/// Runs `antiopa drift`; returns whether anything differs.
pub fn run_drift(a: DriftArgs) -> Result<bool, CmdError> {
    let rt = runtime()?;
    rt.block_on(async {
        let cluster = Cluster::connect(&a.cluster.options()).await.map_err(cerr)?;
        let names = match &a.module {
            Some(m) => vec![m.clone()],
            None => crate::release::names_labelled(
                &cluster,
                &a.namespace,
                crate::operator::MODULE_LABEL,
            )
            .await
            .map_err(cerr)?
            .into_iter()
            .collect(),
        };
        let releases: Vec<(String, String)> = names
            .into_iter()
            .map(|n| {
                let key = crate::values::values_key(&n);
                (n, key)
            })
            .collect();
        let mut warnings = Vec::new();
        let found = crate::drift::scan(&cluster, &a.namespace, &releases, &mut warnings)
            .await
            .map_err(cerr)?;
        for w in &warnings {
            eprintln!("warning: {w}");
        }
        let mut out = std::io::stdout().lock();
        let (mut missing, mut changed) = (0, 0);
        for d in &found {
            let head = format!("{} {} (module {})", d.api_version, d.key, d.module);
            match &d.finding {
                Finding::InSync => {}
                Finding::Missing => {
                    missing += 1;
                    writeln!(out, "- {head}: missing").map_err(cerr)?;
                }
                Finding::Changed(c) => {
                    changed += 1;
                    writeln!(out, "~ {head}: {}", c.describe()).map_err(cerr)?;
                    let ch = LiveChange {
                        key: d.key.clone(),
                        live: Some(c.live.clone()),
                        would_be: Some(c.would_be.clone()),
                    };
                    write!(out, "{}", super::apply_live::unified(&ch, a.show_secrets))
                        .map_err(cerr)?;
                }
            }
        }
        writeln!(out, "\n{missing} missing, {changed} changed").map_err(cerr)?;
        Ok(missing + changed > 0)
    })
}

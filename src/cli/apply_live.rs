//! `antiopa diff --live NAME CHART`: render the chart, dry-run the apply
//! against the cluster and print, per object that would change, a unified
//! diff from the live state to what the server says the object would
//! become (objects to be pruned diff to nothing).
//!
//! The offline `antiopa diff` (two renders, no cluster) is its own code
//! path; this file is only the `--live` one.

use std::io::Write;

use clap::Args;

use super::apply::{CmdError, ReleaseChartArgs, apply_options, read_history, render, runtime};
use crate::apply::run::display_yaml;
use crate::apply::{LiveChange, Owner, decode, live_diff, split_rendered};
use crate::cluster::Cluster;
use crate::release;

#[derive(Args, Debug)]
pub struct LiveDiffArgs {
    /// Compare with the live cluster (server-side dry-run apply).
    #[arg(long, required = true)]
    pub live: bool,
    /// Print Secret values; by default they are masked as `kubectl diff`
    /// masks them.
    #[arg(long = "show-secrets")]
    pub show_secrets: bool,
    #[command(flatten)]
    pub chart: ReleaseChartArgs,
}

fn cerr(e: impl std::fmt::Display) -> CmdError {
    CmdError(e.to_string())
}

/// Run `antiopa diff --live`; returns whether anything differs.
pub fn run_live_diff(a: LiveDiffArgs) -> Result<bool, CmdError> {
    let rt = runtime()?;
    rt.block_on(async {
        let c = &a.chart;
        let cluster = Cluster::connect(&c.cluster_options()).await.map_err(cerr)?;
        let hist = read_history(&cluster, c.name(), c.namespace()).await?;
        let deployed = hist
            .iter()
            .rposition(|r| r.status() == release::Status::Deployed);
        let next = release::next_revision(&hist);
        let r = render(c, next, &cluster)?;
        let mut desired = Vec::new();
        if !c.skip_crds() {
            desired.extend(decode(&r.rendered.crds).map_err(cerr)?);
        }
        // As the apply would send them: stamped with the release's
        // ownership metadata and checked against what exists.
        let owner = Owner {
            take_ownership: c.take_ownership(),
            upgrade: next.is_upgrade,
            ..Owner::new(c.name(), c.namespace())
        };
        desired.extend(release::owned_objects(&r.rendered, &owner).map_err(cerr)?);
        let mut opts = apply_options(c, true);
        opts.owner = Some(owner);
        let previous = hist[deployed.unwrap_or(0)..]
            .iter()
            .flat_map(|r| decode(&split_rendered(&r.manifest).manifests).unwrap_or_default())
            .collect();
        let changes = live_diff(&cluster, desired, previous, &opts)
            .await
            .map_err(cerr)?;
        let mut out = std::io::stdout().lock();
        for ch in &changes {
            write!(out, "{}", unified(ch, a.show_secrets)).map_err(cerr)?;
        }
        Ok(!changes.is_empty())
    })
}

/// One object's change as a unified diff (`--- live` / `+++ would-be`).
pub fn unified(ch: &LiveChange, show_secrets: bool) -> String {
    let (mut live, mut would_be) = (ch.live.clone(), ch.would_be.clone());
    if !show_secrets {
        crate::diff::secrets::mask_json(live.as_mut(), would_be.as_mut());
    }
    let old = live.as_ref().map(display_yaml).unwrap_or_default();
    let new = would_be.as_ref().map(display_yaml).unwrap_or_default();
    similar::TextDiff::from_lines(&old, &new)
        .unified_diff()
        .context_radius(3)
        .header(&format!("live/{}", ch.key), &format!("would-be/{}", ch.key))
        .to_string()
}

//! Archived modules in the operator, as Octopod keeps deployments: a
//! module whose `<module-name>-archived: "true"` key is in the operator's
//! ConfigMap has its release archived ([`lifecycle::archive`]: workloads
//! deleted, PersistentVolumeClaims and history kept) instead of run, and
//! stays so (phase `Archived`, no ModuleRun, no hooks) while the key is
//! there. Without the key, the next ModuleRun restores it first
//! ([`lifecycle::restore`], so the history says who restored what) and
//! then renders afresh. An archived release is never uninstalled by
//! ModuleDelete: it stays archived until the retention sweep here (or
//! `antiopa cleanup`) cleans it up.

use std::time::Duration;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::{Ctx, MODULE_LABEL, Phase};
use crate::release::{self, lifecycle};

/// Who archives and restores through the ConfigMap, in the action log.
pub(crate) const CONFIG_ACTOR: &str = "antiopa (config)";
/// Who cleans up expired archives, in the action log.
pub(crate) const RETENTION_ACTOR: &str = "antiopa (retention)";
/// How often the retention sweep runs by default.
pub const DEFAULT_SWEEP_INTERVAL: Duration = Duration::from_secs(3600);

/// The Octopod state of release `name`'s newest record (`None`: no release).
pub(crate) async fn release_state(
    ctx: &Ctx,
    name: &str,
) -> Result<Option<lifecycle::State>, String> {
    let hist = release::history(&ctx.cluster, name, &ctx.settings.namespace)
        .await
        .map_err(|e| format!("reading the release: {e}"))?;
    Ok(hist.last().map(lifecycle::state))
}

/// Keeps module `name` archived: its deployed release archived (nothing
/// to do when there is none or it is archived already); phase `Archived`.
pub(crate) async fn archive_module(ctx: &Ctx, name: &str) -> Result<(), String> {
    // Its workloads are about to go: not drift to restore.
    ctx.drift.stop(name);
    let state = release_state(ctx, name).await?;
    match state {
        Some(lifecycle::State::Running) => {
            let mut log = |line: &str| tracing::warn!(module = %name, "{line}");
            let rep = lifecycle::archive(
                &ctx.cluster,
                name,
                &ctx.settings.namespace,
                CONFIG_ACTOR,
                &mut log,
            )
            .await
            .map_err(|e| format!("archiving the release: {e}"))?;
            tracing::info!(
                module = %name,
                revision = rep.version,
                deleted = rep.deleted.len(),
                kept = rep.kept.len(),
                "release archived (its ConfigMap key)"
            );
        }
        None
        | Some(
            lifecycle::State::Archived | lifecycle::State::Deleted | lifecycle::State::Superseded,
        ) => {}
        Some(s) => {
            return Err(format!(
                "archiving the release: it is {s}, only a deployed release can be archived"
            ));
        }
    }
    ctx.module_status(name, |m| {
        m.phase = Phase::Archived;
        m.last_error = None;
        m.retry_at = None;
        m.waiting_for = None;
    });
    Ok(())
}

/// Restores module `name`'s release when it is archived (the key is gone),
/// before its ModuleRun renders afresh. Whether it was.
pub(crate) async fn restore_if_archived(
    ctx: &Ctx,
    name: &str,
    history: &[release::Release],
) -> Result<bool, String> {
    if !history.last().is_some_and(lifecycle::is_archived) {
        return Ok(false);
    }
    let mut log = |line: &str| tracing::warn!(module = %name, "{line}");
    let v = lifecycle::restore(
        &ctx.cluster,
        name,
        &ctx.settings.namespace,
        CONFIG_ACTOR,
        &mut log,
    )
    .await
    .map_err(|e| format!("restoring the archived release: {e}"))?;
    tracing::info!(module = %name, revision = v, "archived release restored");
    Ok(true)
}

/// Starts the retention sweep: at start and every `interval`, the module
/// releases of the operator's namespace archived longer than the retention
/// are cleaned up (claims and history deleted). Only while leading: a
/// standby writes nothing.
pub(crate) fn start_retention_sweep(
    ctx: &Ctx,
    shutdown: &CancellationToken,
    leading: Option<watch::Receiver<bool>>,
) {
    let ctx = ctx.clone();
    let shutdown = shutdown.clone();
    tokio::spawn(async move {
        let mut every = tokio::time::interval(ctx.settings.archive_sweep_interval);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = every.tick() => {}
            }
            if leading.as_ref().is_some_and(|rx| !*rx.borrow()) {
                continue;
            }
            sweep(&ctx).await;
        }
    });
}

/// One sweep; failures are logged and tried again at the next.
async fn sweep(ctx: &Ctx) {
    let ns = &ctx.settings.namespace;
    let retention = ctx.settings.archive_retention;
    let expired = match lifecycle::expired_archives(&ctx.cluster, ns, retention).await {
        Ok(e) => e,
        Err(e) => {
            tracing::error!("retention sweep: listing archived releases: {e}");
            return;
        }
    };
    if expired.is_empty() {
        return;
    }
    // Only the operator's own (module) releases: others in the namespace
    // are whoever archived them's to clean up.
    let modules = match release::names_labelled(&ctx.cluster, ns, MODULE_LABEL).await {
        Ok(m) => m,
        Err(e) => {
            tracing::error!("retention sweep: listing module releases: {e}");
            return;
        }
    };
    for (name, age) in expired {
        if !modules.contains(&name) {
            continue;
        }
        let mut log = |line: &str| tracing::warn!(module = %name, "{line}");
        match lifecycle::cleanup(&ctx.cluster, &name, ns, RETENTION_ACTOR, &mut log).await {
            Ok(rep) => {
                tracing::info!(
                    module = %name,
                    age_seconds = age.as_secs(),
                    claims_deleted = rep.deleted.len(),
                    "archived release cleaned up: older than the retention"
                );
                ctx.module_status(&name, |m| {
                    if m.phase == Phase::Archived {
                        m.revision = None;
                    }
                });
            }
            Err(e) => tracing::error!(module = %name, "retention sweep: cleaning up: {e}"),
        }
    }
}

//! addon-operator's ModuleRun and ModuleDelete for one module.
//!
//! A run renders first for the revision deployed now: when that render
//! equals the deployed one (checksum, manifest, notes) nothing is written,
//! so an unchanged module costs one history read and no write. Otherwise
//! it renders for the next revision (`.Release.Revision` and
//! `.Release.IsUpgrade` as `helm upgrade --install` sets them) and writes
//! the release.

use std::collections::BTreeMap;

use super::render::{ModuleRender, render_module};
use super::{Ctx, MODULE_LABEL, hook_log};
use crate::apply::ApplyOptions;
use crate::hooks::BindingType;
use crate::module::Session;
use crate::release::{self, InstallOutcome, InstallRequest, Next, Release, Status};

/// What a successful run did.
pub(crate) struct Ran {
    /// The deployed revision after the run (`None`: the module has no chart).
    pub revision: Option<i64>,
    /// A release revision was written.
    pub written: bool,
    /// `afterHelm` hooks changed the module's values: run it again.
    pub values_changed: bool,
}

/// ModuleRun: `onStartup` (first run), `beforeHelm`, values, render,
/// release, `afterHelm`.
pub(crate) async fn run(ctx: &Ctx, name: &str) -> Result<Ran, String> {
    // What this run writes and prunes is not drift; drift resumes after
    // the next successful run.
    ctx.drift.suspend(name);
    let ns = ctx.settings.namespace.clone();
    let mut history = release::history(&ctx.cluster, name, &ns)
        .await
        .map_err(|e| format!("reading the release: {e}"))?;
    // Archived through its ConfigMap key before, the key gone now.
    if super::archive::restore_if_archived(ctx, name, &history).await? {
        history = release::history(&ctx.cluster, name, &ns)
            .await
            .map_err(|e| format!("reading the release: {e}"))?;
    }
    let next = release::next_revision(&history);
    let deployed = deployed_render_for(&history);

    let n = name.to_string();
    let prepared = ctx
        .with_shared(move |shared| {
            Session::run_module_hooks_shared(shared, &n, &mut hook_log)?;
            let s = shared.lock().unwrap_or_else(|p| p.into_inner());
            let values = s.helm_values(&n, &mut hook_log)?;
            let m = s
                .tree
                .get(&n)
                .cloned()
                .ok_or_else(|| crate::module::ModuleError::UnknownModule(n.clone()))?;
            Ok::<_, crate::module::ModuleError>((m, values))
        })
        .await;
    let (module, values) = prepared.map_err(|e| e.to_string())?;
    ctx.execute_hook_operations().await?;
    let key = crate::values::values_key(name);
    let drift = crate::drift::Settings::from_values(values.get(&key), &key)
        .map_err(|e| format!("module '{name}': {e}"))?;
    // The manifest the deployed release holds after this run.
    let mut manifest = None;

    let mut ran = Ran {
        revision: None,
        written: false,
        values_changed: false,
    };
    if module.has_chart {
        let release_started = std::time::Instant::now();
        let render = |at: Next| {
            let (module, values, ns) = (module.clone(), values.clone(), ns.clone());
            let (limits, cluster) = (ctx.settings.limits, ctx.cluster.clone());
            // Renders need no session: several modules render at once.
            ctx.with_shared(move |_| render_module(&module, &values, &ns, at, limits, &cluster))
        };
        let first = render(deployed.unwrap_or(next))
            .await
            .map_err(|e| e.to_string())?;
        let version = match release::unchanged(&history, &ns, &first.rendered, &first.notes) {
            Some(v) => {
                manifest = Some(first.rendered.manifest_text());
                v
            }
            None => {
                let r = match deployed {
                    Some(_) => render(next).await.map_err(|e| e.to_string())?,
                    None => first,
                };
                ran.written = true;
                manifest = Some(r.rendered.manifest_text());
                install(ctx, name, r, next).await?
            }
        };
        ran.revision = Some(version);
        let operation = if ran.written { "upgrade" } else { "none" };
        ctx.metrics
            .release_operation(name, operation, release_started.elapsed());
    }

    let n = name.to_string();
    ran.values_changed = ctx
        .with_shared(move |shared| Session::run_after_helm_shared(shared, &n, &mut hook_log))
        .await
        .map_err(|e| e.to_string())?;
    ctx.execute_hook_operations().await?;
    if ctx.drift.is_enabled() {
        let objects = match &manifest {
            Some(m) if drift.mode != crate::drift::Mode::Disabled => {
                let mut warnings = Vec::new();
                let objs = crate::drift::tracked_objects(&ctx.cluster, name, &ns, m, &mut warnings)
                    .await
                    .map_err(|e| format!("watching the release's objects: {e}"))?;
                for w in warnings {
                    tracing::warn!(module = %name, "drift: {w}");
                }
                objs
            }
            _ => Vec::new(),
        };
        ctx.drift.refresh(name, objects, drift);
    }
    Ok(ran)
}

/// The revision a deployed release was rendered for, when the last
/// revision is deployed.
fn deployed_render_for(history: &[Release]) -> Option<Next> {
    let last = history.iter().max_by_key(|r| r.version)?;
    (last.status() == Status::Deployed).then_some(Next {
        version: last.version,
        // An install writes revision 1; later ones are upgrades (unless
        // kept uninstalled records came before: then one extra render).
        is_upgrade: last.version > 1,
    })
}

async fn install(ctx: &Ctx, name: &str, r: ModuleRender, next: Next) -> Result<i64, String> {
    let s = &ctx.settings;
    let mut apply = ApplyOptions::new(&s.namespace);
    apply.crd_timeout = std::time::Duration::from_secs(60);
    let req = InstallRequest {
        name: name.to_string(),
        namespace: s.namespace.clone(),
        chart: r.chart,
        config: r.config,
        rendered: r.rendered,
        notes: r.notes,
        labels: BTreeMap::from([(MODULE_LABEL.to_string(), name.to_string())]),
        apply,
        history_max: s.history_max,
        skip_crds: false,
        no_hooks: false,
        hook_timeout: s.chart_hook_timeout,
        create_namespace: false,
        lock_timeout: s.lock_timeout,
        // addon-operator adopts what a module renders (objects another
        // release or tool manages are refused all the same).
        take_ownership: true,
    };
    let mut log = |line: &str| tracing::warn!(module = %name, "{line}");
    let out = release::upgrade_install_rendered_for(
        &ctx.cluster,
        &req,
        Some(next),
        &mut |_| {},
        &mut log,
    )
    .await
    .map_err(|e| e.to_string())?;
    match out {
        InstallOutcome::Unchanged { version } => Ok(version),
        InstallOutcome::Deployed { version, report } => {
            tracing::info!(module = %name, revision = version, "release deployed: {}", report.summary());
            for (k, why) in &report.foreign {
                tracing::warn!(module = %name, "{k} not pruned: {why}");
            }
            Ok(version)
        }
        InstallOutcome::DryRun { .. } => Err("dry run".into()),
    }
}

/// ModuleDelete: `beforeDeleteHelm` (a failure stops here), the release
/// uninstalled, then `afterDeleteHelm`, which runs whether or not there
/// was a release. A module no longer on disk is purged without hooks.
pub(crate) async fn delete(
    ctx: &Ctx,
    name: &str,
    in_tree: bool,
    has_release: bool,
) -> Result<(), String> {
    tracing::info!(module = %name, "deleting: disabled or gone");
    // Its objects are about to go: not drift.
    ctx.drift.stop(name);
    if in_tree {
        let n = name.to_string();
        ctx.with_session(move |s| {
            s.run_module_binding(&n, BindingType::BeforeDeleteHelm, &mut hook_log)
        })
        .await
        .map_err(|e| e.to_string())?;
        ctx.execute_hook_operations().await?;
    }
    if has_release {
        let opts = release::UninstallOptions {
            hook_timeout: ctx.settings.chart_hook_timeout,
            lock_timeout: ctx.settings.lock_timeout,
            ..Default::default()
        };
        let mut log = |line: &str| tracing::warn!(module = %name, "{line}");
        match release::uninstall(&ctx.cluster, name, &ctx.settings.namespace, &opts, &mut log).await
        {
            Ok(report) => tracing::info!(
                module = %name,
                deleted = report.deleted.len(),
                "release uninstalled"
            ),
            Err(release::ReleaseError::NotFound(_)) => {}
            Err(e) => return Err(e.to_string()),
        }
    }
    if in_tree {
        let n = name.to_string();
        ctx.with_session(move |s| {
            s.forget_startup(&n);
            s.run_module_binding(&n, BindingType::AfterDeleteHelm, &mut hook_log)
        })
        .await
        .map_err(|e| e.to_string())?;
        ctx.execute_hook_operations().await?;
    }
    ctx.module_status(name, |m| {
        m.revision = None;
        m.phase = super::Phase::Disabled;
    });
    Ok(())
}

//! A release's life after install, as Octopod runs deployments: **archive**
//! (its workloads deleted, its PersistentVolumeClaims and history kept),
//! **restore** (the archived revision's chart, values and manifest applied
//! again as a new revision, the kept claims adopted back) and **cleanup**
//! (the kept claims and the history deleted), with archives cleaned up
//! after a retention. Helm-compatible underneath: an archived release is
//! helm's `uninstalled` record kept with `--keep-history` (so `helm
//! history` reads it, and `helm list --uninstalled` lists it), marked with
//! the labels below; a restore is an install of the next revision.
//!
//! Every action is logged twice where users look: in the release history
//! (the record's description says what, by whom) and as a Kubernetes Event
//! on the release's newest Secret (reason `Archived`, `Restored`,
//! `CleanedUp`, or `…Failed`), whose time and message `kubectl get events`
//! shows. Chart hooks do not run: an archive keeps data, so a `pre-delete`
//! hook that cleans up must not run; `antiopa uninstall` is the delete.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Event, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kube::api::{Api, PostParams};

use super::{
    Info, InstallOutcome, InstallRequest, Release, ReleaseError, Status, Store, manifest_objects,
    now, read_logged, take_lock, upgrade_install,
};
use crate::apply::{self, ApplyOptions, Object, Owner};
use crate::cluster::Cluster;

/// The release label saying where a release is in its life.
pub const LIFECYCLE_LABEL: &str = "antiopa.io/lifecycle";
/// When it was archived (Unix seconds), for the retention.
pub const ARCHIVED_AT_LABEL: &str = "antiopa.io/archived-at";
/// The retention of archived releases when none is given.
pub const DEFAULT_RETENTION: Duration = Duration::from_secs(14 * 24 * 3600);

/// A release's state as Octopod names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum State {
    /// `pending-install`.
    CreatePending,
    /// `pending-upgrade`, `pending-rollback`.
    UpdatePending,
    /// `uninstalling`.
    DeletePending,
    /// `deployed`.
    Running,
    /// `failed`.
    Failure,
    /// Archived: workloads gone, data and history kept.
    Archived,
    /// `uninstalled` (kept history, not archived), `superseded`, `unknown`.
    Deleted,
    Superseded,
    Unknown,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::CreatePending => "create pending",
            State::UpdatePending => "update pending",
            State::DeletePending => "delete pending",
            State::Running => "running",
            State::Failure => "failure",
            State::Archived => "archived",
            State::Deleted => "deleted",
            State::Superseded => "superseded",
            State::Unknown => "unknown",
        }
    }
}

impl std::fmt::Display for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The Octopod state of one revision.
pub fn state(r: &Release) -> State {
    match r.status() {
        Status::PendingInstall => State::CreatePending,
        Status::PendingUpgrade | Status::PendingRollback => State::UpdatePending,
        Status::Uninstalling => State::DeletePending,
        Status::Deployed => State::Running,
        Status::Failed => State::Failure,
        Status::Uninstalled if is_archived(r) => State::Archived,
        Status::Uninstalled => State::Deleted,
        Status::Superseded => State::Superseded,
        Status::Unknown => State::Unknown,
    }
}

/// An `uninstalled` record marked archived.
pub fn is_archived(r: &Release) -> bool {
    r.status() == Status::Uninstalled
        && r.labels.get(LIFECYCLE_LABEL).map(String::as_str) == Some("archived")
}

/// Who acts, for the action log: the caller's name for itself
/// (`--actor`), else `$USER@<host>`.
pub fn default_actor() -> String {
    let user = std::env::var("USER").unwrap_or_else(|_| "unknown".into());
    format!("{user}@{}", super::hostname())
}

/// What an archive or cleanup did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LifecycleReport {
    /// The revision recorded or acted on.
    pub version: i64,
    pub deleted: Vec<apply::Key>,
    /// Objects kept: the claims (archive), `helm.sh/resource-policy: keep`.
    pub kept: Vec<apply::Key>,
    /// Objects another release or tool has claimed since: left alone.
    pub foreign: Vec<(apply::Key, String)>,
}

fn is_claim(o: &Object) -> bool {
    o.kind == "PersistentVolumeClaim" && o.group().is_empty()
}

/// Archive: delete the objects of the deployed revision except its
/// PersistentVolumeClaims (and what `resource-policy: keep` keeps), and
/// mark the record `uninstalled` + archived, history kept.
pub async fn archive(
    cluster: &Cluster,
    name: &str,
    namespace: &str,
    actor: &str,
    log: &mut (dyn FnMut(&str) + Send),
) -> Result<LifecycleReport, ReleaseError> {
    let r = archive_inner(cluster, name, namespace, actor, log).await;
    event(cluster, name, namespace, "Archived", actor, &r).await;
    r
}

async fn archive_inner(
    cluster: &Cluster,
    name: &str,
    namespace: &str,
    actor: &str,
    log: &mut (dyn FnMut(&str) + Send),
) -> Result<LifecycleReport, ReleaseError> {
    let store = Store::new(cluster, namespace);
    let mut hist = read_logged(&store, name, log).await?;
    let Some(last) = hist.last() else {
        return Err(not_found(name, namespace));
    };
    if last.release.status() != Status::Deployed {
        return Err(ReleaseError::Lifecycle(format!(
            "release '{name}' is {} (revision {}): only a deployed release can be archived",
            state(&last.release),
            last.release.version
        )));
    }
    take_lock(&store, &mut hist, Duration::from_secs(600), log).await?;
    let Some(last) = hist.last() else {
        return Err(not_found(name, namespace));
    };
    let mut rel = last.release.clone();
    let mut warnings = Vec::new();
    let (claims, objects): (Vec<Object>, Vec<Object>) =
        manifest_objects(&rel.manifest, &mut warnings)
            .into_iter()
            .partition(is_claim);
    for w in &warnings {
        log(w);
    }
    let info = rel.info.get_or_insert_with(Info::default);
    info.status = Status::Uninstalling;
    info.deleted = now();
    store.update(&rel, Some(&super::holder())).await?;
    let owner = Owner::new(name, namespace);
    let done = apply::delete_all(cluster, objects, namespace, Some(&owner)).await?;
    let info = rel.info.get_or_insert_with(Info::default);
    info.status = Status::Uninstalled;
    info.description = format!("Archived by {actor}");
    rel.labels.insert(LIFECYCLE_LABEL.into(), "archived".into());
    rel.labels.insert(
        ARCHIVED_AT_LABEL.into(),
        chrono::Utc::now().timestamp().to_string(),
    );
    store.update(&rel, None).await?;
    let mut kept = done.kept;
    kept.extend(claims.iter().map(Object::key));
    Ok(LifecycleReport {
        version: rel.version,
        deleted: done.deleted,
        kept,
        foreign: done.foreign,
    })
}

/// Restore an archived release: its recorded chart, values, manifest and
/// notes installed again as the next revision (the kept claims are still
/// this release's, so they are taken back as they are).
pub async fn restore(
    cluster: &Cluster,
    name: &str,
    namespace: &str,
    actor: &str,
    log: &mut (dyn FnMut(&str) + Send),
) -> Result<i64, ReleaseError> {
    let r = restore_inner(cluster, name, namespace, actor, log).await;
    let report = r.as_ref().map(|v| LifecycleReport {
        version: *v,
        ..LifecycleReport::default()
    });
    let report = report.map_err(|e| ReleaseError::Lifecycle(e.to_string()));
    event(cluster, name, namespace, "Restored", actor, &report).await;
    r
}

async fn restore_inner(
    cluster: &Cluster,
    name: &str,
    namespace: &str,
    actor: &str,
    log: &mut (dyn FnMut(&str) + Send),
) -> Result<i64, ReleaseError> {
    let store = Store::new(cluster, namespace);
    let (_, last) = last_record(&store, name, namespace, log).await?;
    if !is_archived(&last) {
        return Err(ReleaseError::Lifecycle(format!(
            "release '{name}' is {} (revision {}): only an archived release can be restored",
            state(&last),
            last.version
        )));
    }
    let mut rendered = apply::split_rendered(&last.manifest);
    // The recorded manifest has no CRDs (helm never records `crds/`): they
    // stayed on archive, as CRDs always do.
    rendered.crds.clear();
    let mut labels: BTreeMap<String, String> = last
        .labels
        .iter()
        .filter(|(k, _)| !is_record_label(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    labels.insert(LIFECYCLE_LABEL.into(), "restored".into());
    let req = InstallRequest {
        name: name.to_string(),
        namespace: namespace.to_string(),
        chart: last.chart.clone().unwrap_or_default(),
        config: last.config.clone().unwrap_or_default(),
        rendered,
        notes: last
            .info
            .as_ref()
            .map(|i| i.notes.clone())
            .unwrap_or_default(),
        labels,
        apply: ApplyOptions::new(namespace),
        history_max: super::history_max_from_env(),
        skip_crds: true,
        no_hooks: true,
        hook_timeout: Duration::from_secs(300),
        create_namespace: false,
        lock_timeout: Duration::from_secs(600),
        take_ownership: false,
    };
    let version = match upgrade_install(cluster, &req, &mut |_| {}, log).await? {
        InstallOutcome::Deployed { version, .. } | InstallOutcome::Unchanged { version } => version,
        InstallOutcome::DryRun { .. } => unreachable!("not a dry run"),
    };
    // Say in the history what this revision is.
    let hist = read_logged(&store, name, log).await?;
    if let Some(s) = hist.iter().find(|s| s.release.version == version) {
        let mut rel = s.release.clone();
        let info = rel.info.get_or_insert_with(Info::default);
        info.description = format!("Restored revision {} by {actor}", last.version);
        store.update(&rel, None).await?;
    }
    Ok(version)
}

/// The release's records and its newest one; none is "not found".
async fn last_record(
    store: &Store,
    name: &str,
    namespace: &str,
    log: &mut (dyn FnMut(&str) + Send),
) -> Result<(Vec<super::Stored>, Release), ReleaseError> {
    let hist = read_logged(store, name, log).await?;
    match hist.last().map(|s| s.release.clone()) {
        Some(last) => Ok((hist, last)),
        None => Err(not_found(name, namespace)),
    }
}

fn not_found(name: &str, namespace: &str) -> ReleaseError {
    ReleaseError::Lifecycle(format!(
        "release '{name}' not found in namespace '{namespace}'"
    ))
}

/// Labels the store sets on every record itself (not to be copied).
fn is_record_label(k: &str) -> bool {
    matches!(
        k,
        "name" | "owner" | "status" | "version" | "createdAt" | "modifiedAt"
    ) || k == ARCHIVED_AT_LABEL
        || k == LIFECYCLE_LABEL
        || k == super::CHECKSUM_LABEL
}

/// Cleanup of an archived (or uninstalled, history kept) release: its kept
/// PersistentVolumeClaims and every record deleted.
pub async fn cleanup(
    cluster: &Cluster,
    name: &str,
    namespace: &str,
    actor: &str,
    log: &mut (dyn FnMut(&str) + Send),
) -> Result<LifecycleReport, ReleaseError> {
    let r = cleanup_inner(cluster, name, namespace, log).await;
    event(cluster, name, namespace, "CleanedUp", actor, &r).await;
    r
}

async fn cleanup_inner(
    cluster: &Cluster,
    name: &str,
    namespace: &str,
    log: &mut (dyn FnMut(&str) + Send),
) -> Result<LifecycleReport, ReleaseError> {
    let store = Store::new(cluster, namespace);
    let (hist, last) = last_record(&store, name, namespace, log).await?;
    if last.status() != Status::Uninstalled {
        return Err(ReleaseError::Lifecycle(format!(
            "release '{name}' is {} (revision {}): archive it first (only an archived release is cleaned up)",
            state(&last),
            last.version
        )));
    }
    let mut warnings = Vec::new();
    let claims: Vec<Object> = manifest_objects(&last.manifest, &mut warnings)
        .into_iter()
        .filter(is_claim)
        .collect();
    for w in &warnings {
        log(w);
    }
    let owner = Owner::new(name, namespace);
    let done = apply::delete_all(cluster, claims, namespace, Some(&owner)).await?;
    for s in &hist {
        store.delete(name, s.release.version).await?;
    }
    Ok(LifecycleReport {
        version: last.version,
        deleted: done.deleted,
        kept: done.kept,
        foreign: done.foreign,
    })
}

/// Archived releases in `namespace` whose archive is older than
/// `retention`, with their age.
pub async fn expired_archives(
    cluster: &Cluster,
    namespace: &str,
    retention: Duration,
) -> Result<Vec<(String, Duration)>, ReleaseError> {
    let store = Store::new(cluster, namespace);
    let names = store
        .names(&format!("{LIFECYCLE_LABEL}=archived,status=uninstalled"))
        .await?;
    let now = chrono::Utc::now().timestamp();
    let mut out = Vec::new();
    for name in names {
        let hist = store.history(&name).await?;
        let Some(last) = hist.records.last().map(|s| &s.release) else {
            continue;
        };
        if !is_archived(last) {
            continue;
        }
        let at = last
            .labels
            .get(ARCHIVED_AT_LABEL)
            .and_then(|v| v.parse::<i64>().ok())
            .unwrap_or(now);
        let age = Duration::from_secs(now.saturating_sub(at).max(0) as u64);
        if age >= retention {
            out.push((name, age));
        }
    }
    Ok(out)
}

/// The action as a Kubernetes Event on the release's records (best
/// effort: an action is not undone because its Event could not be written;
/// the failure is logged).
async fn event<T>(
    cluster: &Cluster,
    name: &str,
    namespace: &str,
    reason: &str,
    actor: &str,
    result: &Result<T, ReleaseError>,
) where
    T: std::fmt::Debug,
{
    let (reason, kind, message) = match result {
        Ok(_) => (
            reason.to_string(),
            "Normal",
            format!("release {name}: {} by {actor}", reason.to_lowercase()),
        ),
        Err(e) => (
            format!("{reason}Failed"),
            "Warning",
            format!(
                "release {name}: {} by {actor} failed: {e}",
                reason.to_lowercase()
            ),
        ),
    };
    let now = Time(k8s_openapi::jiff::Timestamp::now());
    let ev = Event {
        metadata: ObjectMeta {
            generate_name: Some(format!("{name}.")),
            namespace: Some(namespace.to_string()),
            ..ObjectMeta::default()
        },
        involved_object: ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("Secret".into()),
            name: Some(format!("sh.helm.release.v1.{name}")),
            namespace: Some(namespace.to_string()),
            ..ObjectReference::default()
        },
        reason: Some(reason),
        message: Some(message),
        type_: Some(kind.into()),
        source: Some(k8s_openapi::api::core::v1::EventSource {
            component: Some("antiopa".into()),
            ..Default::default()
        }),
        first_timestamp: Some(now.clone()),
        last_timestamp: Some(now),
        count: Some(1),
        ..Event::default()
    };
    let api: Api<Event> = Api::namespaced(cluster.client().clone(), namespace);
    if let Err(e) = cluster
        .request(api.create(&PostParams::default(), &ev))
        .await
    {
        tracing::warn!(release = %name, "recording the {} event: {}", ev.reason.as_deref().unwrap_or(""), crate::cluster::error_text(&e));
    }
}

/// One line of a release's action log.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Action {
    /// RFC 3339.
    pub when: String,
    /// `install`, `upgrade`, `archive`, `restore`, `cleanup`, `uninstall`, …
    pub action: String,
    pub by: String,
    /// `ok`, `failed: …`, or the record's status for a revision.
    pub outcome: String,
    /// The revision, when the action wrote one.
    pub revision: Option<i64>,
}

/// The action log of a release: its revisions (install, upgrade, archive,
/// restore, as their descriptions say) and the lifecycle Events (which
/// outlive a cleanup, and record failures), oldest first.
pub async fn action_log(
    cluster: &Cluster,
    name: &str,
    namespace: &str,
) -> Result<Vec<Action>, ReleaseError> {
    let hist = super::history(cluster, name, namespace).await?;
    let mut out = Vec::new();
    for r in &hist {
        let info = r.info.clone().unwrap_or_default();
        let d = info.description.as_str();
        let (action, by) = match d.split_once(" by ") {
            Some((what, by)) => (
                what.split(' ').next().unwrap_or(what).to_lowercase(),
                by.to_string(),
            ),
            None => (
                d.split(' ').next().unwrap_or("").to_lowercase(),
                String::new(),
            ),
        };
        let action = match action.as_str() {
            "archived" => "archive".to_string(),
            "restored" => "restore".to_string(),
            "uninstallation" => "uninstall".to_string(),
            other => other.to_string(),
        };
        let when = if r.status() == Status::Uninstalled && !info.deleted.is_empty() {
            info.deleted.clone()
        } else {
            info.last_deployed.clone()
        };
        out.push(Action {
            when,
            action,
            by,
            outcome: state(r).to_string(),
            revision: Some(r.version),
        });
    }
    let api: Api<Event> = Api::namespaced(cluster.client().clone(), namespace);
    let lp = kube::api::ListParams::default()
        .fields(&format!("involvedObject.name=sh.helm.release.v1.{name}"));
    let events = cluster.request(api.list(&lp)).await.map_err(|e| {
        ReleaseError::Failed(format!(
            "listing events: {}",
            crate::cluster::error_text(&e)
        ))
    })?;
    for e in events.items {
        if e.source.as_ref().and_then(|s| s.component.as_deref()) != Some("antiopa") {
            continue;
        }
        let reason = e.reason.clone().unwrap_or_default();
        let failed = reason.ends_with("Failed");
        let action = match reason.trim_end_matches("Failed") {
            "Archived" => "archive",
            "Restored" => "restore",
            "CleanedUp" => "cleanup",
            _ => continue,
        };
        // Successful archives and restores are in the history already,
        // unless a cleanup removed it.
        if !failed && action != "cleanup" && !hist.is_empty() {
            continue;
        }
        let message = e.message.clone().unwrap_or_default();
        let by = message
            .split(" by ")
            .nth(1)
            .map(|s| s.split(" failed: ").next().unwrap_or(s).to_string())
            .unwrap_or_default();
        out.push(Action {
            when: e
                .last_timestamp
                .as_ref()
                .map(|t| t.0.to_string())
                .unwrap_or_default(),
            action: action.into(),
            by,
            outcome: if failed {
                message
                    .split_once(" failed: ")
                    .map(|(_, why)| format!("failed: {why}"))
                    .unwrap_or_else(|| "failed".into())
            } else {
                "ok".into()
            },
            revision: None,
        });
    }
    out.sort_by(|a, b| a.when.cmp(&b.when));
    Ok(out)
}

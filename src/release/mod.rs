//! Helm-format releases: `helm upgrade --install`, `helm uninstall` and
//! `helm history` over helm's own Secret records, so helm and antiopa can
//! take turns on one release.
//!
//! An install/upgrade reads the history, recovers a record an interrupted
//! run left `pending-*` (crash-safe lock), skips everything when the
//! render's checksum (`moduleChecksum` label, as addon-operator keeps it)
//! and manifest equal the deployed revision's, dry-runs the apply (a
//! conflict stops here, before any write), writes the new revision
//! `pending-install`/`pending-upgrade`, applies and prunes, then marks it
//! `deployed` (the previous one `superseded`) or `failed`, and trims the
//! history to `HELM_HISTORY_MAX` (default 10).
//!
//! Like `helm upgrade --install`, a release with any history (its last
//! revision not `uninstalled`) is upgraded — `pending-upgrade`, "Upgrade
//! complete", pre-/post-upgrade hooks — even when no revision ever
//! deployed; the revision written is the last one + 1 ([`next_revision`],
//! which the caller renders `.Release.Revision` and `.Release.IsUpgrade`
//! with). The render's NOTES.txt is recorded in `info.notes`.
//!
//! Differences from helm, on purpose: objects are applied with server-side
//! apply; CRDs from `crds/` are applied on upgrades too (never pruned,
//! never recorded in the manifest, as helm); the prune set is the union of
//! the last deployed revision and every later (failed, interrupted)
//! revision, so objects created by a failed run are cleaned up too.
//! Chart hooks run as helm runs them (pre-/post-install, pre-/post-upgrade,
//! pre-/post-delete; `--no-hooks` skips them), written with server-side
//! apply, and are recorded with their last run in the release.

pub mod codec;
pub mod lifecycle;
pub mod store;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::time::Duration;

use serde_json::Value as Json;
use sha2::Digest;

pub use codec::{Hook, Info, Release, Status};
pub use store::{History, Store, StoreError, Stored, secret_name};

use crate::apply::{
    self, ApplyError, ApplyOptions, ApplyReport, Object, Owner, Progress, Rendered, ownership,
};
use crate::cluster::Cluster;

/// The label holding the render checksum.
pub const CHECKSUM_LABEL: &str = "moduleChecksum";

/// Release errors.
#[derive(Debug, thiserror::Error)]
pub enum ReleaseError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Apply(#[from] ApplyError),
    #[error(transparent)]
    Objects(#[from] apply::ObjectError),
    #[error(transparent)]
    Hook(#[from] apply::HookError),
    /// helm's `errPending`, with what antiopa knows of the holder.
    #[error(
        "another operation (install/upgrade/rollback) is in progress (release {name:?} revision {version} is {status} since {since}; {holder}it is taken over as abandoned after {timeout_s}s)"
    )]
    Pending {
        name: String,
        version: i64,
        status: Status,
        since: String,
        holder: String,
        timeout_s: u64,
    },
    /// helm's text for a missing release.
    #[error("uninstall: Release not loaded: {0}: release: not found")]
    NotFound(String),
    #[error("{0}")]
    Failed(String),
    /// An archive, restore or cleanup that does not apply to the release's state.
    #[error("{0}")]
    Lifecycle(String),
    /// The history changed between the render and the write.
    #[error(
        "release {name:?} changed while its chart was rendered: revision {expected} was rendered, but the next revision is now {found}; run again"
    )]
    Raced {
        name: String,
        expected: i64,
        found: i64,
    },
}

/// The revision an install/upgrade will write, and whether it is an
/// upgrade: what `.Release.Revision`, `.Release.IsUpgrade` and
/// `.Release.IsInstall` must be rendered with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Next {
    pub version: i64,
    pub is_upgrade: bool,
}

/// helm's choice for `upgrade --install` (cmd/helm/upgrade.go: install
/// when there is no history or the last revision is `uninstalled`; else
/// action.Upgrade, whose `prepareUpgrade` renders `lastRelease.Version + 1`
/// with `IsUpgrade: true`). An install writes revision 1, or the next free
/// one when uninstalled records were kept.
pub fn next_revision(history: &[Release]) -> Next {
    let last = history.iter().max_by_key(|r| r.version);
    Next {
        version: last.map_or(0, |r| r.version) + 1,
        is_upgrade: last.is_some_and(|r| r.status() != Status::Uninstalled),
    }
}

/// Records this process holds as `pending-*`/`uninstalling`, by
/// (namespace, name, version): a record naming this process as holder
/// that is not in here was left by an operation of this process that ended
/// without finishing it (its final write failed), so it is abandoned too.
static HELD: Mutex<BTreeSet<(String, String, i64)>> = Mutex::new(BTreeSet::new());

/// Holds a record in [`HELD`] until dropped.
struct Held((String, String, i64));

impl Held {
    fn new(namespace: &str, name: &str, version: i64) -> Held {
        let key = (namespace.to_string(), name.to_string(), version);
        if let Ok(mut h) = HELD.lock() {
            h.insert(key.clone());
        }
        Held(key)
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if let Ok(mut h) = HELD.lock() {
            h.remove(&self.0);
        }
    }
}

fn held_here(rel: &Release) -> bool {
    HELD.lock()
        .is_ok_and(|h| h.contains(&(rel.namespace.clone(), rel.name.clone(), rel.version)))
}

/// A chart install/upgrade request.
#[derive(Clone, Debug)]
pub struct InstallRequest {
    pub name: String,
    pub namespace: String,
    /// `chart.Chart` JSON to record: `{"metadata": …, "values": …}`.
    pub chart: Json,
    /// User-supplied values (`config`).
    pub config: serde_json::Map<String, Json>,
    pub rendered: Rendered,
    pub notes: String,
    /// Extra release labels (`--labels`).
    pub labels: BTreeMap<String, String>,
    pub apply: ApplyOptions,
    /// Revisions to keep (0: all). `HELM_HISTORY_MAX`, default 10.
    pub history_max: usize,
    /// Do not apply `crds/` files.
    pub skip_crds: bool,
    /// Do not run chart hooks.
    pub no_hooks: bool,
    /// How long to wait for each hook (helm's `--timeout`, 5 minutes).
    pub hook_timeout: Duration,
    /// Apply the release namespace too (helm's `--create-namespace`; it is
    /// not part of the release, so never pruned or uninstalled).
    pub create_namespace: bool,
    /// Age after which a `pending-*` record of a process antiopa cannot
    /// check is taken to be abandoned.
    pub lock_timeout: Duration,
    /// Adopt existing objects that carry no release metadata instead of
    /// refusing them (helm's `--take-ownership`; another release's objects
    /// are refused all the same).
    pub take_ownership: bool,
}

/// The result of an install/upgrade.
#[derive(Clone, Debug, PartialEq)]
pub enum InstallOutcome {
    /// The render equals the deployed revision's: nothing was written.
    Unchanged { version: i64 },
    /// A new revision was deployed.
    Deployed { version: i64, report: ApplyReport },
    /// `--dry-run`: what would happen.
    DryRun { report: ApplyReport },
}

/// `HELM_HISTORY_MAX` or 10 (helm's default for `helm upgrade`).
pub fn history_max_from_env() -> usize {
    std::env::var("HELM_HISTORY_MAX")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(10)
}

/// The render checksum: sha256 over namespace, CRDs, manifest and hooks.
pub fn checksum(namespace: &str, r: &Rendered) -> String {
    let mut h = sha2::Sha256::new();
    h.update(namespace.as_bytes());
    for part in [&r.crds, &r.manifests, &r.hooks] {
        h.update(b"\0part\0");
        for d in part {
            h.update(d.source.as_bytes());
            h.update(b"\0");
            h.update(d.content.as_bytes());
            h.update(b"\0");
        }
    }
    hex::encode(h.finalize())
}

/// The revision a render would leave as it is: the last revision is
/// `deployed` with this render's checksum, manifest and notes. The
/// checksum does not cover NOTES.txt: new notes make a new revision, as in
/// helm, so `helm get notes` never shows stale ones.
pub fn unchanged(history: &[Release], namespace: &str, r: &Rendered, notes: &str) -> Option<i64> {
    let last = history.iter().max_by_key(|r| r.version)?;
    (last.status() == Status::Deployed
        && last.labels.get(CHECKSUM_LABEL) == Some(&checksum(namespace, r))
        && last.manifest == r.manifest_text()
        && last.info.as_ref().map(|i| i.notes.as_str()) == Some(notes))
    .then_some(last.version)
}

/// Names of the releases in `namespace` whose records carry the label
/// `selector` (`key=value`), whatever their status.
pub async fn names_labelled(
    cluster: &Cluster,
    namespace: &str,
    selector: &str,
) -> Result<BTreeSet<String>, ReleaseError> {
    Ok(Store::new(cluster, namespace).names(selector).await?)
}

/// `host/pid` of this process.
fn holder() -> String {
    format!("{}/{}", hostname(), std::process::id())
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .or_else(|_| std::env::var("HOSTNAME"))
        .unwrap_or_default()
}

fn now() -> String {
    codec::go_time(chrono::Utc::now())
}

/// Whether the process that left a pending record is gone: it ran on this
/// host and its pid is dead, or it is this process and the operation that
/// wrote it has ended, or the record is older than the timeout.
fn is_abandoned(s: &Stored, timeout: Duration) -> bool {
    if let Some(h) = s.annotations.get(store::HOLDER_ANNOTATION)
        && let Some((host, pid)) = h.rsplit_once('/')
        && host == hostname()
        && let Ok(pid) = pid.parse::<i32>()
    {
        if pid == std::process::id() as i32 {
            return !held_here(&s.release);
        }
        let alive = !matches!(
            nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None),
            Err(nix::errno::Errno::ESRCH)
        );
        if !alive {
            return true;
        }
    }
    let stamp = s
        .secret_labels
        .get("modifiedAt")
        .or_else(|| s.secret_labels.get("createdAt"))
        .and_then(|v| v.parse::<i64>().ok())
        .unwrap_or(0);
    chrono::Utc::now().timestamp() - stamp >= timeout.as_secs() as i64
}

/// Objects of a recorded manifest (unreadable documents are skipped: a
/// record written by another tool must not block an upgrade).
/// The objects of a recorded manifest; a document that does not decode is
/// left out, with a warning line in `warnings`.
fn manifest_objects(manifest: &str, warnings: &mut Vec<String>) -> Vec<Object> {
    let r = apply::split_rendered(manifest);
    let mut out = Vec::new();
    for d in r.manifests.iter().chain(r.crds.iter()) {
        match apply::decode(std::slice::from_ref(d)) {
            Ok(objs) => out.extend(objs),
            Err(e) => warnings.push(format!(
                "warning: previous release manifest: {e}; not pruned"
            )),
        }
    }
    out
}

/// [`Store::history`], its warnings sent to `log`.
async fn read_logged(
    store: &Store,
    name: &str,
    log: &mut (dyn FnMut(&str) + Send),
) -> Result<Vec<Stored>, StoreError> {
    let h = store.history(name).await?;
    for w in &h.skipped {
        log(w);
    }
    Ok(h.records)
}

/// The release hooks as helm records them (`helm.sh/hook`, weight, delete
/// policies), not run yet.
/// helm's hook events (`release.HookEvent`).
const HOOK_EVENTS: [&str; 9] = [
    "pre-install",
    "post-install",
    "pre-delete",
    "post-delete",
    "pre-upgrade",
    "post-upgrade",
    "pre-rollback",
    "post-rollback",
    "test",
];

fn hook_records(r: &Rendered) -> Vec<Hook> {
    let mut out = Vec::new();
    for d in &r.hooks {
        let Ok(objs) = apply::decode(std::slice::from_ref(d)) else {
            continue;
        };
        for o in objs {
            // helm's `operateAnnotationValues`: split, trimmed, lowercased,
            // empty parts kept (`a,,b` records an empty policy too).
            let list = |k: &str| -> Vec<String> {
                o.annotation(k)
                    .map(|v| v.split(',').map(|s| s.trim().to_lowercase()).collect())
                    .unwrap_or_default()
            };
            // Unknown events are dropped one by one (`events[hookType]`);
            // `test-success` is the old name of `test`.
            let events: Vec<String> = list("helm.sh/hook")
                .into_iter()
                .map(|e| {
                    if e == "test-success" {
                        "test".into()
                    } else {
                        e
                    }
                })
                .filter(|e| HOOK_EVENTS.contains(&e.as_str()))
                .collect();
            out.push(Hook {
                name: o.name.clone(),
                kind: o.kind.clone(),
                path: d.source.clone(),
                manifest: d.content.clone(),
                events,
                last_run: codec::HookExecution::default(),
                // `strconv.Atoi`, untrimmed: " 5" is not a number, so 0.
                weight: o
                    .annotation("helm.sh/hook-weight")
                    .and_then(|w| w.parse().ok())
                    .unwrap_or(0),
                delete_policies: list("helm.sh/hook-delete-policy"),
                output_log_policies: list("helm.sh/hook-output-log-policy"),
            });
        }
    }
    out
}

/// Run the hooks of `event` recorded in `rel`, updating their last run.
async fn run_event_hooks(
    cluster: &Cluster,
    rel: &mut Release,
    event: &str,
    opts: &ApplyOptions,
    timeout: Duration,
) -> Result<(), apply::HookError> {
    let mut runs = Vec::new();
    for h in rel
        .hooks
        .iter()
        .filter(|h| h.events.iter().any(|e| e == event))
    {
        let doc = apply::Doc {
            source: h.path.clone(),
            content: h.manifest.clone(),
        };
        let objs =
            apply::decode(std::slice::from_ref(&doc)).map_err(|e| apply::HookError::Failed {
                event: event.into(),
                kind: h.kind.clone(),
                name: h.name.clone(),
                reason: e.to_string(),
            })?;
        for o in objs {
            runs.push(apply::HookRun {
                object: o,
                weight: h.weight,
                delete_policies: h.delete_policies.clone(),
            });
        }
    }
    if runs.is_empty() {
        return Ok(());
    }
    let mut results = Vec::new();
    let r = apply::run_hooks(cluster, event, runs, opts, timeout, &mut results).await;
    for res in results {
        if let Some(h) = rel
            .hooks
            .iter_mut()
            .find(|h| h.name == res.name && h.kind == res.kind)
        {
            h.last_run = codec::HookExecution {
                started_at: codec::go_time(res.started_at),
                completed_at: codec::go_time(res.completed_at),
                phase: if res.succeeded { "Succeeded" } else { "Failed" }.into(),
            };
        }
    }
    r
}

/// Mark an abandoned pending record failed, with a log line.
async fn recover(
    store: &Store,
    s: &Stored,
    log: &mut (dyn FnMut(&str) + Send),
) -> Result<(), ReleaseError> {
    let mut rel = s.release.clone();
    let status = rel.status();
    let held_by = s.annotations.get(store::HOLDER_ANNOTATION);
    let who = match held_by {
        Some(h) if *h == holder() => format!("{h} (this process), whose operation ended"),
        Some(h) => format!("{h}, which is gone"),
        None => "an unknown process, which is gone".into(),
    };
    log(&format!(
        "recovering release {:?}: revision {} was left {status} by {who}; marking it failed",
        rel.name, rel.version
    ));
    let info = rel.info.get_or_insert_with(Info::default);
    info.status = Status::Failed;
    info.description = format!("Interrupted {status} (recovered by antiopa)");
    store.update(&rel, None).await?;
    Ok(())
}

/// Check the newest record for a pending operation; recover it when it
/// was abandoned, else refuse.
async fn take_lock(
    store: &Store,
    hist: &mut [Stored],
    timeout: Duration,
    log: &mut (dyn FnMut(&str) + Send),
) -> Result<(), ReleaseError> {
    let Some(last) = hist.last_mut() else {
        return Ok(());
    };
    let status = last.release.status();
    if !status.is_pending() && status != Status::Uninstalling {
        return Ok(());
    }
    if !is_abandoned(last, timeout) {
        let since = last
            .secret_labels
            .get("modifiedAt")
            .or_else(|| last.secret_labels.get("createdAt"))
            .cloned()
            .unwrap_or_default();
        let holder = last
            .annotations
            .get(store::HOLDER_ANNOTATION)
            .map(|h| format!("held by {h}; "))
            .unwrap_or_default();
        return Err(ReleaseError::Pending {
            name: last.release.name.clone(),
            version: last.release.version,
            status,
            since: format!("unix time {since}"),
            holder,
            timeout_s: timeout.as_secs(),
        });
    }
    recover(store, last, log).await?;
    if let Some(i) = last.release.info.as_mut() {
        i.status = Status::Failed;
    }
    Ok(())
}

/// `helm upgrade --install`.
pub async fn upgrade_install(
    cluster: &Cluster,
    req: &InstallRequest,
    progress: &mut (dyn FnMut(Progress<'_>) + Send),
    log: &mut (dyn FnMut(&str) + Send),
) -> Result<InstallOutcome, ReleaseError> {
    upgrade_install_rendered_for(cluster, req, None, progress, log).await
}

/// [`upgrade_install`] of a render made for `rendered_for` (the
/// [`next_revision`] read before rendering): when the history moved on
/// meanwhile, the render's `.Release.Revision` would be wrong, and the run
/// stops with [`ReleaseError::Raced`] before writing anything.
pub async fn upgrade_install_rendered_for(
    cluster: &Cluster,
    req: &InstallRequest,
    rendered_for: Option<Next>,
    progress: &mut (dyn FnMut(Progress<'_>) + Send),
    log: &mut (dyn FnMut(&str) + Send),
) -> Result<InstallOutcome, ReleaseError> {
    let store = Store::new(cluster, &req.namespace);
    let mut hist = read_logged(&store, &req.name, log).await?;
    if !req.apply.dry_run {
        take_lock(&store, &mut hist, req.lock_timeout, log).await?;
    }
    let records: Vec<Release> = hist.iter().map(|s| s.release.clone()).collect();
    let next = next_revision(&records);
    if let Some(want) = rendered_for
        && want != next
    {
        return Err(ReleaseError::Raced {
            name: req.name.clone(),
            expected: want.version,
            found: next.version,
        });
    }
    let manifest = req.rendered.manifest_text();
    let sum = checksum(&req.namespace, &req.rendered);
    let last_deployed = hist
        .iter()
        .rposition(|s| s.release.status() == Status::Deployed);
    if let Some(version) = unchanged(&records, &req.namespace, &req.rendered, &req.notes) {
        return Ok(InstallOutcome::Unchanged { version });
    }

    let mut desired = Vec::new();
    if req.create_namespace {
        desired.push(namespace_object(&req.namespace));
    }
    if !req.skip_crds {
        desired.extend(apply::decode(&req.rendered.crds)?);
    }
    let Next {
        version,
        is_upgrade,
    } = next;
    // The chart's objects carry Helm's ownership metadata (CRDs from
    // `crds/` and the created namespace stay outside the release, as in
    // helm), and those that exist already must be this release's.
    let owner = Owner {
        take_ownership: req.take_ownership,
        upgrade: is_upgrade,
        ..Owner::new(&req.name, &req.namespace)
    };
    desired.extend(owned_objects(&req.rendered, &owner)?);
    let mut warnings = Vec::new();
    let previous: Vec<Object> = hist[last_deployed.unwrap_or(0)..]
        .iter()
        .flat_map(|s| manifest_objects(&s.release.manifest, &mut warnings))
        .collect();
    for w in &warnings {
        log(w);
    }
    let mut aopts = req.apply.clone();
    aopts.owner = Some(owner);
    let aopts = &aopts;

    // helm keeps `currentRelease.Info.FirstDeployed`: the last deployed
    // revision's, else the last one's (an upgrade over failed revisions).
    let first_deployed = last_deployed
        .or(hist.len().checked_sub(1))
        .and_then(|i| hist[i].release.info.as_ref())
        .map(|i| i.first_deployed.clone())
        .filter(|t| t != codec::ZERO_TIME && is_upgrade)
        .unwrap_or_else(now);
    let mut labels = req.labels.clone();
    labels.insert(CHECKSUM_LABEL.into(), sum);
    let mut rel = Release {
        name: req.name.clone(),
        info: Some(Info {
            first_deployed,
            last_deployed: now(),
            status: if is_upgrade {
                Status::PendingUpgrade
            } else {
                Status::PendingInstall
            },
            description: if is_upgrade {
                "Preparing upgrade".into()
            } else {
                "Initial install underway".into()
            },
            notes: req.notes.clone(),
            ..Info::default()
        }),
        chart: Some(req.chart.clone()),
        config: Some(req.config.clone()),
        manifest,
        hooks: hook_records(&req.rendered),
        version,
        namespace: req.namespace.clone(),
        labels,
    };
    store.check_size(&rel)?;

    // The dry-run pass: conflicts and invalid objects stop before any write.
    let plan = apply::plan(cluster, desired, previous, aopts).await?;
    if req.apply.dry_run {
        let report = apply::execute(cluster, plan, aopts, progress).await?;
        return Ok(InstallOutcome::DryRun { report });
    }

    // The record lives in the namespace: it must exist first (helm's
    // --create-namespace creates it before anything else, too).
    if req.create_namespace {
        let (o, r) =
            apply::run::resolve_object(cluster, namespace_object(&req.namespace), &req.namespace)
                .await?;
        apply::run::apply_object(cluster, &r, &o, aopts, false).await?;
    }
    let me = holder();
    let _held = Held::new(&req.namespace, &req.name, version);
    store.create(&rel, Some(&me)).await.map_err(|e| match e {
        StoreError::Api { ref source, .. } if crate::cluster::api_status(source) == Some(409) => {
            ReleaseError::Pending {
                name: req.name.clone(),
                version,
                status: rel.status(),
                since: "now".into(),
                holder: String::new(),
                timeout_s: req.lock_timeout.as_secs(),
            }
        }
        e => e.into(),
    })?;

    let (pre, post) = if is_upgrade {
        ("pre-upgrade", "post-upgrade")
    } else {
        ("pre-install", "post-install")
    };
    let result: Result<ApplyReport, ReleaseError> = async {
        if !req.no_hooks {
            run_event_hooks(cluster, &mut rel, pre, aopts, req.hook_timeout).await?;
        }
        let report = apply::execute(cluster, plan, aopts, progress).await?;
        if !req.no_hooks {
            run_event_hooks(cluster, &mut rel, post, aopts, req.hook_timeout).await?;
        }
        Ok(report)
    }
    .await;
    if let Some(info) = rel.info.as_mut() {
        info.last_deployed = now();
    }
    let result = match result {
        Ok(report) => {
            // helm's order: the previous revision superseded, then this one
            // deployed. Should either write fail (a timeout), this revision
            // is marked failed below, so history always shows what
            // happened; the next apply writes a new revision.
            let finish = async {
                if let Some(i) = last_deployed {
                    let mut old = hist[i].release.clone();
                    if let Some(oi) = old.info.as_mut() {
                        oi.status = Status::Superseded;
                    }
                    store.update(&old, None).await?;
                }
                let mut done = rel.clone();
                let info = done.info.get_or_insert_with(Info::default);
                info.status = Status::Deployed;
                info.description = if is_upgrade {
                    "Upgrade complete".into()
                } else {
                    "Install complete".into()
                };
                store.update(&done, None).await?;
                Ok::<_, ReleaseError>(())
            };
            finish.await.map(|()| report)
        }
        Err(e) => Err(e),
    };
    match result {
        Ok(report) => {
            trim_history(&store, &req.name, req.history_max, log).await?;
            Ok(InstallOutcome::Deployed { version, report })
        }
        Err(e) => {
            let info = rel.info.get_or_insert_with(Info::default);
            info.status = Status::Failed;
            info.description = if is_upgrade {
                format!("Upgrade {:?} failed: {e}", req.name)
            } else {
                format!("Release {:?} failed: {e}", req.name)
            };
            if let Err(se) = store.update(&rel, None).await {
                log(&format!(
                    "warning: could not mark revision {version} failed: {se}; the next apply recovers it"
                ));
            }
            Err(e)
        }
    }
}

/// The chart's objects (not `crds/`) stamped with `owner`'s Helm
/// ownership metadata, as the release applies them.
pub fn owned_objects(r: &Rendered, owner: &Owner) -> Result<Vec<Object>, apply::ObjectError> {
    let mut objects = apply::decode(&r.manifests)?;
    for o in &mut objects {
        ownership::stamp(o, owner);
    }
    Ok(objects)
}

/// The release namespace as an object to apply.
fn namespace_object(ns: &str) -> Object {
    Object {
        api_version: "v1".into(),
        kind: "Namespace".into(),
        name: ns.to_string(),
        namespace: None,
        // helm's createNamespace labels it `name: <ns>`; the label also gives
        // the apply a field to own, so re-applies compare equal.
        body: serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "labels": {"name": ns}}}),
        source: "--create-namespace".into(),
    }
}

/// Delete the oldest revisions beyond `max` (helm's
/// `storage.removeLeastRecent`: never the deployed one).
async fn trim_history(
    store: &Store,
    name: &str,
    max: usize,
    log: &mut (dyn FnMut(&str) + Send),
) -> Result<(), ReleaseError> {
    if max == 0 {
        return Ok(());
    }
    let hist = read_logged(store, name, log).await?;
    if hist.len() <= max {
        return Ok(());
    }
    let mut excess = hist.len() - max;
    for s in &hist {
        if excess == 0 {
            break;
        }
        if s.release.status() == Status::Deployed {
            continue;
        }
        store.delete(name, s.release.version).await?;
        excess -= 1;
    }
    Ok(())
}

/// How to uninstall.
#[derive(Clone, Debug)]
pub struct UninstallOptions {
    /// Keep the records, the last marked `uninstalled`.
    pub keep_history: bool,
    pub no_hooks: bool,
    pub hook_timeout: Duration,
    pub lock_timeout: Duration,
}

impl Default for UninstallOptions {
    fn default() -> Self {
        UninstallOptions {
            keep_history: false,
            no_hooks: false,
            hook_timeout: Duration::from_secs(300),
            lock_timeout: Duration::from_secs(600),
        }
    }
}

/// The result of an uninstall.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct UninstallReport {
    pub deleted: Vec<apply::Key>,
    pub kept: Vec<apply::Key>,
    /// Objects of the release that another release or tool has claimed
    /// since, with why: left alone.
    pub foreign: Vec<(apply::Key, String)>,
}

/// `helm uninstall`: mark the release uninstalling, delete its objects
/// (reverse install order, `keep` respected, CRDs from `crds/` never), then
/// delete its records, or with `keep_history` mark the last `uninstalled`.
pub async fn uninstall(
    cluster: &Cluster,
    name: &str,
    namespace: &str,
    opts: &UninstallOptions,
    log: &mut (dyn FnMut(&str) + Send),
) -> Result<UninstallReport, ReleaseError> {
    let keep_history = opts.keep_history;
    let lock_timeout = opts.lock_timeout;
    let store = Store::new(cluster, namespace);
    let mut hist = read_logged(&store, name, log).await?;
    if hist.is_empty()
        || hist
            .last()
            .is_some_and(|s| s.release.status() == Status::Uninstalled)
    {
        return Err(ReleaseError::NotFound(name.to_string()));
    }
    if hist
        .last()
        .is_some_and(|s| s.release.status() != Status::Uninstalling)
    {
        take_lock(&store, &mut hist, lock_timeout, log).await?;
    }
    let last_deployed = hist
        .iter()
        .rposition(|s| s.release.status() == Status::Deployed)
        .unwrap_or(0);
    let mut warnings = Vec::new();
    let objects: Vec<Object> = hist[last_deployed..]
        .iter()
        .flat_map(|s| manifest_objects(&s.release.manifest, &mut warnings))
        .collect();
    for w in &warnings {
        log(w);
    }
    let Some(last) = hist.last() else {
        return Err(ReleaseError::NotFound(name.to_string()));
    };
    let mut rel = last.release.clone();
    let info = rel.info.get_or_insert_with(Info::default);
    info.status = Status::Uninstalling;
    info.deleted = now();
    let _held = Held::new(namespace, name, rel.version);
    store.update(&rel, Some(&holder())).await?;
    let aopts = ApplyOptions::new(namespace);
    if !opts.no_hooks {
        run_event_hooks(cluster, &mut rel, "pre-delete", &aopts, opts.hook_timeout).await?;
    }
    let owner = Owner::new(name, namespace);
    let done = apply::delete_all(cluster, objects, namespace, Some(&owner)).await?;
    if !opts.no_hooks {
        run_event_hooks(cluster, &mut rel, "post-delete", &aopts, opts.hook_timeout).await?;
    }
    if keep_history {
        let info = rel.info.get_or_insert_with(Info::default);
        info.status = Status::Uninstalled;
        info.description = "Uninstallation complete".into();
        store.update(&rel, None).await?;
    } else {
        for s in &hist {
            store.delete(name, s.release.version).await?;
        }
    }
    Ok(UninstallReport {
        deleted: done.deleted,
        kept: done.kept,
        foreign: done.foreign,
    })
}

/// `helm history`: every revision, oldest first. Records that cannot be
/// read are skipped, each with a `tracing` warning; [`read_history`]
/// hands those warnings back instead.
pub async fn history(
    cluster: &Cluster,
    name: &str,
    namespace: &str,
) -> Result<Vec<Release>, ReleaseError> {
    let h = read_history(cluster, name, namespace).await?;
    for w in &h.warnings {
        tracing::warn!(target: "antiopa::release", "{w}");
    }
    Ok(h.releases)
}

/// What [`read_history`] read.
#[derive(Clone, Debug, Default)]
pub struct ReleaseHistory {
    /// Every readable revision, oldest first.
    pub releases: Vec<Release>,
    /// A warning line per record skipped because it cannot be read.
    pub warnings: Vec<String>,
}

/// [`history`] with the warnings as data.
pub async fn read_history(
    cluster: &Cluster,
    name: &str,
    namespace: &str,
) -> Result<ReleaseHistory, ReleaseError> {
    let h = Store::new(cluster, namespace).history(name).await?;
    Ok(ReleaseHistory {
        releases: h.records.into_iter().map(|s| s.release).collect(),
        warnings: h.skipped,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hook_records_read_annotations_as_helm_does() {
        let r = apply::split_rendered(
            "---\n# Source: c/templates/h.yaml\napiVersion: batch/v1\nkind: Job\nmetadata:\n  name: h\n  annotations:\n    helm.sh/hook: Pre-Install, bogus,post-install\n    helm.sh/hook-weight: \" 5\"\n    helm.sh/hook-delete-policy: hook-succeeded,,Before-Hook-Creation\n",
        );
        let h = &hook_records(&r)[0];
        assert_eq!(h.events, ["pre-install", "post-install"]);
        assert_eq!(h.weight, 0);
        assert_eq!(
            h.delete_policies,
            ["hook-succeeded", "", "before-hook-creation"]
        );
    }

    #[test]
    fn checksum_changes_with_any_part() {
        let r = apply::split_rendered("---\n# Source: c/templates/a.yaml\nkind: A\n");
        let a = checksum("ns", &r);
        assert_eq!(a, checksum("ns", &r));
        assert_ne!(a, checksum("other", &r));
        let r2 = apply::split_rendered("---\n# Source: c/templates/a.yaml\nkind: B\n");
        assert_ne!(a, checksum("ns", &r2));
    }

    #[test]
    fn hooks_are_recorded_with_weight_and_policies() {
        let r = apply::split_rendered(
            "---\n# Source: c/templates/j.yaml\napiVersion: batch/v1\nkind: Job\nmetadata:\n  name: j\n  annotations:\n    helm.sh/hook: pre-install, Pre-Upgrade\n    helm.sh/hook-weight: \"-5\"\n    helm.sh/hook-delete-policy: before-hook-creation,hook-succeeded\n",
        );
        let h = hook_records(&r);
        assert_eq!(h.len(), 1);
        assert_eq!(h[0].events, ["pre-install", "pre-upgrade"]);
        assert_eq!(h[0].weight, -5);
        assert_eq!(
            h[0].delete_policies,
            ["before-hook-creation", "hook-succeeded"]
        );
        assert_eq!(h[0].path, "c/templates/j.yaml");
    }

    fn rel(version: i64, status: Status) -> Release {
        Release {
            version,
            info: Some(Info {
                status,
                ..Info::default()
            }),
            ..Release::default()
        }
    }

    #[test]
    fn next_revision_follows_helm_upgrade_install() {
        let next = |h: &[Release]| {
            let n = next_revision(h);
            (n.version, n.is_upgrade)
        };
        assert_eq!(next(&[]), (1, false));
        assert_eq!(next(&[rel(1, Status::Deployed)]), (2, true));
        // Only failed revisions: still an upgrade (prepareUpgrade takes the
        // last failed one as current).
        assert_eq!(
            next(&[rel(1, Status::Failed), rel(2, Status::Failed)]),
            (3, true)
        );
        // Uninstalled with --keep-history: an install, numbered on.
        assert_eq!(
            next(&[rel(1, Status::Superseded), rel(2, Status::Uninstalled)]),
            (3, false)
        );
    }

    #[test]
    fn dead_local_holder_is_abandoned_at_once() {
        let mut s = Stored {
            release: Release::default(),
            secret_labels: BTreeMap::from([(
                "createdAt".to_string(),
                chrono::Utc::now().timestamp().to_string(),
            )]),
            annotations: BTreeMap::new(),
        };
        // No holder and fresh: held.
        assert!(!is_abandoned(&s, Duration::from_secs(600)));
        // This process, while the operation runs: held; after it: gone.
        s.annotations
            .insert(store::HOLDER_ANNOTATION.into(), holder());
        let held = Held::new("", "", 0);
        assert!(!is_abandoned(&s, Duration::from_secs(600)));
        drop(held);
        assert!(is_abandoned(&s, Duration::from_secs(600)));
        // A pid that cannot exist on Linux (above pid_max's ceiling): gone.
        s.annotations.insert(
            store::HOLDER_ANNOTATION.into(),
            format!("{}/{}", hostname(), 1 << 23),
        );
        assert!(is_abandoned(&s, Duration::from_secs(600)));
        // Old enough: gone whatever the holder.
        s.annotations.clear();
        s.secret_labels.insert("createdAt".into(), "1".into());
        assert!(is_abandoned(&s, Duration::from_secs(600)));
    }
}

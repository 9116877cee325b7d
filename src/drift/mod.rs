//! Drift of released objects: what of a release's last manifest was deleted
//! or changed on the cluster, and putting it back.
//!
//! - **What is tracked** ([`tracked_objects`]): every object of a release's
//!   recorded manifest, stamped with the release's ownership metadata as
//!   the release applied it. Helm hook objects live outside the manifest
//!   (in the release's `hooks`), so one a delete policy removes never counts.
//! - **Checking one object** ([`check_object`]): read it, then dry-run apply
//!   (`dryRun=All`) the release's version of it as field manager `antiopa`,
//!   and compare the result with the live object value by value. Only what
//!   our apply would change counts: server defaults and server-set fields
//!   are in both, fields only other managers set are never in our apply. A
//!   409 names the fields another manager took and who took it.
//! - **Settings** ([`Settings`]): per module, as Flux names them, `driftMode:
//!   enabled | warn | disabled` (default `enabled`) and `driftIgnore` rules
//!   (JSON pointers with an optional kind/name/namespace/apiVersion target).
//! - **Live** ([`engine`]): metadata-only watches ([`crate::watch`]) of the
//!   tracked objects; a deletion is restored alone (one apply of that
//!   object, no render, no hook, no release revision), a changed
//!   managedFields entry of ours triggers a check, then a forced re-apply
//!   (enabled) or a report (warn); per-object backoff and a circuit breaker.
//! - **Visible** ([`Metrics`], [`ModuleDrift`]): counters and a restore
//!   latency histogram as plain data, per-module state, Kubernetes Events
//!   (`DriftRestored`, `DriftDetected`, `DriftRestoreStopped`) on the object.
//!
//! Every write drift makes (restores and Events) goes through a [`Writes`],
//! whose gate the caller owns (the operator: leader election).

pub mod engine;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::{Value as Json, json};

use crate::apply::{self, Doc, FIELD_MANAGER, Key, Object, Owner, Resolved};
use crate::cluster::{Cluster, error_text, is_not_found};

pub use engine::{Handle, start};

impl From<crate::release::ReleaseError> for DriftError {
    fn from(e: crate::release::ReleaseError) -> Self {
        DriftError::Release(Box::new(e))
    }
}

/// Why drift could not do something.
#[derive(Debug, thiserror::Error)]
pub enum DriftError {
    /// A module's drift settings are malformed.
    #[error("values key {key}: {why}")]
    Settings { key: String, why: String },
    #[error(transparent)]
    Objects(#[from] apply::ObjectError),
    #[error(transparent)]
    Apply(#[from] Box<apply::ApplyError>),
    #[error("{step} {key}: {}", error_text(.source))]
    Api {
        step: &'static str,
        key: String,
        #[source]
        source: kube::Error,
    },
    #[error("{0}")]
    Release(Box<crate::release::ReleaseError>),
}

/// What drift does for a module (Flux's `driftDetection.mode`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Restore deleted objects and re-apply changed fields (forced).
    #[default]
    Enabled,
    /// Only report (log, metric, Event, status).
    Warn,
    /// Not watched.
    Disabled,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Enabled => "enabled",
            Mode::Warn => "warn",
            Mode::Disabled => "disabled",
        }
    }
}

/// Objects an ignore rule applies to (every field given must match; none:
/// every object).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct IgnoreTarget {
    pub api_version: Option<String>,
    pub kind: Option<String>,
    pub name: Option<String>,
    pub namespace: Option<String>,
}

/// Fields (JSON pointers, RFC 6901) never counted as drift on the objects
/// of `target`.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct IgnoreRule {
    pub paths: Vec<String>,
    pub target: IgnoreTarget,
}

/// A module's drift settings.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Settings {
    pub mode: Mode,
    pub ignore: Vec<IgnoreRule>,
}

impl Settings {
    /// From a module's values section (`<camelName>` of the values):
    /// `driftMode` and `driftIgnore`. `key` names the section in errors.
    pub fn from_values(section: Option<&Json>, key: &str) -> Result<Settings, DriftError> {
        let mut s = Settings::default();
        let Some(section) = section else {
            return Ok(s);
        };
        let err = |field: &str, why: String| DriftError::Settings {
            key: format!("{key}.{field}"),
            why,
        };
        match section.get("driftMode") {
            None | Some(Json::Null) => {}
            Some(Json::String(m)) => {
                s.mode = match m.as_str() {
                    "enabled" => Mode::Enabled,
                    "warn" => Mode::Warn,
                    "disabled" => Mode::Disabled,
                    other => {
                        return Err(err(
                            "driftMode",
                            format!("must be enabled, warn or disabled, got {other:?}"),
                        ));
                    }
                }
            }
            Some(v) => {
                return Err(err(
                    "driftMode",
                    format!("must be a string (enabled, warn or disabled), got {v}"),
                ));
            }
        }
        let rules = match section.get("driftIgnore") {
            None | Some(Json::Null) => return Ok(s),
            Some(Json::Array(a)) => a,
            Some(v) => return Err(err("driftIgnore", format!("must be a list, got {v}"))),
        };
        for (i, r) in rules.iter().enumerate() {
            let field = format!("driftIgnore[{i}]");
            let paths = r
                .get("paths")
                .and_then(|p| p.as_array())
                .ok_or_else(|| err(&field, "needs `paths`, a list of JSON pointers".into()))?;
            let mut rule = IgnoreRule::default();
            for p in paths {
                match p.as_str() {
                    Some(p) if p.is_empty() || p.starts_with('/') => rule.paths.push(p.into()),
                    _ => {
                        return Err(err(
                            &format!("{field}.paths"),
                            format!("{p} is not a JSON pointer (\"/spec/replicas\")"),
                        ));
                    }
                }
            }
            if let Some(t) = r.get("target") {
                let get = |k: &str| -> Result<Option<String>, DriftError> {
                    match t.get(k) {
                        None | Some(Json::Null) => Ok(None),
                        Some(Json::String(v)) => Ok(Some(v.clone())),
                        Some(v) => Err(err(
                            &format!("{field}.target.{k}"),
                            format!("must be a string, got {v}"),
                        )),
                    }
                };
                rule.target = IgnoreTarget {
                    api_version: get("apiVersion")?,
                    kind: get("kind")?,
                    name: get("name")?,
                    namespace: get("namespace")?,
                };
            }
            s.ignore.push(rule);
        }
        Ok(s)
    }

    /// The ignored pointers for one object.
    pub fn ignored_paths(&self, api_version: &str, key: &Key) -> Vec<String> {
        let eq = |want: &Option<String>, got: &str| want.as_deref().is_none_or(|w| w == got);
        self.ignore
            .iter()
            .filter(|r| {
                eq(&r.target.api_version, api_version)
                    && eq(&r.target.kind, &key.kind)
                    && eq(&r.target.name, &key.name)
                    && eq(&r.target.namespace, &key.namespace)
            })
            .flat_map(|r| r.paths.iter().cloned())
            .collect()
    }
}

/// One object of a release, as drift keeps it: its identity and resource,
/// and its manifest document (decoded again for each restore, so little is
/// held per object).
#[derive(Clone, Debug)]
pub struct Tracked {
    pub key: Key,
    pub api_version: Arc<str>,
    /// Shared by the objects of a kind.
    pub resolved: Arc<Resolved>,
    /// The release it belongs to (release name, release namespace).
    pub owner: Arc<(String, String)>,
    pub doc: Arc<Doc>,
}

impl Tracked {
    /// The object as the release applies it: decoded, stamped with the
    /// release's ownership metadata, namespace set (or dropped).
    pub fn object(&self) -> Result<Object, DriftError> {
        let mut objs = apply::decode(std::slice::from_ref(&self.doc))?;
        let mut o = objs
            .drain(..)
            .find(|o| o.kind == self.key.kind && o.name == self.key.name)
            .ok_or_else(|| apply::ObjectError::Missing {
                source_path: self.doc.source.clone(),
                what: "the object drift tracks",
            })?;
        apply::ownership::stamp(&mut o, &Owner::new(&self.owner.0, &self.owner.1));
        let meta = o.body.get_mut("metadata").and_then(|m| m.as_object_mut());
        if let Some(m) = meta {
            if self.resolved.namespaced {
                m.insert("namespace".into(), Json::String(self.key.namespace.clone()));
            } else {
                m.remove("namespace");
            }
        }
        o.namespace = self.resolved.namespaced.then(|| self.key.namespace.clone());
        Ok(o)
    }

    fn api(&self, cluster: &Cluster) -> Api<DynamicObject> {
        let client = cluster.client().clone();
        if self.resolved.namespaced {
            Api::namespaced_with(client, &self.key.namespace, &self.resolved.resource)
        } else {
            Api::all_with(client, &self.resolved.resource)
        }
    }
}

/// The objects of a release manifest (`manifest` as recorded, one object
/// per document as helm splits it), resolved against the server. Kinds the
/// server does not serve are left out, each with a warning line.
pub async fn tracked_objects(
    cluster: &Cluster,
    release: &str,
    namespace: &str,
    manifest: &str,
    warnings: &mut Vec<String>,
) -> Result<Vec<Tracked>, DriftError> {
    let rendered = apply::split_rendered(manifest);
    let owner = Arc::new((release.to_string(), namespace.to_string()));
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    let mut kinds: BTreeMap<(String, String), (Arc<str>, Arc<Resolved>)> = BTreeMap::new();
    for d in rendered.manifests {
        let doc = Arc::new(d);
        for o in apply::decode(std::slice::from_ref(&doc))? {
            let kind = (o.api_version.clone(), o.kind.clone());
            if let Some((api_version, resolved)) = kinds.get(&kind) {
                let mut key = o.key();
                key.group = resolved.resource.group.clone();
                key.namespace = if resolved.namespaced {
                    o.namespace.clone().unwrap_or_else(|| namespace.to_string())
                } else {
                    String::new()
                };
                if seen.insert(key.clone()) {
                    out.push(Tracked {
                        key,
                        api_version: api_version.clone(),
                        resolved: resolved.clone(),
                        owner: owner.clone(),
                        doc: doc.clone(),
                    });
                }
                continue;
            }
            let resolved = match cluster.resolve(&o.api_version, &o.kind).await {
                Ok(Some(r)) => Arc::new(r),
                Ok(None) => {
                    warnings.push(format!(
                        "{} {} {}: the kind is not served; not watched for drift",
                        o.api_version, o.kind, o.name
                    ));
                    continue;
                }
                Err(source) => {
                    return Err(DriftError::Api {
                        step: "discover",
                        key: format!("{} {}", o.api_version, o.kind),
                        source,
                    });
                }
            };
            let mut key = o.key();
            key.group = resolved.resource.group.clone();
            key.namespace = if resolved.namespaced {
                o.namespace.clone().unwrap_or_else(|| namespace.to_string())
            } else {
                String::new()
            };
            let api_version: Arc<str> = Arc::from(o.api_version.as_str());
            kinds.insert(kind, (api_version.clone(), resolved.clone()));
            if !seen.insert(key.clone()) {
                continue;
            }
            out.push(Tracked {
                key,
                api_version,
                resolved,
                owner: owner.clone(),
                doc: doc.clone(),
            });
        }
    }
    Ok(out)
}

/// What a check found.
#[derive(Clone, Debug, PartialEq)]
pub enum Finding {
    /// As the release left it.
    InSync,
    /// The object is gone.
    Missing,
    /// Fields of ours differ.
    Changed(Change),
}

/// A changed object: the differing fields and who else manages them.
#[derive(Clone, Debug, PartialEq)]
pub struct Change {
    /// JSON pointers of the fields our apply would change (ignored ones
    /// left out).
    pub paths: Vec<String>,
    /// `(manager, field)` for each field another manager took from us.
    pub conflicts: Vec<(String, String)>,
    pub live: Json,
    pub would_be: Json,
}

impl Change {
    /// `/data/a, /data/b (taken by "kubectl-patch")`.
    pub fn describe(&self) -> String {
        let mut s = self.paths.join(", ");
        let managers: BTreeSet<&str> = self.conflicts.iter().map(|(m, _)| m.as_str()).collect();
        if !managers.is_empty() {
            let list: Vec<String> = managers.iter().map(|m| format!("{m:?}")).collect();
            s.push_str(&format!(" (taken by {})", list.join(", ")));
        }
        s
    }
}

/// Whether a write failed because the server does not serve the kind (any
/// more): 404 for an unknown resource, or 405 while its CRD is terminating.
/// A missing namespace or object is a different 404.
pub(crate) fn kind_gone(e: &DriftError) -> bool {
    let DriftError::Api {
        source: kube::Error::Api(s),
        ..
    } = e
    else {
        return false;
    };
    s.code == 405
        || (s.code == 404 && s.message == "the server could not find the requested resource")
}

fn dry_run_params(force: bool) -> PatchParams {
    let mut pp = PatchParams::apply(FIELD_MANAGER).dry_run();
    if force {
        pp = pp.force();
    }
    pp
}

/// `(manager, field)` of a 409 apply conflict.
fn conflicts_of(e: &kube::Error) -> Option<Vec<(String, String)>> {
    let kube::Error::Api(s) = e else { return None };
    if s.code != 409 {
        return None;
    }
    let causes = s
        .details
        .as_ref()
        .map(|d| d.causes.clone())
        .unwrap_or_default();
    Some(
        causes
            .iter()
            .map(|c| {
                // `conflict with "kubectl-patch" using v1`
                let manager = c
                    .message
                    .split('"')
                    .nth(1)
                    .unwrap_or(c.message.as_str())
                    .to_string();
                (manager, c.field.clone())
            })
            .collect(),
    )
}

/// Reads `t` and dry-runs the release's apply of it: what differs now.
/// `ignored` pointers never count.
pub async fn check_object(
    cluster: &Cluster,
    t: &Tracked,
    ignored: &[String],
) -> Result<Finding, DriftError> {
    check_object_live(cluster, t, ignored).await.map(|(f, _)| f)
}

/// [`check_object`], also giving the live object's metadata when there is
/// one (what an in-sync object looks like, for a watch's later events).
pub async fn check_object_live(
    cluster: &Cluster,
    t: &Tracked,
    ignored: &[String],
) -> Result<(Finding, Option<kube::core::ObjectMeta>), DriftError> {
    let api = t.api(cluster);
    let (live, meta) = match cluster.request(api.get(&t.key.name)).await {
        Ok(o) => {
            let meta = o.metadata.clone();
            (serde_json::to_value(&o).unwrap_or_default(), meta)
        }
        Err(e) if is_not_found(&e) => return Ok((Finding::Missing, None)),
        Err(source) => {
            return Err(DriftError::Api {
                step: "get",
                key: t.key.to_string(),
                source,
            });
        }
    };
    let o = t.object()?;
    let body = without_paths(&o.body, ignored);
    let dry = |force: bool| {
        let api = api.clone();
        let body = body.clone();
        let name = o.name.clone();
        async move {
            cluster
                .request(api.patch(&name, &dry_run_params(force), &Patch::Apply(&body)))
                .await
        }
    };
    let (would, conflicts) = match dry(false).await {
        Ok(w) => (w, Vec::new()),
        Err(e) => match conflicts_of(&e) {
            Some(c) => match dry(true).await {
                Ok(w) => (w, c),
                Err(source) => {
                    return Err(DriftError::Api {
                        step: "dry-run apply",
                        key: t.key.to_string(),
                        source,
                    });
                }
            },
            None if is_not_found(&e) => return Ok((Finding::Missing, None)),
            None => {
                return Err(DriftError::Api {
                    step: "dry-run apply",
                    key: t.key.to_string(),
                    source: e,
                });
            }
        },
    };
    let would = serde_json::to_value(&would).unwrap_or_default();
    let mut paths = Vec::new();
    differing_paths(&comparable(&live), &comparable(&would), "", &mut paths);
    paths.retain(|p| !is_ignored(p, ignored));
    let finding = match paths.is_empty() {
        true => Finding::InSync,
        false => Finding::Changed(Change {
            paths,
            conflicts,
            live,
            would_be: would,
        }),
    };
    Ok((finding, Some(meta)))
}

/// Whether pointer `p` is at or under one of `ignored`.
fn is_ignored(p: &str, ignored: &[String]) -> bool {
    ignored
        .iter()
        .any(|i| p == i || (p.starts_with(i.as_str()) && p[i.len()..].starts_with('/')))
}

/// `v` without the fields at `paths` (pointers that name nothing are
/// skipped).
fn without_paths(v: &Json, paths: &[String]) -> Json {
    let mut v = v.clone();
    for p in paths {
        let Some((parent, last)) = p.rsplit_once('/') else {
            continue;
        };
        let last = last.replace("~1", "/").replace("~0", "~");
        match v.pointer_mut(parent) {
            Some(Json::Object(m)) => {
                m.remove(&last);
            }
            Some(Json::Array(a)) => {
                if let Ok(i) = last.parse::<usize>()
                    && i < a.len()
                {
                    a.remove(i);
                }
            }
            _ => {}
        }
    }
    v
}

/// An object's values without the server's bookkeeping (resourceVersion,
/// managedFields, generation, status): what a user's edit changes.
fn comparable(v: &Json) -> Json {
    let mut v = v.clone();
    if let Some(o) = v.as_object_mut() {
        o.remove("status");
        o.remove("apiVersion");
        o.remove("kind");
    }
    if let Some(m) = v.get_mut("metadata").and_then(|m| m.as_object_mut()) {
        for k in ["managedFields", "resourceVersion", "generation"] {
            m.remove(k);
        }
    }
    v
}

/// JSON pointers where `a` and `b` differ (leaves, or whole lists).
fn differing_paths(a: &Json, b: &Json, at: &str, out: &mut Vec<String>) {
    match (a, b) {
        (Json::Object(x), Json::Object(y)) => {
            let keys: BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for k in keys {
                let p = format!("{at}/{}", k.replace('~', "~0").replace('/', "~1"));
                match (x.get(k), y.get(k)) {
                    (Some(l), Some(r)) => differing_paths(l, r, &p, out),
                    _ => out.push(p),
                }
            }
        }
        (Json::Array(x), Json::Array(y)) if x.len() == y.len() => {
            for (i, (l, r)) in x.iter().zip(y).enumerate() {
                differing_paths(l, r, &format!("{at}/{i}"), out);
            }
        }
        _ if a == b => {}
        _ => out.push(if at.is_empty() { "/".into() } else { at.into() }),
    }
}

/// Who may write, and through which client: every drift write (a restore
/// apply, an Event) goes through one of these, so the owner of the gate
/// (the operator, with leader election) decides in one place.
#[derive(Clone)]
pub struct Writes {
    cluster: Cluster,
    gate: Arc<dyn Fn() -> bool + Send + Sync>,
    /// `reportingInstance` of Events.
    instance: String,
}

impl Writes {
    pub fn new(cluster: Cluster, gate: Arc<dyn Fn() -> bool + Send + Sync>) -> Writes {
        let instance = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|s| s.trim().to_string())
            .unwrap_or_default();
        Writes {
            cluster,
            gate,
            instance,
        }
    }

    pub fn cluster(&self) -> &Cluster {
        &self.cluster
    }

    /// Whether writes are allowed now.
    pub fn allowed(&self) -> bool {
        (self.gate)()
    }

    /// Applies `t` as the release does (`force`: taking fields another
    /// manager holds, without the `ignored` ones). Returns the object's
    /// metadata after the write.
    pub async fn restore(
        &self,
        t: &Tracked,
        force: bool,
        ignored: &[String],
    ) -> Result<kube::core::ObjectMeta, DriftError> {
        let o = t.object()?;
        let body = without_paths(&o.body, ignored);
        let mut pp = PatchParams::apply(FIELD_MANAGER);
        if force {
            pp = pp.force();
        }
        let api = t.api(&self.cluster);
        self.cluster
            .request(api.patch(&o.name, &pp, &Patch::Apply(&body)))
            .await
            .map(|o| o.metadata)
            .map_err(|source| DriftError::Api {
                step: "restore",
                key: t.key.to_string(),
                source,
            })
    }

    /// A core/v1 Event on `t` (cluster-scoped objects: in `default`, as
    /// kubectl puts them). `uid` is the object's, when known.
    pub async fn event(
        &self,
        t: &Tracked,
        uid: Option<&str>,
        warning: bool,
        reason: &str,
        message: &str,
    ) -> Result<(), DriftError> {
        let ns = if t.key.namespace.is_empty() {
            "default"
        } else {
            t.key.namespace.as_str()
        };
        let now = chrono::Utc::now();
        let stamp = now.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
        let micro = now.to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
        let mut involved = json!({
            "apiVersion": &*t.api_version, "kind": t.key.kind, "name": t.key.name,
        });
        if !t.key.namespace.is_empty() {
            involved["namespace"] = json!(t.key.namespace);
        }
        if let Some(uid) = uid {
            involved["uid"] = json!(uid);
        }
        let ev = json!({
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"generateName": format!("{}.", t.key.name), "namespace": ns},
            "involvedObject": involved,
            "reason": reason,
            // The API caps messages at 1 KiB.
            "message": message.chars().take(1000).collect::<String>(),
            "type": if warning { "Warning" } else { "Normal" },
            "source": {"component": "antiopa"},
            "reportingComponent": "antiopa",
            "reportingInstance": self.instance,
            "firstTimestamp": stamp, "lastTimestamp": stamp, "eventTime": micro,
            "action": "Drift",
            "count": 1,
        });
        let ev: k8s_openapi::api::core::v1::Event =
            serde_json::from_value(ev).map_err(|e| DriftError::Api {
                step: "event",
                key: t.key.to_string(),
                source: kube::Error::SerdeError(e),
            })?;
        let api: Api<k8s_openapi::api::core::v1::Event> =
            Api::namespaced(self.cluster.client().clone(), ns);
        self.cluster
            .request(api.create(&PostParams::default(), &ev))
            .await
            .map(|_| ())
            .map_err(|source| DriftError::Api {
                step: "event",
                key: t.key.to_string(),
                source,
            })
    }
}

/// Upper bounds (seconds) of the restore latency histogram.
pub const LATENCY_BUCKETS: [f64; 11] =
    [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0];

/// A histogram as Prometheus keeps one: per bucket, how many observations
/// were at most its bound (cumulative), their sum and count.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct Histogram {
    /// (upper bound in seconds, cumulative count), as [`LATENCY_BUCKETS`].
    pub buckets: Vec<(f64, u64)>,
    pub sum: f64,
    pub count: u64,
}

impl Histogram {
    fn observe(&mut self, v: Duration) {
        if self.buckets.is_empty() {
            self.buckets = LATENCY_BUCKETS.iter().map(|b| (*b, 0)).collect();
        }
        let s = v.as_secs_f64();
        for (bound, n) in &mut self.buckets {
            if s <= *bound {
                *n += 1;
            }
        }
        self.sum += s;
        self.count += 1;
    }
}

/// Drift's counters, for the operator's metrics
/// (`antiopa_drift_detected_total{module,kind}`,
/// `antiopa_drift_restored_total{module,kind}`,
/// `antiopa_drift_restore_seconds`).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct MetricsSnapshot {
    /// module → kind → count.
    pub detected: BTreeMap<String, BTreeMap<String, u64>>,
    pub restored: BTreeMap<String, BTreeMap<String, u64>>,
    /// From seeing a deletion or change to the restore written.
    pub restore_seconds: Histogram,
}

/// [`MetricsSnapshot`], shared (clones are the same counters) and updated
/// in place.
#[derive(Clone, Debug, Default)]
pub struct Metrics(Arc<Mutex<MetricsSnapshot>>);

impl Metrics {
    pub fn snapshot(&self) -> MetricsSnapshot {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn with<R>(&self, f: impl FnOnce(&mut MetricsSnapshot) -> R) -> R {
        f(&mut self.0.lock().unwrap_or_else(|p| p.into_inner()))
    }

    fn detected(&self, module: &str, kind: &str) {
        self.with(|m| {
            *m.detected
                .entry(module.into())
                .or_default()
                .entry(kind.into())
                .or_default() += 1
        });
    }

    fn restored(&self, module: &str, kind: &str, took: Duration) {
        self.with(|m| {
            *m.restored
                .entry(module.into())
                .or_default()
                .entry(kind.into())
                .or_default() += 1;
            m.restore_seconds.observe(took);
        });
    }
}

impl serde::Serialize for Metrics {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.snapshot().serialize(s)
    }
}

/// One module's drift state (for its status).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct ModuleDrift {
    pub mode: Mode,
    /// Objects watched.
    pub objects: usize,
    /// A module run is under way or failed last: drift waits for its next
    /// successful run.
    pub suspended: bool,
    /// Drift seen (deletions and changes).
    pub detected: u64,
    /// Objects restored or re-applied.
    pub restored: u64,
    /// Objects antiopa stopped fighting for (circuit breaker open), until
    /// the next module run, with why.
    pub stopped: BTreeMap<String, String>,
    /// The last drift seen, as logged.
    pub last: Option<String>,
    /// The newest [`DRIFT_EVENTS_KEPT`] things drift saw or did, oldest
    /// first.
    pub events: std::collections::VecDeque<DriftEvent>,
}

/// Drift events kept per module.
pub const DRIFT_EVENTS_KEPT: usize = 10;

/// One thing drift saw or did to a module's object.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct DriftEvent {
    pub at: std::time::SystemTime,
    /// The object and what happened to it, as logged.
    pub what: String,
    /// `detected`, `restored`, `reported`, `given up`, `restore failed`.
    pub outcome: String,
}

impl ModuleDrift {
    fn note(&mut self, what: &str, outcome: impl Into<String>) {
        if self.events.len() == DRIFT_EVENTS_KEPT {
            self.events.pop_front();
        }
        self.events.push_back(DriftEvent {
            at: std::time::SystemTime::now(),
            what: what.to_string(),
            outcome: outcome.into(),
        });
    }
}

/// One object of `antiopa drift`.
#[derive(Clone, Debug)]
pub struct Drifted {
    pub module: String,
    pub key: Key,
    pub api_version: String,
    pub finding: Finding,
}

/// For `antiopa drift`: every object of the deployed revision of each of
/// `releases` in `namespace` checked now ([`check_object`]), with each
/// release's ignore rules taken from its recorded values (`settings_key`
/// names its section: the module's camelCase name). In-sync objects are
/// left out. Releases without a deployed revision are skipped.
pub async fn scan(
    cluster: &Cluster,
    namespace: &str,
    releases: &[(String, String)],
    warnings: &mut Vec<String>,
) -> Result<Vec<Drifted>, DriftError> {
    let mut out = Vec::new();
    for (name, settings_key) in releases {
        let h = crate::release::history(cluster, name, namespace).await?;
        let Some(rel) = h
            .iter()
            .rev()
            .find(|r| r.status() == crate::release::Status::Deployed)
        else {
            warnings.push(format!("release {name:?}: no deployed revision; skipped"));
            continue;
        };
        let section = rel.config.as_ref().and_then(|c| c.get(settings_key));
        let settings = Settings::from_values(section, settings_key)?;
        for t in tracked_objects(cluster, name, namespace, &rel.manifest, warnings).await? {
            let ignored = settings.ignored_paths(&t.api_version, &t.key);
            let finding = check_object(cluster, &t, &ignored).await?;
            if finding != Finding::InSync {
                out.push(Drifted {
                    module: name.clone(),
                    key: t.key.clone(),
                    api_version: t.api_version.to_string(),
                    finding,
                });
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_from_values_name_the_bad_key() {
        let s = Settings::from_values(None, "web").unwrap();
        assert_eq!(s.mode, Mode::Enabled);
        let v = json!({"driftMode": "warn", "driftIgnore": [{"paths": ["/spec/replicas"], "target": {"kind": "Deployment", "name": "web"}}]});
        let s = Settings::from_values(Some(&v), "web").unwrap();
        assert_eq!(s.mode, Mode::Warn);
        let key = |kind: &str, name: &str| Key {
            group: String::new(),
            kind: kind.into(),
            namespace: "apps".into(),
            name: name.into(),
        };
        assert_eq!(
            s.ignored_paths("apps/v1", &key("Deployment", "web")),
            ["/spec/replicas"]
        );
        assert!(
            s.ignored_paths("apps/v1", &key("Deployment", "api"))
                .is_empty()
        );
        let bad = Settings::from_values(Some(&json!({"driftMode": "on"})), "web").unwrap_err();
        assert_eq!(
            bad.to_string(),
            "values key web.driftMode: must be enabled, warn or disabled, got \"on\""
        );
        let bad =
            Settings::from_values(Some(&json!({"driftIgnore": [{"paths": ["spec"]}]})), "web")
                .unwrap_err();
        assert!(
            bad.to_string().contains("web.driftIgnore[0].paths"),
            "{bad}"
        );
    }

    #[test]
    fn only_values_count_and_ignored_paths_never() {
        let live = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "resourceVersion": "7", "managedFields": [{"manager": "x"}]}, "data": {"a": "2", "b": "1"}, "status": {"x": 1}});
        let would = json!({"metadata": {"name": "a", "resourceVersion": "8"}, "data": {"a": "1", "b": "1"}});
        let mut p = Vec::new();
        differing_paths(&comparable(&live), &comparable(&would), "", &mut p);
        assert_eq!(p, ["/data/a"]);
        assert!(is_ignored("/data/a", &["/data".into()]));
        assert!(!is_ignored("/data2", &["/data".into()]));
        let stripped = without_paths(&would, &["/data/a".into(), "/nothing/here".into()]);
        assert_eq!(stripped["data"], json!({"b": "1"}));
    }

    #[test]
    fn histogram_is_cumulative() {
        let mut h = Histogram::default();
        h.observe(Duration::from_millis(30));
        h.observe(Duration::from_millis(700));
        assert_eq!(h.count, 2);
        assert_eq!(h.buckets[1], (0.025, 0));
        assert_eq!(h.buckets[2], (0.05, 1));
        assert_eq!(h.buckets[6], (1.0, 2));
    }
}

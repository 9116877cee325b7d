//! Server-side apply of a set of objects, all or nothing as far as the API
//! allows: resolve every kind, read live state with one LIST per resource
//! and namespace, dry-run every apply (`dryRun=All`) so a field conflict or
//! an invalid object stops the run before any write, then apply for real in
//! install order (Namespaces, CRDs — waiting until they are Established —,
//! then helm's `InstallOrder`), skipping objects the dry run showed would
//! not change, and finally prune what the previous release had and this one
//! does not (reverse install order, 404 counts as gone,
//! `helm.sh/resource-policy: keep` respected).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Duration;

use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams};
use serde_json::Value as Json;

use super::objects::{Key, Object, to_yaml};
use super::ownership::{self, Owner, Ownership, Refused};
use crate::cluster::{
    Cluster, Resolved, error_text, is_not_found, is_transient, split_api_version,
};

/// The field manager antiopa applies as.
pub const FIELD_MANAGER: &str = "antiopa";

/// How to apply.
#[derive(Clone, Debug)]
pub struct ApplyOptions {
    /// Namespace for namespaced objects that name none.
    pub namespace: String,
    pub field_manager: String,
    /// Take over fields other managers own (`force=true`).
    pub force_conflicts: bool,
    /// Only dry-run: report what would happen, write nothing.
    pub dry_run: bool,
    /// How long to wait for a CRD to become Established.
    pub crd_timeout: Duration,
    /// Field managers whose fields are taken over without
    /// `--force-conflicts`: `helm`, so a release helm installed (its objects
    /// written with Update operations as manager `helm`) can be upgraded.
    pub adopt_from: Vec<String>,
    /// The release the objects belong to: objects stamped for it
    /// ([`ownership::stamp`]) that exist already are checked before any
    /// write, and prune never deletes another release's objects. `None`:
    /// no ownership rules (a bare apply of objects).
    pub owner: Option<Owner>,
}

impl ApplyOptions {
    pub fn new(namespace: &str) -> ApplyOptions {
        ApplyOptions {
            namespace: namespace.to_string(),
            field_manager: FIELD_MANAGER.to_string(),
            force_conflicts: false,
            dry_run: false,
            crd_timeout: Duration::from_secs(60),
            adopt_from: vec!["helm".to_string()],
            owner: None,
        }
    }
}

/// What an apply did (or, dry-run, would do) to one object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Created,
    Configured,
    Unchanged,
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Outcome::Created => "created",
            Outcome::Configured => "configured",
            Outcome::Unchanged => "unchanged",
        })
    }
}

/// Progress events, for a terminal line.
#[derive(Debug)]
pub enum Progress<'a> {
    Applied {
        done: usize,
        total: usize,
        key: &'a Key,
        outcome: Outcome,
    },
    Pruned {
        key: &'a Key,
    },
}

/// The summary.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ApplyReport {
    pub created: Vec<Key>,
    pub configured: Vec<Key>,
    pub unchanged: Vec<Key>,
    pub pruned: Vec<Key>,
    /// Objects that would have been pruned but carry `resource-policy: keep`.
    pub kept: Vec<Key>,
    /// Objects that would have been pruned but belong to another release or
    /// tool now, with why: left alone.
    pub foreign: Vec<(Key, String)>,
}

impl ApplyReport {
    /// `created N, configured N, unchanged N, pruned N`.
    pub fn summary(&self) -> String {
        format!(
            "created {}, configured {}, unchanged {}, pruned {}",
            self.created.len(),
            self.configured.len(),
            self.unchanged.len(),
            self.pruned.len()
        )
    }

    /// Whether anything was (or would be) written.
    pub fn changed(&self) -> bool {
        !(self.created.is_empty() && self.configured.is_empty() && self.pruned.is_empty())
    }
}

/// One field conflict of one object.
#[derive(Clone, Debug, PartialEq)]
pub struct Conflict {
    pub key: Key,
    /// `conflict with "kubectl-edit" using v1: .data.a`, one per field.
    pub fields: Vec<String>,
}

impl Conflict {
    /// Whether every conflicting field belongs to one of `managers`.
    fn adoptable(&self, managers: &[String]) -> bool {
        !self.fields.is_empty()
            && self.fields.iter().all(|f| {
                managers
                    .iter()
                    .any(|m| f.starts_with(&format!("conflict with {m:?}")))
            })
    }
}

/// Why an apply stopped.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    #[error(
        "resource mapping not found for name: {name:?} namespace: {namespace:?} from {source_path:?}: no matches for kind {kind:?} in version {api_version:?}\nensure CRDs are installed first"
    )]
    UnknownKind {
        name: String,
        namespace: String,
        source_path: String,
        kind: String,
        api_version: String,
    },
    #[error("{}", conflicts_text(.0))]
    Conflicts(Vec<Conflict>),
    /// Objects that exist and are not this release's (see [`ownership`]).
    #[error("{}", ownership::refused_text(*.upgrade, .refused))]
    Ownership {
        upgrade: bool,
        refused: Vec<Refused>,
    },
    #[error("{step} {key}: {}", crate::cluster::error_text(.source))]
    Api {
        step: &'static str,
        key: String,
        #[source]
        source: kube::Error,
    },
    #[error(
        "CustomResourceDefinition {name} did not become Established in time{}",
        .last_error.as_ref().map(|e| format!(" (last error: {e})")).unwrap_or_default()
    )]
    CrdTimeout {
        name: String,
        /// The last failed read of the CRD, when the wait ended on one.
        last_error: Option<String>,
    },
}

fn conflicts_text(cs: &[Conflict]) -> String {
    let n: usize = cs.iter().map(|c| c.fields.len()).sum();
    let mut s = format!(
        "Apply failed with {n} conflict{}; nothing was changed (--force-conflicts takes these fields over):",
        if n == 1 { "" } else { "s" }
    );
    for c in cs {
        for f in &c.fields {
            s.push_str(&format!("\n  {}: {f}", c.key));
        }
    }
    s
}

/// An object with its resolved resource and what the dry run found.
#[derive(Clone, Debug)]
pub struct Planned {
    pub object: Object,
    pub resolved: Resolved,
    /// The kind is defined by a CRD of this same apply and not served yet:
    /// no dry run was possible.
    pub pending_type: bool,
    pub live: Option<Json>,
    /// The dry-run result (`None` when the dry run could not run: pending
    /// type or missing namespace).
    pub would_be: Option<Json>,
    pub outcome: Outcome,
    /// Apply with `force`: `--force-conflicts`, or every conflicting field
    /// belongs to an adopted manager.
    pub force: bool,
}

impl Planned {
    pub fn key(&self) -> Key {
        self.object.key()
    }
}

/// An object of the previous release that this one drops.
#[derive(Clone, Debug)]
pub struct PruneCandidate {
    pub object: Object,
    pub resolved: Resolved,
    pub keep: bool,
    /// The live object belongs to another release or tool (why): never
    /// deleted.
    pub foreign: Option<String>,
}

/// The dry-run view of an apply.
#[derive(Debug, Default)]
pub struct Plan {
    pub objects: Vec<Planned>,
    pub prune: Vec<PruneCandidate>,
}

fn api_for(cluster: &Cluster, r: &Resolved, ns: Option<&str>) -> Api<DynamicObject> {
    match (r.namespaced, ns) {
        (true, Some(ns)) => Api::namespaced_with(cluster.client().clone(), ns, &r.resource),
        _ => Api::all_with(cluster.client().clone(), &r.resource),
    }
}

/// The kind a CRD of this apply defines, as discovery would report it.
fn from_crds(crds: &[&Object], api_version: &str, kind: &str) -> Option<Resolved> {
    let (group, version) = split_api_version(api_version);
    crds.iter().find_map(|c| {
        let spec = c.body.get("spec")?;
        let names = spec.get("names")?;
        let serves = spec
            .get("versions")
            .and_then(|v| v.as_array())
            .is_some_and(|vs| {
                vs.iter()
                    .any(|v| v.get("name").and_then(|n| n.as_str()) == Some(version))
            });
        if spec.get("group")?.as_str()? != group || names.get("kind")?.as_str()? != kind || !serves
        {
            return None;
        }
        let plural = names.get("plural")?.as_str()?;
        let gvk = kube::core::GroupVersionKind::gvk(group, version, kind);
        Some(Resolved {
            resource: kube::core::ApiResource::from_gvk_with_plural(&gvk, plural),
            namespaced: spec.get("scope").and_then(|s| s.as_str()) == Some("Namespaced"),
        })
    })
}

/// Resolve kinds, default or drop namespaces.
async fn resolve_all(
    cluster: &Cluster,
    objects: Vec<Object>,
    namespace: &str,
) -> Result<Vec<(Object, Resolved, bool)>, ApplyError> {
    let crds: Vec<Object> = objects
        .iter()
        .filter(|o| o.kind == "CustomResourceDefinition")
        .cloned()
        .collect();
    let crd_refs: Vec<&Object> = crds.iter().collect();
    let mut out = Vec::new();
    for mut o in objects {
        let found = cluster
            .resolve(&o.api_version, &o.kind)
            .await
            .map_err(|source| ApplyError::Api {
                step: "discover",
                key: format!("{} {}", o.api_version, o.kind),
                source,
            })?;
        let (resolved, pending) = match found {
            Some(r) => (r, false),
            None => match from_crds(&crd_refs, &o.api_version, &o.kind) {
                Some(r) => (r, true),
                None => {
                    return Err(ApplyError::UnknownKind {
                        name: o.name.clone(),
                        namespace: o.namespace.clone().unwrap_or_default(),
                        source_path: o.source.clone(),
                        kind: o.kind.clone(),
                        api_version: o.api_version.clone(),
                    });
                }
            },
        };
        set_namespace(&mut o, resolved.namespaced, namespace);
        out.push((o, resolved, pending));
    }
    Ok(out)
}

fn set_namespace(o: &mut Object, namespaced: bool, default: &str) {
    if namespaced {
        let ns = o.namespace.clone().unwrap_or_else(|| default.to_string());
        if let Some(m) = o.body.get_mut("metadata").and_then(|m| m.as_object_mut()) {
            m.insert("namespace".into(), Json::String(ns.clone()));
        }
        o.namespace = Some(ns);
    } else {
        if let Some(m) = o.body.get_mut("metadata").and_then(|m| m.as_object_mut()) {
            m.remove("namespace");
        }
        o.namespace = None;
    }
}

/// Read live objects: one LIST per (resource, namespace).
async fn read_live(
    cluster: &Cluster,
    items: &[(Object, Resolved, bool)],
) -> Result<HashMap<Key, Json>, ApplyError> {
    let mut lists: BTreeMap<(String, String, String), &Resolved> = BTreeMap::new();
    for (o, r, pending) in items {
        if *pending {
            continue;
        }
        lists.insert(
            (
                r.resource.api_version.clone(),
                r.resource.plural.clone(),
                o.namespace.clone().unwrap_or_default(),
            ),
            r,
        );
    }
    let mut live = HashMap::new();
    for ((_, _, ns), r) in lists {
        let api = api_for(cluster, r, (!ns.is_empty()).then_some(ns.as_str()));
        let list = match cluster.request(api.list(&ListParams::default())).await {
            Ok(l) => l,
            Err(e) if is_not_found(&e) => continue,
            Err(source) => {
                return Err(ApplyError::Api {
                    step: "list",
                    key: format!("{} in {ns:?}", r.resource.plural),
                    source,
                });
            }
        };
        for item in list.items {
            let key = Key {
                group: r.resource.group.clone(),
                kind: r.resource.kind.clone(),
                namespace: if r.namespaced {
                    ns.clone()
                } else {
                    String::new()
                },
                name: item.metadata.name.clone().unwrap_or_default(),
            };
            if let Ok(j) = serde_json::to_value(&item) {
                live.insert(key, j);
            }
        }
    }
    Ok(live)
}

fn patch_params(opts: &ApplyOptions, dry_run: bool, force: bool) -> PatchParams {
    let mut pp = PatchParams::apply(&opts.field_manager);
    if force {
        pp = pp.force();
    }
    if dry_run {
        pp = pp.dry_run();
    }
    pp
}

/// A 409 from an apply, as field conflicts.
fn conflict_of(key: &Key, e: &kube::Error) -> Option<Conflict> {
    let kube::Error::Api(s) = e else { return None };
    if s.code != 409 {
        return None;
    }
    let causes = s
        .details
        .as_ref()
        .map(|d| d.causes.clone())
        .unwrap_or_default();
    let fields = if causes.is_empty() {
        vec![s.message.clone()]
    } else {
        causes
            .iter()
            .map(|c| format!("{}: {}", c.message, c.field))
            .collect()
    };
    Some(Conflict {
        key: key.clone(),
        fields,
    })
}

/// Whether a dry-run result equals the live object, ignoring what every
/// write touches (resourceVersion, generation, managedFields times).
pub fn same_object(live: &Json, would: &Json) -> bool {
    normalize(live) == normalize(would)
}

fn normalize(v: &Json) -> Json {
    let mut v = v.clone();
    if let Some(o) = v.as_object_mut() {
        o.remove("apiVersion");
        o.remove("kind");
    }
    if let Some(m) = v.get_mut("metadata").and_then(|m| m.as_object_mut()) {
        m.remove("resourceVersion");
        m.remove("generation");
        if let Some(mf) = m.get_mut("managedFields").and_then(|x| x.as_array_mut()) {
            for e in mf {
                if let Some(e) = e.as_object_mut() {
                    e.remove("time");
                }
            }
        }
    }
    v
}

/// Resolve, read live state, and dry-run every object; conflicts abort.
pub async fn plan(
    cluster: &Cluster,
    objects: Vec<Object>,
    previous: Vec<Object>,
    opts: &ApplyOptions,
) -> Result<Plan, ApplyError> {
    let mut objects = objects;
    super::objects::sort_install(&mut objects);
    let items = resolve_all(cluster, objects, &opts.namespace).await?;
    let live = read_live(cluster, &items).await?;
    let adopted = match &opts.owner {
        Some(owner) => check_ownership(owner, &items, &live, &previous, &opts.namespace)?,
        None => HashSet::new(),
    };
    let mut planned = Vec::new();
    let mut conflicts = Vec::new();
    for (o, r, pending) in items {
        let key = o.key();
        let live_obj = live.get(&key).cloned();
        let mut p = Planned {
            object: o,
            resolved: r,
            pending_type: pending,
            live: live_obj,
            would_be: None,
            outcome: Outcome::Created,
            // Adopting an object takes its fields over from whoever made it.
            force: opts.force_conflicts || adopted.contains(&key),
        };
        if !pending {
            let api = api_for(cluster, &p.resolved, p.object.namespace.as_deref());
            let mut res = cluster
                .request(api.patch(
                    &p.object.name,
                    &patch_params(opts, true, p.force),
                    &Patch::Apply(&p.object.body),
                ))
                .await;
            if let Err(e) = &res
                && let Some(c) = conflict_of(&key, e)
                && c.adoptable(&opts.adopt_from)
            {
                p.force = true;
                res = cluster
                    .request(api.patch(
                        &p.object.name,
                        &patch_params(opts, true, true),
                        &Patch::Apply(&p.object.body),
                    ))
                    .await;
            }
            match res {
                Ok(obj) => p.would_be = serde_json::to_value(&obj).ok(),
                // The namespace (or the type) is created by this apply.
                Err(e) if is_not_found(&e) => {}
                Err(e) => match conflict_of(&key, &e) {
                    Some(c) => conflicts.push(c),
                    None => {
                        return Err(ApplyError::Api {
                            step: "dry-run apply",
                            key: key.to_string(),
                            source: e,
                        });
                    }
                },
            }
        }
        p.outcome = match (&p.live, &p.would_be) {
            (None, _) => Outcome::Created,
            (Some(l), Some(w)) if same_object(l, w) => Outcome::Unchanged,
            (Some(_), _) => Outcome::Configured,
        };
        planned.push(p);
    }
    if !conflicts.is_empty() {
        return Err(ApplyError::Conflicts(conflicts));
    }
    let prune = prune_candidates(
        cluster,
        &planned,
        previous,
        &opts.namespace,
        opts.owner.as_ref(),
    )
    .await?;
    Ok(Plan {
        objects: planned,
        prune,
    })
}

/// Whether `prev` (an object of the release's record, its namespace as
/// written) is the object `k` names; a record's object without a namespace
/// landed in the release namespace, or is cluster-scoped.
fn same_as_recorded(prev: &Object, k: &Key, namespace: &str) -> bool {
    let ns = match prev.namespace.as_deref() {
        Some(ns) => ns,
        None if k.namespace.is_empty() => "",
        None => namespace,
    };
    prev.group() == k.group && prev.kind == k.kind && prev.name == k.name && ns == k.namespace
}

/// Helm's ownership check, before any write: every object stamped for
/// `owner` that exists already must be the release's (see [`ownership`]).
/// Returns the objects adopted (`take_ownership`).
fn check_ownership(
    owner: &Owner,
    items: &[(Object, Resolved, bool)],
    live: &HashMap<Key, Json>,
    previous: &[Object],
    namespace: &str,
) -> Result<HashSet<Key>, ApplyError> {
    let mut refused = Vec::new();
    let mut adopted = HashSet::new();
    for (o, _, _) in items {
        if !owner.stamped(o) {
            continue;
        }
        let key = o.key();
        let Some(l) = live.get(&key) else { continue };
        let in_previous = previous
            .iter()
            .any(|p| same_as_recorded(p, &key, namespace));
        match ownership::classify(l, owner, in_previous) {
            Ownership::Ours => {}
            Ownership::Unowned(_) if owner.take_ownership => {
                adopted.insert(key);
            }
            o => refused.push(Refused { key, ownership: o }),
        }
    }
    if refused.is_empty() {
        Ok(adopted)
    } else {
        Err(ApplyError::Ownership {
            upgrade: owner.upgrade,
            refused,
        })
    }
}

async fn prune_candidates(
    cluster: &Cluster,
    planned: &[Planned],
    previous: Vec<Object>,
    namespace: &str,
    owner: Option<&Owner>,
) -> Result<Vec<PruneCandidate>, ApplyError> {
    let wanted: HashSet<Key> = planned.iter().map(|p| p.key()).collect();
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for mut o in previous {
        let resolved = match cluster.resolve(&o.api_version, &o.kind).await {
            Ok(Some(r)) => r,
            // The kind is gone from the server (its CRD was removed): so
            // are its objects.
            Ok(None) => continue,
            Err(source) => {
                return Err(ApplyError::Api {
                    step: "discover",
                    key: format!("{} {}", o.api_version, o.kind),
                    source,
                });
            }
        };
        set_namespace(&mut o, resolved.namespaced, namespace);
        let key = o.key();
        if wanted.contains(&key) || !seen.insert(key) {
            continue;
        }
        let keep = o.keep();
        out.push(PruneCandidate {
            object: o,
            resolved,
            keep,
            foreign: None,
        });
    }
    // Another release (or tool) may have taken an object over since this
    // release wrote it: one LIST per kind and namespace tells.
    if let Some(owner) = owner {
        let items: Vec<(Object, Resolved, bool)> = out
            .iter()
            .filter(|c| !c.keep)
            .map(|c| (c.object.clone(), c.resolved.clone(), false))
            .collect();
        let live = read_live(cluster, &items).await?;
        for c in &mut out {
            if let Some(l) = live.get(&c.object.key())
                && let Ownership::Foreign(why) = ownership::classify(l, owner, true)
            {
                c.foreign = Some(why);
            }
        }
    }
    // Reverse install order.
    out.sort_by_key(|c| c.object.order());
    out.reverse();
    Ok(out)
}

/// Wait until a CRD reports `Established`, or discovery serves its kind.
async fn wait_established(
    cluster: &Cluster,
    crd: &Object,
    timeout: Duration,
) -> Result<(), ApplyError> {
    let group = crd
        .body
        .pointer("/spec/group")
        .and_then(|v| v.as_str())
        .unwrap_or_default();
    let kind = crd
        .body
        .pointer("/spec/names/kind")
        .and_then(|v| v.as_str())
        .unwrap_or_default();
    let versions: Vec<String> = crd
        .body
        .pointer("/spec/versions")
        .and_then(|v| v.as_array())
        .map(|vs| {
            vs.iter()
                .filter_map(|v| v.get("name").and_then(|n| n.as_str()).map(String::from))
                .collect()
        })
        .unwrap_or_default();
    let gvk =
        kube::core::GroupVersionKind::gvk("apiextensions.k8s.io", "v1", "CustomResourceDefinition");
    let ar = kube::core::ApiResource::from_gvk_with_plural(&gvk, "customresourcedefinitions");
    let api: Api<DynamicObject> = Api::all_with(cluster.client().clone(), &ar);
    let deadline = tokio::time::Instant::now() + timeout;
    // The GET is polled: a read that timed out or met a server error is
    // asked again until the deadline, and the error is reported if the
    // deadline passes on it; any other failure (403, …) ends the wait at
    // once instead of hiding behind "not Established in time".
    loop {
        let last_error = match cluster.request(api.get(&crd.name)).await {
            Ok(o) => {
                let established = o
                    .data
                    .pointer("/status/conditions")
                    .and_then(|c| c.as_array())
                    .is_some_and(|cs| {
                        cs.iter().any(|c| {
                            c.get("type").and_then(|t| t.as_str()) == Some("Established")
                                && c.get("status").and_then(|s| s.as_str()) == Some("True")
                        })
                    });
                if established {
                    for v in &versions {
                        cluster.discovery().invalidate(&format!("{group}/{v}"));
                    }
                    return Ok(());
                }
                None
            }
            Err(e) if is_transient(&e) || is_not_found(&e) => {
                Some(format!("get {}: {}", crd.name, error_text(&e)))
            }
            Err(source) => {
                return Err(ApplyError::Api {
                    step: "get",
                    key: format!("CustomResourceDefinition {}", crd.name),
                    source,
                });
            }
        };
        // A server that serves the kind is as good as the condition.
        if let Some(v) = versions.first() {
            let av = format!("{group}/{v}");
            cluster.discovery().invalidate(&av);
            if let Ok(Some(_)) = cluster.resolve(&av, kind).await {
                return Ok(());
            }
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(ApplyError::CrdTimeout {
                name: crd.name.clone(),
                last_error,
            });
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Apply a plan: writes only what the dry run showed would change.
pub async fn execute(
    cluster: &Cluster,
    plan: Plan,
    opts: &ApplyOptions,
    progress: &mut (dyn FnMut(Progress<'_>) + Send),
) -> Result<ApplyReport, ApplyError> {
    let mut report = ApplyReport::default();
    let total = plan.objects.len();
    let mut waiting_crds: Vec<Object> = Vec::new();
    for (i, p) in plan.objects.into_iter().enumerate() {
        let key = p.key();
        let phase = p.object.order().0;
        if phase >= 2 && !waiting_crds.is_empty() && !opts.dry_run {
            for crd in std::mem::take(&mut waiting_crds) {
                wait_established(cluster, &crd, opts.crd_timeout).await?;
            }
        }
        if p.outcome != Outcome::Unchanged && !opts.dry_run {
            let api = api_for(cluster, &p.resolved, p.object.namespace.as_deref());
            let res = cluster
                .request(api.patch(
                    &p.object.name,
                    &patch_params(opts, false, p.force),
                    &Patch::Apply(&p.object.body),
                ))
                .await;
            if let Err(e) = res {
                return Err(match conflict_of(&key, &e) {
                    Some(c) => ApplyError::Conflicts(vec![c]),
                    None => ApplyError::Api {
                        step: "apply",
                        key: key.to_string(),
                        source: e,
                    },
                });
            }
            if p.object.kind == "CustomResourceDefinition" {
                waiting_crds.push(p.object.clone());
            }
        }
        progress(Progress::Applied {
            done: i + 1,
            total,
            key: &key,
            outcome: p.outcome,
        });
        match p.outcome {
            Outcome::Created => report.created.push(key),
            Outcome::Configured => report.configured.push(key),
            Outcome::Unchanged => report.unchanged.push(key),
        }
    }
    if !opts.dry_run {
        for crd in waiting_crds {
            wait_established(cluster, &crd, opts.crd_timeout).await?;
        }
    }
    for c in plan.prune {
        let key = c.object.key();
        if c.keep {
            report.kept.push(key);
            continue;
        }
        if let Some(why) = c.foreign {
            report.foreign.push((key, why));
            continue;
        }
        if !opts.dry_run {
            delete(cluster, &c.resolved, &c.object).await?;
        }
        progress(Progress::Pruned { key: &key });
        report.pruned.push(key);
    }
    Ok(report)
}

/// Resolve one object's kind and namespace (kinds must be served).
pub async fn resolve_object(
    cluster: &Cluster,
    o: Object,
    namespace: &str,
) -> Result<(Object, Resolved), ApplyError> {
    let unknown = ApplyError::UnknownKind {
        name: o.name.clone(),
        namespace: o.namespace.clone().unwrap_or_default(),
        source_path: o.source.clone(),
        kind: o.kind.clone(),
        api_version: o.api_version.clone(),
    };
    let mut v = resolve_all(cluster, vec![o], namespace).await?;
    v.pop().map(|(o, r, _)| (o, r)).ok_or(unknown)
}

/// The API of one resolved object.
pub fn api_for_object(cluster: &Cluster, r: &Resolved, o: &Object) -> Api<DynamicObject> {
    api_for(cluster, r, o.namespace.as_deref())
}

/// Apply one resolved object for real.
pub async fn apply_object(
    cluster: &Cluster,
    r: &Resolved,
    o: &Object,
    opts: &ApplyOptions,
    force: bool,
) -> Result<(), ApplyError> {
    let api = api_for(cluster, r, o.namespace.as_deref());
    cluster
        .request(api.patch(
            &o.name,
            &patch_params(opts, false, force || opts.force_conflicts),
            &Patch::Apply(&o.body),
        ))
        .await
        .map(|_| ())
        .map_err(|e| match conflict_of(&o.key(), &e) {
            Some(c) => ApplyError::Conflicts(vec![c]),
            None => ApplyError::Api {
                step: "apply",
                key: o.key().to_string(),
                source: e,
            },
        })
}

/// Delete one object (background propagation); a 404 means it is gone.
pub async fn delete_object(cluster: &Cluster, r: &Resolved, o: &Object) -> Result<(), ApplyError> {
    delete(cluster, r, o).await
}

/// Delete one object (background propagation); a 404 means it is gone.
pub async fn delete(cluster: &Cluster, r: &Resolved, o: &Object) -> Result<(), ApplyError> {
    let api = api_for(cluster, r, o.namespace.as_deref());
    match cluster
        .request(api.delete(&o.name, &DeleteParams::background()))
        .await
    {
        Ok(_) => Ok(()),
        Err(e) if is_not_found(&e) => Ok(()),
        Err(source) => Err(ApplyError::Api {
            step: "delete",
            key: o.key().to_string(),
            source,
        }),
    }
}

/// Plan and execute.
pub async fn apply(
    cluster: &Cluster,
    objects: Vec<Object>,
    previous: Vec<Object>,
    opts: &ApplyOptions,
    progress: &mut (dyn FnMut(Progress<'_>) + Send),
) -> Result<ApplyReport, ApplyError> {
    let plan = plan(cluster, objects, previous, opts).await?;
    execute(cluster, plan, opts, progress).await
}

/// What [`delete_all`] did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Deleted {
    pub deleted: Vec<Key>,
    /// `helm.sh/resource-policy: keep`.
    pub kept: Vec<Key>,
    /// Another release's or tool's now, with why: left alone.
    pub foreign: Vec<(Key, String)>,
}

/// Delete objects (uninstall): reverse install order, `keep` respected,
/// with an `owner` never an object another release or tool has claimed.
pub async fn delete_all(
    cluster: &Cluster,
    objects: Vec<Object>,
    namespace: &str,
    owner: Option<&Owner>,
) -> Result<Deleted, ApplyError> {
    let cands = prune_candidates(cluster, &[], objects, namespace, owner).await?;
    let mut out = Deleted::default();
    for c in cands {
        if c.keep {
            out.kept.push(c.object.key());
            continue;
        }
        if let Some(why) = c.foreign {
            out.foreign.push((c.object.key(), why));
            continue;
        }
        delete(cluster, &c.resolved, &c.object).await?;
        out.deleted.push(c.object.key());
    }
    Ok(out)
}

/// One object of a live diff: what the cluster has and what an apply would
/// leave (`None`: absent); [`display_yaml`] prints either without the
/// server's bookkeeping.
#[derive(Clone, Debug, PartialEq)]
pub struct LiveChange {
    pub key: Key,
    pub live: Option<Json>,
    pub would_be: Option<Json>,
}

/// For `antiopa diff --live`: a dry-run apply, then per object the live
/// state and the dry-run result (pruned objects: would-be `None`).
/// Unchanged objects are left out.
pub async fn live_diff(
    cluster: &Cluster,
    objects: Vec<Object>,
    previous: Vec<Object>,
    opts: &ApplyOptions,
) -> Result<Vec<LiveChange>, ApplyError> {
    let mut o = opts.clone();
    o.dry_run = true;
    let plan = plan(cluster, objects, previous, &o).await?;
    let mut out = Vec::new();
    for p in &plan.objects {
        if p.outcome == Outcome::Unchanged {
            continue;
        }
        let would = p.would_be.clone().unwrap_or_else(|| p.object.body.clone());
        out.push(LiveChange {
            key: p.key(),
            live: p.live.clone(),
            would_be: Some(would),
        });
    }
    for c in &plan.prune {
        if c.keep || c.foreign.is_some() {
            continue;
        }
        let live = match cluster_get(cluster, &c.resolved, &c.object).await? {
            Some(l) => l,
            None => continue,
        };
        out.push(LiveChange {
            key: c.object.key(),
            live: Some(live),
            would_be: None,
        });
    }
    Ok(out)
}

async fn cluster_get(
    cluster: &Cluster,
    r: &Resolved,
    o: &Object,
) -> Result<Option<Json>, ApplyError> {
    let api = api_for(cluster, r, o.namespace.as_deref());
    match cluster.request(api.get(&o.name)).await {
        Ok(obj) => Ok(serde_json::to_value(&obj).ok()),
        Err(e) if is_not_found(&e) => Ok(None),
        Err(source) => Err(ApplyError::Api {
            step: "get",
            key: o.key().to_string(),
            source,
        }),
    }
}

/// An object as YAML for a diff: apiVersion/kind kept, server bookkeeping
/// (managedFields, resourceVersion, uid, creationTimestamp, generation) and
/// status dropped.
pub fn display_yaml(v: &Json) -> String {
    let mut v = v.clone();
    if let Some(o) = v.as_object_mut() {
        o.remove("status");
    }
    if let Some(m) = v.get_mut("metadata").and_then(|m| m.as_object_mut()) {
        for k in [
            "managedFields",
            "resourceVersion",
            "uid",
            "creationTimestamp",
            "generation",
        ] {
            m.remove(k);
        }
    }
    crate::yaml::to_yaml(&to_yaml(&v))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn timestamps_and_versions_do_not_count_as_changes() {
        let live = json!({"metadata": {"name": "a", "resourceVersion": "5", "managedFields": [{"manager": "antiopa", "time": "2026-01-01T00:00:00Z"}]}, "data": {"a": "1"}});
        let would = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "resourceVersion": "5", "managedFields": [{"manager": "antiopa", "time": "2026-01-02T00:00:00Z"}]}, "data": {"a": "1"}});
        assert!(same_object(&live, &would));
        let changed = json!({"metadata": {"name": "a", "resourceVersion": "5", "managedFields": [{"manager": "antiopa"}]}, "data": {"a": "2"}});
        assert!(!same_object(&live, &changed));
    }

    #[test]
    fn conflict_text_names_field_and_manager() {
        let key = Key {
            group: String::new(),
            kind: "ConfigMap".into(),
            namespace: "default".into(),
            name: "cm".into(),
        };
        let e = ApplyError::Conflicts(vec![Conflict {
            key,
            fields: vec!["conflict with \"kubectl-edit\" using v1: .data.a".into()],
        }]);
        assert_eq!(
            e.to_string(),
            "Apply failed with 1 conflict; nothing was changed (--force-conflicts takes these fields over):\n  ConfigMap default/cm: conflict with \"kubectl-edit\" using v1: .data.a"
        );
    }

    #[test]
    fn crd_defined_kinds_resolve_before_the_server_serves_them() {
        let crd = Object {
            api_version: "apiextensions.k8s.io/v1".into(),
            kind: "CustomResourceDefinition".into(),
            name: "widgets.example.com".into(),
            namespace: None,
            body: json!({"spec": {"group": "example.com", "scope": "Namespaced", "names": {"kind": "Widget", "plural": "widgets"}, "versions": [{"name": "v1"}]}}),
            source: "c/crds/w.yaml".into(),
        };
        let r = from_crds(&[&crd], "example.com/v1", "Widget").unwrap();
        assert!(r.namespaced);
        assert_eq!(r.resource.plural, "widgets");
        assert!(from_crds(&[&crd], "example.com/v2", "Widget").is_none());
    }
}

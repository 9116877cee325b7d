//! Kubernetes bindings, live: one watch per distinct (apiVersion, kind,
//! namespaces, label and field selectors) among the kubernetes bindings of
//! the global hooks and of the enabled modules' hooks, started when a
//! module is enabled (global hooks: at start) and stopped when no binding
//! uses it any more or the operator shuts down.
//!
//! Each watch keeps every binding's snapshot (`{object, filterResult}` per
//! object; the object only with `keepFullObjectsInMemory`, managedFields
//! always dropped) in the [`LiveSnapshots`] the session reads, so
//! Synchronization, `beforeHelm`/`afterHelm` and every other run see the
//! cluster. After the initial list, `Added`, `Modified` (only when the
//! filter result changed; without a jqFilter, when the object did) and
//! `Deleted` become `Event` binding contexts the operator runs the hook
//! with (`executeHookOnEvent` honoured). Objects are processed as they
//! arrive, page by page, and only what the bindings keep stays in memory;
//! the filter results and objects are shared (`Arc`) between a watch's
//! cache, the published snapshot and the contexts.
//!
//! Health. A watch lists, then watches from the list's resourceVersion
//! with bookmarks. It is restarted — listed again, the list compared with
//! the snapshot so the hooks get exactly the `Added`/`Modified`/`Deleted`
//! events they missed, never a frozen snapshot (shell-operator before
//! v1.20.2) — when its connection breaks, when the server sends an error,
//! and when a server that sends bookmarks goes silent for longer than the
//! liveness deadline ([`WatchOptions::liveness`]; a server that never sent
//! a bookmark is just watched again, cheaply, when that long passes). A
//! stream the server ends (its timeout) is watched again from where it
//! stood; `410 Expired` lists again. Each restart is logged once, with
//! the kind, the namespaces and why; every watch's state, age, last event,
//! relists and restarts are in [`Status::watches`].
//!
//! Kinds that come and go. A binding on a kind the server does not serve
//! (its CRD not installed yet) waits, shown as `WaitingForKind` (its
//! converge does not wait for it), and the watch starts as soon as the kind
//! is served: CustomResourceDefinitions are watched (metadata only) and
//! every CRD change looks the waiting kinds up again (for 10 s, every
//! second, as discovery may lag the Established condition), besides a
//! look every 30 s for kinds served otherwise. When a watched kind stops
//! being served (its CRD deleted), its objects are gone: each binding gets
//! `Deleted` for every object still in its snapshot — what shell-operator
//! users expect from objects that disappear, as the apiserver itself sends
//! when it deletes the custom resources with their CRD — the snapshot is
//! empty, and the watch waits for the kind again, quietly (no error loop);
//! when it comes back, its objects arrive as `Added`.
//!
//! Namespaces chosen by labels. A binding with `namespace.labelSelector`
//! is watched as shell-operator watches it: Namespaces are watched
//! (metadata only, the labels matched here, so a namespace losing them is
//! seen whatever the server sends), and the binding's kind is watched in
//! each namespace that matches — and is named by `namespace.nameSelector`
//! too, when both are given (the two narrow each other) — each such watch
//! with its own health entry beside the Namespaces watch's. Synchronization
//! waits for the namespaces listed and each one's objects, and carries the
//! objects of all of them (none matching: an empty snapshot). A namespace
//! that starts matching later brings its objects in as `Added`. One that
//! stops matching (its labels changed, or deleted) has its watch stopped
//! and its objects leave the snapshot as `Deleted` events — where
//! shell-operator only stops the informer and the snapshot shrinks at the
//! next run: a hook that keeps state per event would otherwise keep the
//! objects of a namespace it no longer watches (the same reasoning as for a
//! deleted CRD above).

use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, SystemTime};

use futures::StreamExt;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DynamicObject, ListParams, PartialObjectMeta, WatchEvent, WatchParams};
use kube::core::{ApiResource, GroupVersionKind, TypeMeta};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher;
use serde_json::Value;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::state::{Status, WatchHealth, WatchState};
use crate::cluster::{Cluster, split_api_version};
use crate::hooks::config::{KubernetesBinding, LabelSelector, WatchEvent as HookWatchEvent};
use crate::hooks::context::{KubeEvent, SnapshotObject};
use crate::hooks::{BindingContext, JqRunner};
use crate::module::{HookKey, KubeBindingRef, LiveSnapshots};

/// One binding's identity: its hook, its name and its whole config (a
/// changed config is another watch).
pub type BindingKey = (HookKey, String, String);

/// How watches tell a dead connection from a quiet one.
#[derive(Clone, Copy, Debug)]
pub struct WatchOptions {
    /// A watch whose server sends bookmarks and that received neither an
    /// event nor a bookmark for this long is dead: restarted. Real
    /// apiservers send a bookmark about every minute.
    pub liveness: Duration,
}

impl Default for WatchOptions {
    fn default() -> Self {
        WatchOptions {
            liveness: DEFAULT_LIVENESS,
        }
    }
}

/// Twice the watch cache's bookmark interval: one late bookmark is not a
/// dead watch.
pub const DEFAULT_LIVENESS: Duration = Duration::from_secs(120);

/// The watch requests' `timeoutSeconds` (kube-runtime's): the server ends
/// each stream after it, and the watch goes on from where it stood.
const WATCH_TIMEOUT_SECS: u32 = 290;

/// Objects per LIST page.
const PAGE_SIZE: u32 = 500;

/// Restarts in a row after which a watch shows as `Failed`.
const FAILED_AFTER: u32 = 5;

/// An event for a hook run.
#[derive(Debug)]
pub struct HookEvent {
    pub module: Option<String>,
    pub hook: String,
    pub binding: String,
    /// The binding's `queue`.
    pub queue: String,
    pub allow_failure: bool,
    pub context: BindingContext,
    key: BindingKey,
}

/// What the server is asked: bindings asking the same share one watch.
type WatchKey = String;

/// (namespace, name) of an object.
type ObjKey = (String, String);

/// Whether a binding has its initial list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sync {
    Pending,
    Synced,
    /// Its kind is not served: nothing to list, nothing to wait for.
    Waiting,
}

/// A binding on a watch.
#[derive(Clone)]
struct Sub {
    key: BindingKey,
    binding: KubeBindingRef,
    synced: Arc<watch::Sender<Sync>>,
    /// A `namespace.labelSelector` binding's watch of one namespace: its
    /// objects are that namespace's part of the binding's snapshot.
    part: Option<String>,
    /// A part for a namespace that started matching after the binding's
    /// synchronization: its objects arrive as `Added`.
    late: bool,
}

/// A watch task in force.
struct Running {
    token: CancellationToken,
    subs: watch::Sender<Vec<Sub>>,
}

/// The watches in force and the events they delivered.
pub struct KubeWatches {
    live: LiveSnapshots,
    /// Bindings in force, with their watch.
    bindings: BTreeMap<BindingKey, (WatchKey, Sub)>,
    watches: BTreeMap<WatchKey, Running>,
    tx: mpsc::UnboundedSender<HookEvent>,
    rx: mpsc::UnboundedReceiver<HookEvent>,
    status: Arc<RwLock<Status>>,
    options: WatchOptions,
    /// (apiVersion or "", kind as written, lowercased) → the served
    /// (apiVersion, plural): `ConfigMap`, `configmap`, `configmaps` and
    /// `cm` are one watch.
    kinds: HashMap<(String, String), (String, String)>,
    /// The CustomResourceDefinitions watch, while any watch runs: its
    /// counter moves on every CRD change.
    crds: Option<(CancellationToken, watch::Receiver<u64>)>,
    /// Watch health entries handed out (namespace selectors' watches
    /// take theirs too).
    ids: Arc<AtomicU64>,
}

impl KubeWatches {
    /// No watches yet; their health goes to `status`.
    pub fn new(status: Arc<RwLock<Status>>, options: WatchOptions) -> KubeWatches {
        let (tx, rx) = mpsc::unbounded_channel();
        KubeWatches {
            live: LiveSnapshots::default(),
            bindings: BTreeMap::new(),
            watches: BTreeMap::new(),
            tx,
            rx,
            status,
            options,
            kinds: HashMap::new(),
            crds: None,
            ids: Arc::new(AtomicU64::new(0)),
        }
    }

    /// The snapshots the watches keep, for the session.
    pub fn live(&self) -> LiveSnapshots {
        self.live.clone()
    }

    /// Bindings in force.
    pub fn len(&self) -> usize {
        self.bindings.len()
    }

    /// Watches in force (bindings asking the same share one).
    pub fn watches(&self) -> usize {
        self.watches.len()
    }

    /// Looks up, through discovery, the kinds of `bindings` not resolved
    /// yet, so that every spelling of one kind shares a watch. A kind not
    /// served (yet) keeps its spelling; its watch asks again.
    pub async fn resolve_kinds(&mut self, bindings: &[KubeBindingRef], cluster: &Cluster) {
        for b in bindings {
            let b = &b.binding;
            let key = kind_key(b);
            if self.kinds.contains_key(&key) {
                continue;
            }
            let found = match &b.api_version {
                Some(v) => resolve(cluster, v, &b.kind).await,
                None => resolve_any_group(cluster, &b.kind).await,
            };
            if let Ok(Some((r, _))) = found {
                self.kinds.insert(key, (r.api_version, r.plural));
            }
        }
    }

    /// Stops every watch and forgets every snapshot.
    pub fn clear(&mut self) {
        for r in self.watches.values() {
            r.token.cancel();
        }
        self.watches.clear();
        self.bindings.clear();
        if let Some((t, _)) = self.crds.take() {
            t.cancel();
        }
        self.live.write().unwrap_or_else(|p| p.into_inner()).clear();
    }

    /// Puts `bindings` in force: new ones start watching (joining a watch
    /// asking the server the same, which then lists again), gone ones stop
    /// (their snapshots dropped; a watch left with none ends). Returns the
    /// new ones.
    pub fn set(
        &mut self,
        bindings: Vec<KubeBindingRef>,
        cluster: &Cluster,
        jq: &JqRunner,
        shutdown: &CancellationToken,
    ) -> Vec<BindingKey> {
        let mut wanted: BTreeMap<BindingKey, KubeBindingRef> = BTreeMap::new();
        for b in bindings {
            let config = serde_json::to_string(&b.binding).unwrap_or_default();
            let key = (
                (b.module.clone(), b.hook.clone()),
                b.binding.name.clone(),
                config,
            );
            wanted.insert(key, b);
        }
        let gone: Vec<BindingKey> = self
            .bindings
            .keys()
            .filter(|k| !wanted.contains_key(*k))
            .cloned()
            .collect();
        for k in gone {
            self.bindings.remove(&k);
            let mut live = self.live.write().unwrap_or_else(|p| p.into_inner());
            if let Some(snaps) = live.get_mut(&k.0) {
                snaps.remove(&k.1);
                if snaps.is_empty() {
                    live.remove(&k.0);
                }
            }
        }
        let mut started = Vec::new();
        for (key, b) in wanted {
            if self.bindings.contains_key(&key) {
                continue;
            }
            started.push(key.clone());
            let (synced, _) = watch::channel(Sync::Pending);
            let sub = Sub {
                key: key.clone(),
                binding: b,
                synced: Arc::new(synced),
                part: None,
                late: false,
            };
            self.bindings
                .insert(key, (watch_key(&sub.binding.binding, &self.kinds), sub));
        }
        // Each watch's bindings.
        let mut subs: BTreeMap<WatchKey, Vec<Sub>> = BTreeMap::new();
        for (wk, sub) in self.bindings.values() {
            subs.entry(wk.clone()).or_default().push(sub.clone());
        }
        self.watches.retain(|wk, r| {
            let keep = subs.contains_key(wk);
            if !keep {
                r.token.cancel();
            }
            keep
        });
        if subs.is_empty() {
            if let Some((t, _)) = self.crds.take() {
                t.cancel();
            }
        } else if self.crds.is_none() {
            let token = shutdown.child_token();
            let rx = watch_crds(cluster, token.clone());
            self.crds = Some((token, rx));
        }
        for (wk, list) in subs {
            match self.watches.get(&wk) {
                Some(r) => {
                    r.subs.send_if_modified(|cur| {
                        let changed = cur.iter().map(|s| &s.key).ne(list.iter().map(|s| &s.key));
                        *cur = list;
                        changed
                    });
                }
                None => {
                    let token = shutdown.child_token();
                    let template = list[0].binding.binding.clone();
                    let (subs_tx, subs_rx) = watch::channel(list);
                    let shared = Shared {
                        jq: jq.clone(),
                        live: self.live.clone(),
                        tx: self.tx.clone(),
                    };
                    let crds = self.crds.as_ref().map(|(_, rx)| rx.clone());
                    if namespace_labels(&template).is_some() {
                        let task = NsSelected {
                            cluster: cluster.clone(),
                            shared,
                            template,
                            key: wk.clone(),
                            status: self.status.clone(),
                            ids: self.ids.clone(),
                            crds,
                            options: self.options,
                        };
                        tokio::spawn(task.run(subs_rx, token.clone()));
                    } else {
                        let id = self.ids.fetch_add(1, Ordering::Relaxed) + 1;
                        let health = Health::start(&self.status, id, &wk, &template);
                        let task = WatchTask {
                            cluster: cluster.clone(),
                            shared,
                            template,
                            health,
                            crds,
                            options: self.options,
                        };
                        tokio::spawn(task.run(subs_rx, token.clone()));
                    }
                    self.watches.insert(
                        wk,
                        Running {
                            token,
                            subs: subs_tx,
                        },
                    );
                }
            }
        }
        started
    }

    /// Waits until the bindings `keys` have their initial lists (or are
    /// found waiting for their kind), at most `limit`; returns the
    /// bindings still not synchronized.
    pub async fn wait_synced(&self, keys: &[BindingKey], limit: Duration) -> Vec<String> {
        let deadline = tokio::time::Instant::now() + limit;
        let mut late = Vec::new();
        for k in keys {
            let Some((_, sub)) = self.bindings.get(k) else {
                continue;
            };
            let mut rx = sub.synced.subscribe();
            let ok = tokio::time::timeout_at(deadline, rx.wait_for(|s| *s != Sync::Pending)).await;
            if !matches!(ok, Ok(Ok(_))) {
                late.push(format!("{}: {}", k.0.1, k.1));
            }
        }
        late
    }

    /// The next event of a binding in force.
    pub async fn recv(&mut self) -> HookEvent {
        loop {
            // The sender lives in `self`: the channel never closes.
            if let Some(ev) = self.rx.recv().await
                && self.bindings.contains_key(&ev.key)
            {
                return ev;
            }
        }
    }

    /// The events delivered and not taken yet, in order.
    pub fn take_ready(&mut self) -> Vec<HookEvent> {
        let mut out = Vec::new();
        while let Ok(ev) = self.rx.try_recv() {
            if self.bindings.contains_key(&ev.key) {
                out.push(ev);
            }
        }
        out
    }
}

/// Watches CustomResourceDefinitions (metadata only) until `token`: the
/// counter moves on every change, waking the watches waiting for a kind.
fn watch_crds(cluster: &Cluster, token: CancellationToken) -> watch::Receiver<u64> {
    let (tx, rx) = watch::channel(0u64);
    let api: Api<PartialObjectMeta<CustomResourceDefinition>> = Api::all(cluster.client().clone());
    tokio::spawn(async move {
        let mut stream = watcher::watcher(api, watcher::Config::default())
            .default_backoff()
            .boxed();
        loop {
            let ev = tokio::select! {
                _ = token.cancelled() => return,
                ev = stream.next() => ev,
            };
            match ev {
                None => return,
                Some(Ok(
                    watcher::Event::Apply(_) | watcher::Event::Delete(_) | watcher::Event::InitDone,
                )) => tx.send_modify(|n| *n += 1),
                Some(Ok(_)) => {}
                // Without it (no right to list CRDs, say) kinds are still
                // looked up every 30 s.
                Some(Err(e)) => tracing::debug!("watching CustomResourceDefinitions: {e}"),
            }
        }
    });
    rx
}

fn kind_key(b: &KubernetesBinding) -> (String, String) {
    (
        b.api_version.clone().unwrap_or_default(),
        b.kind.to_ascii_lowercase(),
    )
}

/// What a binding asks the server: apiVersion, kind (resolved through
/// `kinds` when known), namespaces, label and field selectors (the rest
/// is matched client-side per binding).
fn watch_key(
    b: &KubernetesBinding,
    kinds: &HashMap<(String, String), (String, String)>,
) -> WatchKey {
    let (api_version, kind) = match kinds.get(&kind_key(b)) {
        Some((v, plural)) => (v.clone(), plural.clone()),
        // No apiVersion looks in the core group first: the same watch as
        // `v1` for core kinds.
        None => (
            b.api_version.clone().unwrap_or_else(|| "v1".into()),
            b.kind.to_ascii_lowercase(),
        ),
    };
    serde_json::json!([
        api_version,
        kind,
        watched_namespaces(b),
        b.label_selector.as_ref().and_then(label_selector_string),
        field_selector_string(b),
        namespace_labels(b),
    ])
    .to_string()
}

/// The namespaces a binding names (`namespace.nameSelector`), sorted;
/// empty: all.
fn watched_namespaces(b: &KubernetesBinding) -> Vec<String> {
    let mut names = b
        .namespace
        .as_ref()
        .and_then(|n| n.name_selector.as_ref())
        .map(|n| n.match_names.clone())
        .unwrap_or_default();
    names.sort();
    names.dedup();
    names
}

/// A binding's `namespace.labelSelector`, when it has one.
fn namespace_labels(b: &KubernetesBinding) -> Option<&LabelSelector> {
    b.namespace.as_ref().and_then(|n| n.label_selector.as_ref())
}

/// One namespace's watch of a [`NsSelected`] binding.
struct Part {
    handle: tokio::task::JoinHandle<()>,
    subs: watch::Sender<Vec<Sub>>,
}

/// The bindings with a `namespace.labelSelector`, as shell-operator's
/// namespace informer: Namespaces are watched (metadata only) and the
/// bindings' kind is watched in each namespace matching the selector
/// (and the `nameSelector`, when both are given), each namespace's watch
/// a [`WatchTask`] of its own with its health entry.
struct NsSelected {
    cluster: Cluster,
    shared: Shared,
    template: KubernetesBinding,
    key: WatchKey,
    status: Arc<RwLock<Status>>,
    ids: Arc<AtomicU64>,
    crds: Option<watch::Receiver<u64>>,
    options: WatchOptions,
}

impl NsSelected {
    async fn run(self, mut subs: watch::Receiver<Vec<Sub>>, token: CancellationToken) {
        let selector = namespace_labels(&self.template)
            .cloned()
            .unwrap_or_default();
        let names = watched_namespaces(&self.template);
        let api: Api<PartialObjectMeta<Namespace>> = Api::all(self.cluster.client().clone());
        // The labels are matched here, not by the server: a namespace that
        // loses them is then seen as changed, whatever the server sends.
        let mut config = watcher::Config::default();
        if let [one] = names.as_slice() {
            config = config.fields(&format!("metadata.name={one}"));
        }
        let mut stream = watcher::watcher(api, config).default_backoff().boxed();
        // Its own health entry: which namespaces match (`objects`), and
        // its failures, even while no namespace matches.
        let id = self.ids.fetch_add(1, Ordering::Relaxed) + 1;
        let health = Health::start_as(
            &self.status,
            id,
            &format!("{} namespaces", self.key),
            "v1 Namespace".to_string(),
            names.clone(),
        );
        let mut failures = 0u32;
        let wanted = |o: &PartialObjectMeta<Namespace>| {
            let name = o.metadata.name.clone().unwrap_or_default();
            let labels = o.metadata.labels.clone().unwrap_or_default();
            let ok = (names.is_empty() || names.contains(&name))
                && crate::hooks::context::selector_matches(
                    &selector,
                    &labels.into_iter().collect(),
                );
            (name, ok)
        };
        let mut state = NsState::default();
        let mut listing: BTreeSet<String> = BTreeSet::new();
        loop {
            tokio::select! {
                _ = token.cancelled() => break,
                changed = subs.changed() => {
                    if changed.is_err() {
                        break;
                    }
                }
                ev = stream.next() => match ev {
                    None => break,
                    Some(Ok(watcher::Event::Init)) => {
                        listing.clear();
                        continue;
                    }
                    Some(Ok(watcher::Event::InitApply(o))) => {
                        if let (name, true) = wanted(&o) {
                            listing.insert(name);
                        }
                        continue;
                    }
                    Some(Ok(watcher::Event::InitDone)) => {
                        state.matching = Some(std::mem::take(&mut listing));
                    }
                    Some(Ok(watcher::Event::Apply(o))) => {
                        let (name, ok) = wanted(&o);
                        if let Some(m) = state.matching.as_mut() {
                            if ok {
                                m.insert(name);
                            } else {
                                m.remove(&name);
                            }
                        }
                    }
                    Some(Ok(watcher::Event::Delete(o))) => {
                        let (name, _) = wanted(&o);
                        if let Some(m) = state.matching.as_mut() {
                            m.remove(&name);
                        }
                    }
                    Some(Err(e)) => {
                        // kube-runtime's watcher lists and watches again,
                        // backing off.
                        failures += 1;
                        let why = format!("watching Namespaces: {e}");
                        tracing::warn!("kubernetes bindings: {why} (for a namespace.labelSelector; restart {failures} in a row)");
                        health.restarted(&why, failures);
                        continue;
                    }
                },
            }
            if failures > 0 {
                failures = 0;
                health.update(|w| w.state = WatchState::Synced);
            }
            let list = subs.borrow_and_update().clone();
            health.update(|w| {
                w.bindings = list.iter().map(|s| short(&s.binding)).collect();
                if let Some(m) = &state.matching {
                    w.state = WatchState::Synced;
                    w.objects = m.len();
                    w.last_event_at = Some(SystemTime::now());
                }
            });
            self.reconcile(&mut state, list, &token).await;
        }
        for (_, p) in std::mem::take(&mut state.parts) {
            p.handle.abort();
        }
    }

    /// Starts the watches of namespaces that match now, stops those of
    /// namespaces that no longer do (their objects leave the snapshots, as
    /// `Deleted`), and hands every watch the bindings in force.
    async fn reconcile(&self, state: &mut NsState, list: Vec<Sub>, token: &CancellationToken) {
        let Some(matching) = state.matching.clone() else {
            return;
        };
        state.synced.retain(|k| list.iter().any(|s| &s.key == k));
        let gone: Vec<String> = state
            .parts
            .keys()
            .filter(|ns| !matching.contains(*ns))
            .cloned()
            .collect();
        for ns in gone {
            let Some(part) = state.parts.remove(&ns) else {
                continue;
            };
            // Ended before its objects leave: it publishes nothing after.
            part.handle.abort();
            let _ = part.handle.await;
            tracing::info!(
                "kubernetes bindings: namespace {ns} no longer matches the namespace.labelSelector of {}: its objects leave the snapshots",
                part.subs
                    .borrow()
                    .iter()
                    .map(|s| short(&s.binding))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            for sub in part.subs.borrow().iter() {
                let removed: Vec<SnapshotObject> = {
                    let mut live = self.shared.live.write().unwrap_or_else(|p| p.into_inner());
                    let Some(all) = live
                        .get_mut(&sub.key.0)
                        .and_then(|s| s.get_mut(&sub.binding.binding.name))
                    else {
                        continue;
                    };
                    let (out, keep) = std::mem::take(all)
                        .into_iter()
                        .partition(|o| o.namespace == ns);
                    *all = keep;
                    out
                };
                for item in removed {
                    send_event(&self.shared, sub, HookWatchEvent::Deleted, item);
                }
            }
        }
        for ns in &matching {
            let old: Vec<Sub> = state
                .parts
                .get(ns)
                .map(|p| p.subs.borrow().clone())
                .unwrap_or_default();
            let parts: Vec<Sub> = list
                .iter()
                .map(|s| match old.iter().find(|o| o.key == s.key) {
                    Some(o) => o.clone(),
                    None => Sub {
                        key: s.key.clone(),
                        binding: s.binding.clone(),
                        synced: Arc::new(watch::channel(Sync::Pending).0),
                        part: Some(ns.clone()),
                        late: state.synced.contains(&s.key),
                    },
                })
                .collect();
            match state.parts.get(ns) {
                Some(p) => {
                    p.subs.send_if_modified(|cur| {
                        let changed = cur.iter().map(|s| &s.key).ne(parts.iter().map(|s| &s.key));
                        *cur = parts;
                        changed
                    });
                }
                None => {
                    let mut template = self.template.clone();
                    if let Some(n) = template.namespace.as_mut() {
                        n.label_selector = None;
                        n.name_selector = Some(crate::hooks::config::NameSelector {
                            match_names: vec![ns.clone()],
                        });
                    }
                    let id = self.ids.fetch_add(1, Ordering::Relaxed) + 1;
                    let key = format!("{} namespace {ns}", self.key);
                    let health = Health::start(&self.status, id, &key, &template);
                    let task = WatchTask {
                        cluster: self.cluster.clone(),
                        shared: Shared {
                            jq: self.shared.jq.clone(),
                            live: self.shared.live.clone(),
                            tx: self.shared.tx.clone(),
                        },
                        template,
                        health,
                        crds: self.crds.clone(),
                        options: self.options,
                    };
                    let (subs_tx, subs_rx) = watch::channel(parts);
                    let handle = tokio::spawn(task.run(subs_rx, token.child_token()));
                    state.parts.insert(
                        ns.clone(),
                        Part {
                            handle,
                            subs: subs_tx,
                        },
                    );
                }
            }
        }
        // A binding is synchronized once each namespace matching when it
        // came has its initial list; namespaces matching later are `late`.
        for sub in list {
            if !state.synced.insert(sub.key.clone()) {
                continue;
            }
            let waits: Vec<watch::Receiver<Sync>> = state
                .parts
                .values()
                .filter_map(|p| {
                    p.subs
                        .borrow()
                        .iter()
                        .find(|s| s.key == sub.key)
                        .map(|s| s.synced.subscribe())
                })
                .collect();
            let live = self.shared.live.clone();
            let token = token.clone();
            tokio::spawn(async move {
                for mut rx in waits {
                    // Its sender gone: that namespace's watch stopped (it
                    // no longer matches), or this whole watch did.
                    if rx.wait_for(|s| *s != Sync::Pending).await.is_err() && token.is_cancelled() {
                        return;
                    }
                }
                // No namespace matching: an empty snapshot, still one.
                live.write()
                    .unwrap_or_else(|p| p.into_inner())
                    .entry(sub.key.0.clone())
                    .or_default()
                    .entry(sub.binding.binding.name.clone())
                    .or_default();
                sub.synced.send_replace(Sync::Synced);
            });
        }
    }
}

/// What a [`NsSelected`] knows.
#[derive(Default)]
struct NsState {
    /// The namespaces matching; `None` until they are listed.
    matching: Option<BTreeSet<String>>,
    parts: BTreeMap<String, Part>,
    /// Bindings past their synchronization.
    synced: HashSet<BindingKey>,
}

/// A watch's entry in [`Status::watches`], removed when the task ends.
struct Health {
    status: Arc<RwLock<Status>>,
    id: u64,
}

impl Health {
    fn start(status: &Arc<RwLock<Status>>, id: u64, key: &str, b: &KubernetesBinding) -> Health {
        let kind = match &b.api_version {
            Some(v) => format!("{v} {}", b.kind),
            None => b.kind.clone(),
        };
        Health::start_as(status, id, key, kind, watched_namespaces(b))
    }

    fn start_as(
        status: &Arc<RwLock<Status>>,
        id: u64,
        key: &str,
        kind: String,
        namespaces: Vec<String>,
    ) -> Health {
        let mut st = status.write().unwrap_or_else(|p| p.into_inner());
        st.watches.push(WatchHealth {
            id,
            key: key.to_string(),
            kind,
            namespaces,
            bindings: Vec::new(),
            state: WatchState::Starting,
            started_at: SystemTime::now(),
            last_event_at: None,
            objects: 0,
            relists: 0,
            restarts: 0,
            last_error: None,
        });
        st.watches
            .sort_by(|a, b| a.key.cmp(&b.key).then(a.id.cmp(&b.id)));
        Health {
            status: status.clone(),
            id,
        }
    }

    fn update(&self, f: impl FnOnce(&mut WatchHealth)) {
        self.with_status(|_, w| f(w));
    }

    fn with_status(&self, f: impl FnOnce(&mut Counters<'_>, &mut WatchHealth)) {
        let mut st = self.status.write().unwrap_or_else(|p| p.into_inner());
        let st = &mut *st;
        if let Some(w) = st.watches.iter_mut().find(|w| w.id == self.id) {
            let mut c = Counters {
                restarts: &mut st.watch_restarts_total,
                relists: &mut st.watch_relists_total,
            };
            f(&mut c, w);
        }
        st.watches_dead = st
            .watches
            .iter()
            .filter(|w| matches!(w.state, WatchState::Restarting | WatchState::Failed))
            .count() as u64;
    }

    fn relisted(&self) {
        self.with_status(|c, w| {
            *c.relists += 1;
            w.relists += 1;
        });
    }

    fn restarted(&self, why: &str, failures: u32) {
        self.with_status(|c, w| {
            *c.restarts += 1;
            w.restarts += 1;
            w.state = if failures >= FAILED_AFTER {
                WatchState::Failed
            } else {
                WatchState::Restarting
            };
            w.last_error = Some(why.to_string());
        });
    }
}

/// The operator-wide counters, beside one watch's entry.
struct Counters<'a> {
    restarts: &'a mut u64,
    relists: &'a mut u64,
}

impl Drop for Health {
    fn drop(&mut self) {
        let mut st = self.status.write().unwrap_or_else(|p| p.into_inner());
        st.watches.retain(|w| w.id != self.id);
        st.watches_dead = st
            .watches
            .iter()
            .filter(|w| matches!(w.state, WatchState::Restarting | WatchState::Failed))
            .count() as u64;
    }
}

/// A kept object: its snapshot entry and the checksum compared for
/// `Modified`.
struct Kept {
    item: SnapshotObject,
    checksum: u64,
}

/// What every binding of a watch task uses.
struct Shared {
    jq: JqRunner,
    live: LiveSnapshots,
    tx: mpsc::UnboundedSender<HookEvent>,
}

/// One watch, shared by the bindings asking the server the same.
struct WatchTask {
    cluster: Cluster,
    shared: Shared,
    /// The first binding: what the server is asked.
    template: KubernetesBinding,
    health: Health,
    /// Moves on every CRD change (`None`: not watched).
    crds: Option<watch::Receiver<u64>>,
    options: WatchOptions,
}

/// One binding on a watch: its matcher and snapshot.
struct SubState {
    sub: Sub,
    /// The binding with the resolved kind, matching client-side.
    matcher: KubernetesBinding,
    kept: BTreeMap<ObjKey, Kept>,
    synced: bool,
}

impl SubState {
    fn new(sub: Sub, kind: &str) -> SubState {
        let mut matcher = sub.binding.binding.clone();
        matcher.kind = kind.to_string();
        matcher.api_version = None;
        // A namespace.labelSelector binding's parts watch only namespaces
        // that match it (chosen by [`NsSelected`]).
        if let Some(n) = matcher.namespace.as_mut() {
            n.label_selector = None;
        }
        SubState {
            synced: sub.late,
            sub,
            matcher,
            kept: BTreeMap::new(),
        }
    }
}

/// How a watch stream stopped.
enum Stopped {
    /// A binding joined: it needs its own initial list.
    Joined,
    /// The server ended it at its timeout.
    Ended,
    /// Nothing for longer than the liveness deadline.
    Silent,
    /// The connection broke or the server sent an error.
    Broken(String),
    /// `410 Expired`: list again.
    Expired,
    /// The kind is no longer served.
    Gone,
}

/// Waits `d`, or returns false when `token` fires first.
async fn pause(d: Duration, token: &CancellationToken) -> bool {
    if d.is_zero() {
        return !token.is_cancelled();
    }
    tokio::select! {
        _ = token.cancelled() => false,
        _ = tokio::time::sleep(d) => true,
    }
}

/// The wait before the `n`th restart in a row: none for the first, then
/// 1 s doubling to 30 s.
fn backoff(n: u32) -> Duration {
    match n {
        0 | 1 => Duration::ZERO,
        n => Duration::from_secs(1u64 << (n - 2).min(5)).min(Duration::from_secs(30)),
    }
}

impl WatchTask {
    async fn run(mut self, mut subs: watch::Receiver<Vec<Sub>>, token: CancellationToken) {
        let b = self.template.clone();
        let what = format!(
            "{} {}",
            b.api_version.as_deref().unwrap_or("(any group)"),
            b.kind
        );
        let names = watched_namespaces(&b);
        let place = if names.is_empty() {
            "all namespaces".to_string()
        } else {
            format!("namespace {}", names.join(","))
        };
        let mut wp = WatchParams::default().timeout(WATCH_TIMEOUT_SECS);
        let mut lp = ListParams::default().limit(PAGE_SIZE);
        if let Some(l) = b.label_selector.as_ref().and_then(label_selector_string) {
            wp = wp.labels(&l);
            lp = lp.labels(&l);
        }
        if let Some(f) = field_selector_string(&b) {
            wp = wp.fields(&f);
            lp = lp.fields(&f);
        }
        let mut states: Vec<SubState> = Vec::new();
        let mut listed_once = false;
        let mut failures = 0u32;
        let mut was_gone = false;
        'kind: loop {
            let Some((resource, namespaced)) = self
                .resolve_waiting(&what, &mut states, &mut subs, &token, was_gone)
                .await
            else {
                return;
            };
            for st in &mut states {
                st.matcher.kind = resource.kind.clone();
            }
            self.health.update(|w| {
                w.kind = format!("{} {}", resource.api_version, resource.kind);
                w.last_error = None;
            });
            let client = self.cluster.client().clone();
            let api: Api<DynamicObject> = match (namespaced, names.as_slice()) {
                (true, [one]) => Api::namespaced_with(client, one, &resource),
                _ => Api::all_with(client, &resource),
            };
            let watching = format!("{} {} in {place}", resource.api_version, resource.plural);
            let mut rv: Option<String> = None;
            let mut bookmarks_seen = false;
            loop {
                // (Re)list when there is no resourceVersion to go on from.
                let from = match rv.take() {
                    Some(v) => v,
                    None => {
                        adopt(&mut states, &subs.borrow_and_update(), &resource.kind);
                        self.set_bindings(&states);
                        tracing::info!(
                            bindings = states.len(),
                            "kubernetes bindings: watching {watching}"
                        );
                        match self.list(&api, &lp, &resource, &mut states).await {
                            Ok(v) => {
                                if listed_once {
                                    self.health.relisted();
                                }
                                listed_once = true;
                                v
                            }
                            Err(e) if crate::cluster::is_not_found(&e) => {
                                self.kind_gone(&what, &mut states);
                                was_gone = true;
                                continue 'kind;
                            }
                            Err(e) => {
                                failures += 1;
                                let why = format!("listing: {}", crate::cluster::error_text(&e));
                                self.restart(&watching, &why, failures);
                                if !pause(backoff(failures), &token).await {
                                    return;
                                }
                                continue;
                            }
                        }
                    }
                };
                let stream = self.cluster.request(api.watch(&wp, &from)).await;
                let mut stream = match stream {
                    Ok(s) => s.boxed(),
                    Err(e) if crate::cluster::is_not_found(&e) => {
                        self.kind_gone(&what, &mut states);
                        was_gone = true;
                        continue 'kind;
                    }
                    Err(e) if crate::cluster::api_status(&e) == Some(410) => {
                        tracing::info!(
                            "kubernetes bindings: {watching}: resourceVersion {from} too old (410 Expired): listing again"
                        );
                        continue;
                    }
                    Err(e) => {
                        failures += 1;
                        let why = format!("watching: {}", crate::cluster::error_text(&e));
                        self.restart(&watching, &why, failures);
                        if !pause(backoff(failures), &token).await {
                            return;
                        }
                        continue;
                    }
                };
                let opened = Instant::now();
                let mut last = Instant::now();
                let mut delivered = false;
                let mut at = from;
                let stopped = loop {
                    let ev = tokio::select! {
                        _ = token.cancelled() => return,
                        changed = subs.changed() => {
                            if changed.is_err() {
                                return;
                            }
                            let list = subs.borrow().clone();
                            if list.iter().any(|n| !states.iter().any(|s| s.sub.key == n.key)) {
                                break Stopped::Joined;
                            }
                            subs.borrow_and_update();
                            states.retain(|s| list.iter().any(|n| n.key == s.sub.key));
                            self.set_bindings(&states);
                            continue;
                        }
                        _ = tokio::time::sleep_until(last + self.options.liveness) => break Stopped::Silent,
                        ev = stream.next() => ev,
                    };
                    last = Instant::now();
                    let ev = match ev {
                        // kube-client reads a connection cut mid-stream
                        // (no final chunk) as the stream's end: an end
                        // before the watch's timeout is a broken one.
                        None if opened.elapsed() + Duration::from_secs(5)
                            < Duration::from_secs(WATCH_TIMEOUT_SECS.into()) =>
                        {
                            break Stopped::Broken(format!(
                                "the connection ended after {:.1}s, before the watch's {WATCH_TIMEOUT_SECS}s timeout",
                                opened.elapsed().as_secs_f64()
                            ));
                        }
                        None => break Stopped::Ended,
                        Some(Err(e)) => {
                            break Stopped::Broken(format!("the connection broke: {e}"));
                        }
                        Some(Ok(ev)) => ev,
                    };
                    if !delivered {
                        delivered = true;
                        failures = 0;
                    }
                    match ev {
                        WatchEvent::Added(o) | WatchEvent::Modified(o) => {
                            if let Some(v) = o.metadata.resource_version.clone() {
                                at = v;
                            }
                            self.applied(&mut states, o, &resource);
                        }
                        WatchEvent::Deleted(o) => {
                            if let Some(v) = o.metadata.resource_version.clone() {
                                at = v;
                            }
                            self.deleted(&mut states, o, &resource);
                        }
                        WatchEvent::Bookmark(bm) => {
                            at = bm.metadata.resource_version;
                            bookmarks_seen = true;
                        }
                        WatchEvent::Error(s) if s.code == 410 => break Stopped::Expired,
                        WatchEvent::Error(s) if s.code == 404 => break Stopped::Gone,
                        WatchEvent::Error(s) => {
                            break Stopped::Broken(format!(
                                "the server sent an error: {} {}",
                                s.code, s.message
                            ));
                        }
                    }
                    let n = states.iter().map(|s| s.kept.len()).max().unwrap_or(0);
                    self.health.update(|w| {
                        w.last_event_at = Some(SystemTime::now());
                        w.objects = n;
                    });
                };
                match stopped {
                    Stopped::Joined => {}
                    Stopped::Ended => {
                        tracing::debug!(
                            "kubernetes bindings: {watching}: the server ended the watch; watching on from {at}"
                        );
                        rv = Some(at);
                    }
                    Stopped::Silent if !bookmarks_seen => {
                        // A server that sends no bookmarks: quiet is not
                        // dead. Watch again from where it stood.
                        tracing::debug!(
                            "kubernetes bindings: {watching}: quiet for {}s; watching again",
                            self.options.liveness.as_secs()
                        );
                        rv = Some(at);
                    }
                    Stopped::Expired => {
                        tracing::info!(
                            "kubernetes bindings: {watching}: resourceVersion too old (410 Expired): listing again"
                        );
                    }
                    Stopped::Gone => {
                        self.kind_gone(&what, &mut states);
                        was_gone = true;
                        continue 'kind;
                    }
                    // A CRD deleted ends its watches: not a failure.
                    _ if matches!(
                        resolve(&self.cluster, &resource.api_version, &resource.kind).await,
                        Ok(None)
                    ) =>
                    {
                        self.kind_gone(&what, &mut states);
                        was_gone = true;
                        continue 'kind;
                    }
                    other => {
                        failures += 1;
                        let why = match other {
                            Stopped::Silent => format!(
                                "no event nor bookmark for {}s",
                                self.options.liveness.as_secs_f64()
                            ),
                            Stopped::Broken(e) => e,
                            _ => "stopped".to_string(),
                        };
                        self.restart(&watching, &why, failures);
                        if !pause(backoff(failures), &token).await {
                            return;
                        }
                    }
                }
            }
        }
    }

    /// Looks the kind up until it is served (after each CRD change, else
    /// every 30 s); meanwhile the watch shows as waiting and its bindings
    /// count as synchronized with nothing. `None` when cancelled.
    async fn resolve_waiting(
        &mut self,
        what: &str,
        states: &mut Vec<SubState>,
        subs: &mut watch::Receiver<Vec<Sub>>,
        token: &CancellationToken,
        was_gone: bool,
    ) -> Option<(ApiResource, bool)> {
        let b = self.template.clone();
        let mut told = was_gone;
        let mut fast_until: Option<Instant> = None;
        let mut failing: Option<String> = None;
        loop {
            let found = match &b.api_version {
                Some(v) => resolve(&self.cluster, v, &b.kind).await,
                None => resolve_any_group(&self.cluster, &b.kind).await,
            };
            match found {
                Ok(Some(r)) => {
                    if told {
                        tracing::info!("kubernetes bindings: {what} is served now: starting");
                    }
                    return Some(r);
                }
                Ok(None) => {
                    failing = None;
                    if !told {
                        tracing::warn!(
                            "kubernetes bindings: {what} is not served (its CRD not installed?): waiting for it"
                        );
                        told = true;
                    }
                    adopt(states, &subs.borrow_and_update(), &b.kind);
                    self.set_bindings(states);
                    self.waiting(what, states);
                }
                Err(e) => {
                    let text = crate::cluster::error_text(&e);
                    // Logged when it changes, not on every attempt.
                    if failing.as_deref() != Some(text.as_str()) {
                        tracing::warn!(
                            "kubernetes bindings: resolving {what}: {text}; asking again"
                        );
                        self.health
                            .update(|w| w.last_error = Some(format!("resolving the kind: {text}")));
                        failing = Some(text);
                    }
                }
            }
            let delay = Duration::from_secs(if fast_until.is_some_and(|t| Instant::now() < t) {
                1
            } else if failing.is_some() {
                5
            } else {
                30
            });
            let crds_alive = self.crds.is_some();
            tokio::select! {
                _ = token.cancelled() => return None,
                _ = tokio::time::sleep(delay) => {}
                changed = async {
                    match self.crds.as_mut() {
                        Some(rx) => rx.changed().await.is_ok(),
                        None => std::future::pending().await,
                    }
                }, if crds_alive => {
                    if changed {
                        fast_until = Some(Instant::now() + Duration::from_secs(10));
                    } else {
                        self.crds = None;
                    }
                }
                changed = subs.changed() => {
                    if changed.is_err() {
                        return None;
                    }
                }
            }
        }
    }

    /// The kind is not served: every binding counts as synchronized with
    /// an empty snapshot, so its objects arrive as `Added` once it is.
    fn waiting(&self, what: &str, states: &mut [SubState]) {
        for st in states.iter_mut() {
            if !st.synced {
                st.synced = true;
                st.publish(&self.shared);
                st.sub.synced.send_replace(Sync::Waiting);
            }
        }
        self.health.update(|w| {
            w.state = WatchState::WaitingForKind;
            w.last_error = Some(format!("waiting for kind {what}: not served"));
            w.objects = 0;
        });
    }

    /// The kind stopped being served: its objects are gone.
    fn kind_gone(&self, what: &str, states: &mut [SubState]) {
        let n: usize = states.iter().map(|s| s.kept.len()).max().unwrap_or(0);
        tracing::warn!(
            "kubernetes bindings: {what} is no longer served (its CRD deleted?): {n} objects gone; waiting for it to come back"
        );
        for st in states.iter_mut().filter(|s| s.synced) {
            let kept = std::mem::take(&mut st.kept);
            st.publish(&self.shared);
            for (_, old) in kept {
                st.event(&self.shared, HookWatchEvent::Deleted, old.item);
            }
        }
    }

    fn restart(&self, watching: &str, why: &str, failures: u32) {
        tracing::warn!(
            "kubernetes bindings: watch of {watching} stopped delivering: {why}; listing and watching again (restart {failures} in a row)"
        );
        self.health.restarted(why, failures);
    }

    fn set_bindings(&self, states: &[SubState]) {
        let names: Vec<String> = states.iter().map(|s| short(&s.sub.binding)).collect();
        self.health.update(|w| w.bindings = names);
    }

    /// Lists page by page, each object filtered at once (only what the
    /// bindings keep stays; an unchanged object's new entry is dropped at
    /// once, so a relist holds the snapshot once, plus what changed), then
    /// hands each binding its list: the snapshot at first, what changed as
    /// events after. Returns the list's resourceVersion.
    async fn list(
        &self,
        api: &Api<DynamicObject>,
        lp: &ListParams,
        resource: &ApiResource,
        states: &mut [SubState],
    ) -> Result<String, kube::Error> {
        let mut lists: Vec<Listing> = states.iter().map(|_| Listing::default()).collect();
        let mut lp = lp.clone();
        let mut rv: Option<String> = None;
        loop {
            let page = self.cluster.request(api.list(&lp)).await?;
            if rv.is_none() {
                rv = page.metadata.resource_version.clone();
            }
            for o in page.items {
                let value = object_value(o, resource);
                for (st, l) in states.iter().zip(lists.iter_mut()) {
                    if let Some((k, kept)) = st.item(&self.shared, &value) {
                        l.take(st, k, kept);
                    }
                }
            }
            match page.metadata.continue_ {
                Some(c) if !c.is_empty() => lp.continue_token = Some(c),
                _ => break,
            }
        }
        let n = states
            .iter()
            .zip(&lists)
            .map(|(st, l)| {
                if st.synced {
                    l.seen.len()
                } else {
                    l.changed.len()
                }
            })
            .max()
            .unwrap_or(0);
        // Before the bindings hear of it: who waits for them sees it.
        // `last_error` stays: why it last stopped.
        self.health.update(|w| {
            w.state = WatchState::Synced;
            w.objects = n;
        });
        for (st, l) in states.iter_mut().zip(lists) {
            st.listed(&self.shared, l);
        }
        Ok(rv.unwrap_or_default())
    }

    fn applied(&self, states: &mut [SubState], o: DynamicObject, resource: &ApiResource) {
        let value = object_value(o, resource);
        for st in states.iter_mut().filter(|s| s.synced) {
            if let Some((k, item)) = st.item(&self.shared, &value) {
                st.apply(&self.shared, k, item);
            } else if let Some(k) = key_of(&value)
                && let Some(old) = st.kept.remove(&k)
            {
                // No longer matching (client-side): gone.
                st.publish(&self.shared);
                st.event(&self.shared, HookWatchEvent::Deleted, old.item);
            }
        }
    }

    fn deleted(&self, states: &mut [SubState], o: DynamicObject, resource: &ApiResource) {
        let value = object_value(o, resource);
        let Some(k) = key_of(&value) else { return };
        for st in states.iter_mut().filter(|s| s.synced) {
            if let Some(old) = st.kept.remove(&k) {
                st.publish(&self.shared);
                // The object as deleted, when the binding still takes it.
                let item = st
                    .item(&self.shared, &value)
                    .map(|(_, k)| k.item)
                    .unwrap_or(old.item);
                st.event(&self.shared, HookWatchEvent::Deleted, item);
            }
        }
    }
}

/// One binding's side of a (re)list in progress.
#[derive(Default)]
struct Listing {
    /// Objects listed.
    seen: std::collections::HashSet<ObjKey>,
    /// A relist: the objects new or changed (their checksum); the initial
    /// list: every object.
    changed: Vec<(ObjKey, Kept)>,
    /// A relist: kept objects that changed where the filter does not
    /// look, replaced quietly.
    fresher: Vec<(ObjKey, Kept)>,
}

impl Listing {
    fn take(&mut self, st: &SubState, k: ObjKey, new: Kept) {
        if !st.synced {
            self.changed.push((k, new));
            return;
        }
        // Applied only once the whole list is in: a list that fails
        // half-way leaves the snapshot and its events as they were.
        match st.kept.get(&k) {
            Some(old) if old.checksum == new.checksum => {
                if old.item.object != new.item.object {
                    self.fresher.push((k.clone(), new));
                }
            }
            _ => self.changed.push((k.clone(), new)),
        }
        self.seen.insert(k);
    }
}

/// Makes `states` the bindings of `list`: gone ones dropped, new ones
/// added (not synchronized yet).
fn adopt(states: &mut Vec<SubState>, list: &[Sub], kind: &str) {
    states.retain(|s| list.iter().any(|n| n.key == s.sub.key));
    for sub in list {
        if !states.iter().any(|s| s.sub.key == sub.key) {
            states.push(SubState::new(sub.clone(), kind));
        }
    }
}

/// An object as bindings see it: apiVersion and kind set (list items come
/// without), managedFields dropped.
fn object_value(mut o: DynamicObject, resource: &ApiResource) -> Value {
    o.metadata.managed_fields = None;
    o.types = Some(TypeMeta {
        api_version: resource.api_version.clone(),
        kind: resource.kind.clone(),
    });
    serde_json::to_value(&o).unwrap_or(Value::Null)
}

/// (namespace, name) of an object.
fn key_of(o: &Value) -> Option<ObjKey> {
    let meta = |k: &str| {
        o.pointer(&format!("/metadata/{k}"))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    Some((meta("namespace").unwrap_or_default(), meta("name")?))
}

fn who(b: &KubeBindingRef) -> String {
    match &b.module {
        Some(m) => format!(
            "module '{m}': hook '{}': binding '{}'",
            b.hook, b.binding.name
        ),
        None => format!("hook '{}': binding '{}'", b.hook, b.binding.name),
    }
}

/// `module/hook: binding` (`hook: binding` for a global hook).
fn short(b: &KubeBindingRef) -> String {
    match &b.module {
        Some(m) => format!("{m}/{}: {}", b.hook, b.binding.name),
        None => format!("{}: {}", b.hook, b.binding.name),
    }
}

impl SubState {
    /// The initial list (or a relist): the snapshot at first, then what
    /// changed meanwhile as events.
    fn listed(&mut self, sh: &Shared, list: Listing) {
        if !self.synced {
            self.kept = list.changed.into_iter().collect();
            self.publish(sh);
            self.synced = true;
            self.sub.synced.send_replace(Sync::Synced);
            tracing::info!(
                "{}: synchronized, {} objects",
                who(&self.sub.binding),
                self.kept.len()
            );
            return;
        }
        // The differences, applied at once and published once (the
        // contexts carry the snapshot as it is after the relist, as
        // shell-operator's carry it as it is when the hook runs).
        let mut events = Vec::new();
        let gone: Vec<ObjKey> = self
            .kept
            .keys()
            .filter(|k| !list.seen.contains(*k))
            .cloned()
            .collect();
        for k in gone {
            if let Some(old) = self.kept.remove(&k) {
                events.push((HookWatchEvent::Deleted, old.item));
            }
        }
        self.kept.extend(list.fresher);
        for (k, item) in list.changed {
            let ev = if self.kept.contains_key(&k) {
                HookWatchEvent::Modified
            } else {
                HookWatchEvent::Added
            };
            events.push((ev, item.item.clone()));
            self.kept.insert(k, item);
        }
        self.publish(sh);
        for (ev, item) in events {
            self.event(sh, ev, item);
        }
        self.sub.synced.send_replace(Sync::Synced);
    }

    /// An object as this binding keeps it; `None` when it does not match
    /// or its jqFilter fails (logged).
    fn item(&self, sh: &Shared, value: &Value) -> Option<(ObjKey, Kept)> {
        if !self.matcher.matches(value, &|_| None) {
            return None;
        }
        let b = &self.sub.binding.binding;
        // Built with the whole object, for the checksum below.
        let mut full = b.clone();
        full.keep_full_objects_in_memory = true;
        // The jqFilter may run in the jq worker process: a blocking call,
        // so this runtime thread hands its other tasks over meanwhile.
        let item =
            match tokio::task::block_in_place(|| SnapshotObject::new(&full, value.clone(), &sh.jq))
            {
                Ok(i) => i,
                Err(e) => {
                    tracing::error!("{}: {e}", who(&self.sub.binding));
                    return None;
                }
            };
        let checksum = match &b.jq_filter {
            Some(_) => checksum(item.filter_result.as_deref()),
            None => checksum(item.object.as_deref()),
        };
        // As shell-operator's informer: the checksum is of the whole
        // object, then `keepFullObjectsInMemory: false` drops it from the
        // cache and from the event it fires alike.
        let mut item = item;
        if !b.keep_full_objects_in_memory {
            item.object = None;
        }
        Some((
            (item.namespace.clone(), item.name.clone()),
            Kept { item, checksum },
        ))
    }

    /// A listed or applied object: `Added`, `Modified` when its checksum
    /// changed, nothing otherwise.
    fn apply(&mut self, sh: &Shared, k: ObjKey, new: Kept) {
        let ev = match self.kept.get(&k) {
            None => HookWatchEvent::Added,
            Some(old) if old.checksum != new.checksum => HookWatchEvent::Modified,
            Some(_) => {
                // Same filter result: keep the fresher object quietly.
                self.kept.insert(k, new);
                self.publish(sh);
                return;
            }
        };
        let item = new.item.clone();
        self.kept.insert(k, new);
        self.publish(sh);
        self.event(sh, ev, item);
    }

    /// Writes the snapshot where the session reads it: the kept entries
    /// themselves (shared, in namespace and name order), not copies.
    fn publish(&self, sh: &Shared) {
        let items = self.kept.values().map(|k| k.item.clone());
        let mut live = sh.live.write().unwrap_or_else(|p| p.into_inner());
        let snaps = live.entry(self.sub.key.0.clone()).or_default();
        let name = self.sub.binding.binding.name.clone();
        match &self.sub.part {
            None => {
                snaps.insert(name, items.collect());
            }
            // One namespace's part: the others' objects stay.
            Some(ns) => {
                let all = snaps.entry(name).or_default();
                all.retain(|o| &o.namespace != ns);
                all.extend(items);
                all.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
            }
        }
    }

    /// Sends an `Event` context when the binding runs on it.
    fn event(&self, sh: &Shared, ev: HookWatchEvent, item: SnapshotObject) {
        send_event(sh, &self.sub, ev, item);
    }
}

/// Sends `sub`'s `Event` context when the binding runs on it.
fn send_event(sh: &Shared, sub: &Sub, ev: HookWatchEvent, item: SnapshotObject) {
    let b = &sub.binding.binding;
    if !b.execute_hook_on_event.contains(&ev) {
        return;
    }
    let all = sh
        .live
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .get(&sub.key.0)
        .cloned()
        .unwrap_or_default();
    let context = BindingContext::kubernetes(
        b,
        KubeEvent::Event {
            watch_event: ev,
            object: Some(item),
        },
        &all,
    );
    let _ = sh.tx.send(HookEvent {
        module: sub.binding.module.clone(),
        hook: sub.binding.hook.clone(),
        binding: b.name.clone(),
        queue: b.queue.clone(),
        allow_failure: b.allow_failure,
        context,
        key: sub.key.clone(),
    });
}

fn checksum(v: Option<&Value>) -> u64 {
    let mut h = DefaultHasher::new();
    serde_json::to_string(&v).unwrap_or_default().hash(&mut h);
    h.finish()
}

/// `kind` (any case, plural or short name) of `api_version` to its
/// resource and scope; `None` when the server does not serve it.
/// [`resolve`] in the core group, then in each API group's preferred
/// version, as shell-operator looks a kind up when a binding names no
/// apiVersion.
async fn resolve_any_group(
    cluster: &Cluster,
    kind: &str,
) -> Result<Option<(ApiResource, bool)>, kube::Error> {
    if let Some(found) = resolve(cluster, "v1", kind).await? {
        return Ok(Some(found));
    }
    let groups = cluster.request(cluster.client().list_api_groups()).await?;
    for g in groups.groups {
        let Some(version) = g
            .preferred_version
            .or_else(|| g.versions.into_iter().next())
        else {
            continue;
        };
        if let Some(found) = resolve(cluster, &version.group_version, kind).await? {
            return Ok(Some(found));
        }
    }
    Ok(None)
}

async fn resolve(
    cluster: &Cluster,
    api_version: &str,
    kind: &str,
) -> Result<Option<(ApiResource, bool)>, kube::Error> {
    let client = cluster.client();
    let list = if api_version.contains('/') {
        cluster
            .request(client.list_api_group_resources(api_version))
            .await
    } else {
        cluster
            .request(client.list_core_api_resources(api_version))
            .await
    };
    let list = match list {
        Ok(l) => l,
        Err(e) if crate::cluster::is_not_found(&e) => return Ok(None),
        Err(e) => return Err(e),
    };
    let (group, version) = split_api_version(api_version);
    let found = list.resources.into_iter().find(|r| {
        !r.name.contains('/')
            && (r.kind.eq_ignore_ascii_case(kind)
                || r.name.eq_ignore_ascii_case(kind)
                || r.short_names
                    .iter()
                    .flatten()
                    .any(|s| s.eq_ignore_ascii_case(kind)))
    });
    Ok(found.map(|r| {
        let gvk = GroupVersionKind::gvk(group, version, &r.kind);
        (
            ApiResource::from_gvk_with_plural(&gvk, &r.name),
            r.namespaced,
        )
    }))
}

/// A `labelSelector` as the API's query string; `None` when empty.
fn label_selector_string(sel: &crate::hooks::config::LabelSelector) -> Option<String> {
    let mut parts: Vec<String> = sel
        .match_labels
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    for e in &sel.match_expressions {
        let values = e.values.join(",");
        parts.push(match e.operator.as_str() {
            "In" => format!("{} in ({values})", e.key),
            "NotIn" => format!("{} notin ({values})", e.key),
            "Exists" => e.key.clone(),
            "DoesNotExist" => format!("!{}", e.key),
            // Checked client-side (it then matches nothing).
            _ => continue,
        });
    }
    (!parts.is_empty()).then(|| parts.join(","))
}

/// `fieldSelector` (and a single `nameSelector` name) as the API's query
/// string; `None` when empty.
fn field_selector_string(b: &KubernetesBinding) -> Option<String> {
    let mut parts = Vec::new();
    if let Some(fs) = &b.field_selector {
        for e in &fs.match_expressions {
            let op = match e.operator.as_str() {
                "=" | "==" | "Equals" => "=",
                _ => "!=",
            };
            parts.push(format!("{}{op}{}", e.field, e.value));
        }
    }
    if let Some(ns) = &b.name_selector
        && let [one] = ns.match_names.as_slice()
    {
        parts.push(format!("metadata.name={one}"));
    }
    (!parts.is_empty()).then(|| parts.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hooks::config::{LabelSelector, LabelSelectorRequirement};

    #[tokio::test]
    async fn a_kind_without_api_version_is_found_in_any_group_against_fake_apiserver() {
        let fake = fake_apiserver::FakeApiServer::new();
        let cluster = Cluster::from_client(
            fake.client(),
            crate::cluster::RateLimit { qps: 0.0, burst: 1 },
        );
        let found = |kind: &'static str| {
            let cluster = cluster.clone();
            async move {
                resolve_any_group(&cluster, kind)
                    .await
                    .unwrap()
                    .map(|(r, namespaced)| (r.api_version, r.plural, namespaced))
            }
        };
        let deployments = Some(("apps/v1".to_string(), "deployments".to_string(), true));
        assert_eq!(found("Deployment").await, deployments);
        assert_eq!(found("deploy").await, deployments);
        assert_eq!(
            found("configmaps").await,
            Some(("v1".to_string(), "configmaps".to_string(), true))
        );
        assert_eq!(
            found("ClusterRole").await,
            Some((
                "rbac.authorization.k8s.io/v1".to_string(),
                "clusterroles".to_string(),
                false
            ))
        );
        assert_eq!(found("NoSuchKind").await, None);
    }

    /// A global hook's kubernetes binding from its `--config` JSON.
    fn binding(json: &str) -> KubeBindingRef {
        let c = crate::hooks::config::parse_config(
            "h.sh",
            crate::hooks::HookKind::Global,
            &format!(r#"{{"configVersion":"v1","kubernetes":[{json}]}}"#),
        )
        .unwrap();
        KubeBindingRef {
            module: None,
            hook: "h.sh".into(),
            binding: c.kubernetes[0].clone(),
        }
    }

    fn watch_health(status: &Arc<RwLock<Status>>) -> Vec<WatchHealth> {
        status.read().unwrap().watches.clone()
    }

    async fn until(what: &str, mut f: impl FnMut() -> bool) {
        for _ in 0..200 {
            if f() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("not within 10s: {what}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn watch_health_shows_restarts_relists_and_kinds_waited_for_against_fake_apiserver() {
        let fake = fake_apiserver::FakeApiServer::new();
        fake.set_bookmark_interval(Duration::from_millis(200));
        let cluster = Cluster::from_client(
            fake.client(),
            crate::cluster::RateLimit { qps: 0.0, burst: 1 },
        );
        let status = Arc::new(RwLock::new(Status::default()));
        let mut kw = KubeWatches::new(
            status.clone(),
            WatchOptions {
                liveness: Duration::from_secs(1),
            },
        );
        let shutdown = CancellationToken::new();
        let jq = JqRunner::default();
        let started = kw.set(
            vec![
                binding(r#"{"name":"cms","apiVersion":"v1","kind":"ConfigMap"}"#),
                binding(r#"{"name":"ws","apiVersion":"example.com/v1","kind":"Widget"}"#),
            ],
            &cluster,
            &jq,
            &shutdown,
        );
        // The missing kind does not hold the converge up.
        let late = kw.wait_synced(&started, Duration::from_secs(10)).await;
        assert!(late.is_empty(), "{late:?}");
        let h = watch_health(&status);
        assert_eq!(h.len(), 2);
        let cms = h.iter().find(|w| w.kind.contains("ConfigMap")).unwrap();
        assert_eq!(cms.state, WatchState::Synced);
        assert_eq!(cms.bindings, ["h.sh: cms"]);
        assert_eq!((cms.relists, cms.restarts), (0, 0));
        let ws = h.iter().find(|w| w.kind.contains("Widget")).unwrap();
        assert_eq!(ws.state, WatchState::WaitingForKind);
        assert!(
            ws.last_error
                .as_deref()
                .unwrap()
                .contains("waiting for kind"),
            "{ws:?}"
        );
        // Bookmarks keep a quiet watch alive past the liveness deadline.
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let cms = |s: &Arc<RwLock<Status>>| {
            watch_health(s)
                .into_iter()
                .find(|w| w.kind.contains("ConfigMap"))
                .unwrap()
        };
        assert_eq!(cms(&status).restarts, 0, "{:?}", cms(&status));

        // Killed: one restart, one relist, synced again.
        fake.kill_watches();
        until("a restart and a relist", || {
            let w = cms(&status);
            w.restarts == 1 && w.relists == 1 && w.state == WatchState::Synced
        })
        .await;
        let st = status.read().unwrap().clone();
        assert_eq!(st.watch_restarts_total, 1);
        assert!(st.watch_relists_total >= 1);
        assert_eq!(st.watches_dead, 0);
        assert!(cms(&status).last_error.unwrap().contains("the connection"));

        // Frozen: restarted at the liveness deadline.
        fake.freeze_watches();
        until("a restart after silence", || cms(&status).restarts == 2).await;
        assert!(
            cms(&status)
                .last_error
                .unwrap()
                .contains("no event nor bookmark"),
        );

        // The CRD installed: the waiting watch starts.
        let crds: Api<DynamicObject> = Api::all_with(
            fake.client(),
            &ApiResource::from_gvk_with_plural(
                &GroupVersionKind::gvk("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
                "customresourcedefinitions",
            ),
        );
        let crd: DynamicObject = serde_json::from_value(serde_json::json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                "versions": [{"name": "v1", "served": true, "storage": true}]},
        }))
        .unwrap();
        crds.create(&Default::default(), &crd).await.unwrap();
        until("the widget watch synced", || {
            watch_health(&status)
                .iter()
                .any(|w| w.kind == "example.com/v1 Widget" && w.state == WatchState::Synced)
        })
        .await;

        // Stopped: the entries go.
        kw.clear();
        until("entries removed", || watch_health(&status).is_empty()).await;
        shutdown.cancel();
    }

    /// `namespace/name` of each object in a binding's live snapshot;
    /// `None` when the binding has none.
    fn live_names(kw: &KubeWatches, binding: &str) -> Option<Vec<String>> {
        let live = kw.live();
        let live = live.read().unwrap();
        let objs = live.get(&(None, "h.sh".to_string()))?.get(binding)?;
        Some(
            objs.iter()
                .map(|o| format!("{}/{}", o.namespace, o.name))
                .collect(),
        )
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn namespace_label_selectors_follow_the_namespaces_labels_against_fake_apiserver() {
        use k8s_openapi::api::core::v1::ConfigMap;
        let fake = fake_apiserver::FakeApiServer::new();
        let cluster = Cluster::from_client(
            fake.client(),
            crate::cluster::RateLimit { qps: 0.0, burst: 1 },
        );
        let nss: Api<Namespace> = Api::all(fake.client());
        let labelled = |name: &str, labels: Value| -> Namespace {
            serde_json::from_value(serde_json::json!({
                "apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": name, "labels": labels},
            }))
            .unwrap()
        };
        for (ns, labels) in [
            ("a1", serde_json::json!({"team": "a", "tier": "x"})),
            ("a2", serde_json::json!({"team": "a"})),
            ("b", serde_json::json!({"team": "b"})),
        ] {
            nss.create(&Default::default(), &labelled(ns, labels))
                .await
                .unwrap();
            let cms: Api<ConfigMap> = Api::namespaced(fake.client(), ns);
            let cm: ConfigMap = serde_json::from_value(serde_json::json!({
                "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
            }))
            .unwrap();
            cms.create(&Default::default(), &cm).await.unwrap();
        }
        let status = Arc::new(RwLock::new(Status::default()));
        let mut kw = KubeWatches::new(status.clone(), WatchOptions::default());
        let shutdown = CancellationToken::new();
        let jq = JqRunner::default();
        let started = kw.set(
            vec![
                binding(
                    r#"{"name":"team","apiVersion":"v1","kind":"ConfigMap","namespace":{"labelSelector":{"matchExpressions":[{"key":"team","operator":"In","values":["a"]}]}}}"#,
                ),
                // Both selectors: the namespaces named that match.
                binding(
                    r#"{"name":"both","apiVersion":"v1","kind":"ConfigMap","namespace":{"nameSelector":{"matchNames":["a2","b"]},"labelSelector":{"matchLabels":{"team":"a"}}}}"#,
                ),
                binding(
                    r#"{"name":"none","apiVersion":"v1","kind":"ConfigMap","namespace":{"labelSelector":{"matchLabels":{"team":"z"}}}}"#,
                ),
                // One name: its Namespace asked for by name.
                binding(
                    r#"{"name":"one","apiVersion":"v1","kind":"ConfigMap","namespace":{"nameSelector":{"matchNames":["b"]},"labelSelector":{"matchLabels":{"team":"a"}}}}"#,
                ),
            ],
            &cluster,
            &jq,
            &shutdown,
        );
        let late = kw.wait_synced(&started, Duration::from_secs(10)).await;
        assert!(late.is_empty(), "{late:?}");
        let names = |v: &[&str]| Some(v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(live_names(&kw, "team"), names(&["a1/c", "a2/c"]));
        assert_eq!(live_names(&kw, "both"), names(&["a2/c"]));
        assert_eq!(live_names(&kw, "none"), names(&[]));
        assert_eq!(live_names(&kw, "one"), names(&[]));
        // Synchronization is not an event.
        assert!(kw.take_ready().is_empty());
        // Each selector's Namespace watch, and one watch per namespace.
        let h = watch_health(&status);
        let of = |kind: &str| {
            let mut v: Vec<Vec<String>> = h
                .iter()
                .filter(|w| w.kind.contains(kind))
                .map(|w| w.namespaces.clone())
                .collect();
            v.sort();
            v
        };
        assert_eq!(of("Namespace").len(), 4, "{h:?}");
        assert_eq!(
            of("ConfigMap"),
            [vec!["a1".to_string()], vec!["a2".into()], vec!["a2".into()]],
            "{h:?}"
        );
        assert!(h.iter().all(|w| w.state == WatchState::Synced), "{h:?}");

        let events = |kw: &mut KubeWatches| -> Vec<(String, String)> {
            kw.take_ready()
                .into_iter()
                .map(|e| {
                    let Some(KubeEvent::Event {
                        watch_event,
                        object: Some(o),
                    }) = e.context.event
                    else {
                        panic!("not an Event: {:?}", e.context);
                    };
                    (
                        format!("{}:{watch_event:?}", e.binding),
                        format!("{}/{}", o.namespace, o.name),
                    )
                })
                .collect()
        };
        // `b` labelled: its object comes in as Added, to the binding whose
        // nameSelector names it too.
        nss.patch(
            "b",
            &Default::default(),
            &kube::api::Patch::Merge(serde_json::json!({"metadata": {"labels": {"team": "a"}}})),
        )
        .await
        .unwrap();
        until("b's object in", || {
            live_names(&kw, "both") == names(&["a2/c", "b/c"])
                && live_names(&kw, "one") == names(&["b/c"])
                && live_names(&kw, "team") == names(&["a1/c", "a2/c", "b/c"])
        })
        .await;
        let mut got = events(&mut kw);
        got.sort();
        assert_eq!(
            got,
            [
                ("both:Added".to_string(), "b/c".to_string()),
                ("one:Added".into(), "b/c".into()),
                ("team:Added".into(), "b/c".into())
            ]
        );
        // `a1` unlabelled: its object leaves as Deleted, its watch stops.
        nss.patch(
            "a1",
            &Default::default(),
            &kube::api::Patch::Merge(serde_json::json!({"metadata": {"labels": {"team": null}}})),
        )
        .await
        .unwrap();
        until("a1's object out", || {
            live_names(&kw, "team") == names(&["a2/c", "b/c"])
        })
        .await;
        assert_eq!(
            events(&mut kw),
            [("team:Deleted".to_string(), "a1/c".to_string())]
        );
        until("a1's watch gone", || {
            !watch_health(&status).iter().any(|w| w.namespaces == ["a1"])
        })
        .await;
        // A deleted namespace: the same.
        nss.delete("a2", &Default::default()).await.unwrap();
        until("a2's objects out", || {
            live_names(&kw, "team") == names(&["b/c"]) && live_names(&kw, "both") == names(&["b/c"])
        })
        .await;

        kw.clear();
        until("entries removed", || watch_health(&status).is_empty()).await;
        shutdown.cancel();
    }

    #[test]
    fn label_selectors_as_query_strings() {
        let mut sel = LabelSelector::default();
        assert_eq!(label_selector_string(&sel), None);
        sel.match_labels.insert("watch".into(), "me".into());
        sel.match_expressions.push(LabelSelectorRequirement {
            key: "tier".into(),
            operator: "In".into(),
            values: vec!["a".into(), "b".into()],
        });
        sel.match_expressions.push(LabelSelectorRequirement {
            key: "gone".into(),
            operator: "DoesNotExist".into(),
            values: vec![],
        });
        assert_eq!(
            label_selector_string(&sel).as_deref(),
            Some("watch=me,tier in (a,b),!gone")
        );
    }
}

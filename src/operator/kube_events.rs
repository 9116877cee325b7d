//! Kubernetes bindings, live: one kube-runtime watcher per distinct
//! (apiVersion, kind, namespaces, label and field selectors) among the
//! kubernetes bindings of the global hooks and of the enabled modules'
//! hooks, started when a module is enabled (global hooks: at start) and
//! stopped when no binding uses it any more or the operator shuts down.
//!
//! Each watch keeps every binding's snapshot (`{object, filterResult}` per
//! object; the object only with `keepFullObjectsInMemory`, managedFields
//! always dropped) in the [`LiveSnapshots`] the session reads, so
//! Synchronization, `beforeHelm`/`afterHelm` and every other run see the
//! cluster. After the initial list, `Added`, `Modified` (only when the
//! filter result changed; without a jqFilter, when the object did) and
//! `Deleted` become `Event` binding contexts the operator runs the hook
//! with (`executeHookOnEvent` honoured). A relist after a broken watch is
//! compared with the snapshot, so nothing is missed or repeated.

use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use kube::api::{Api, DynamicObject};
use kube::core::{ApiResource, GroupVersionKind, TypeMeta};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use serde_json::Value;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use crate::cluster::{Cluster, split_api_version};
use crate::hooks::config::{KubernetesBinding, WatchEvent};
use crate::hooks::context::{KubeEvent, SnapshotObject, sort_snapshot};
use crate::hooks::{BindingContext, JqRunner};
use crate::module::{HookKey, KubeBindingRef, LiveSnapshots};

/// One binding's identity: its hook, its name and its whole config (a
/// changed config is another watch).
pub type BindingKey = (HookKey, String, String);

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

/// A binding on a watch.
#[derive(Clone)]
struct Sub {
    key: BindingKey,
    binding: KubeBindingRef,
    synced: Arc<watch::Sender<bool>>,
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
    /// (apiVersion or "", kind as written, lowercased) → the served
    /// (apiVersion, plural): `ConfigMap`, `configmap`, `configmaps` and
    /// `cm` are one watch.
    kinds: HashMap<(String, String), (String, String)>,
}

impl Default for KubeWatches {
    fn default() -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        KubeWatches {
            live: LiveSnapshots::default(),
            bindings: BTreeMap::new(),
            watches: BTreeMap::new(),
            tx,
            rx,
            kinds: HashMap::new(),
        }
    }
}

impl KubeWatches {
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
            let (synced, _) = watch::channel(false);
            let sub = Sub {
                key: key.clone(),
                binding: b,
                synced: Arc::new(synced),
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
                    let task = WatchTask {
                        cluster: cluster.clone(),
                        shared: Shared {
                            jq: jq.clone(),
                            live: self.live.clone(),
                            tx: self.tx.clone(),
                        },
                        template,
                    };
                    tokio::spawn(task.run(subs_rx, token.clone()));
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

    /// Waits until the bindings `keys` have their initial lists, at most
    /// `limit`; returns the bindings still not synchronized.
    pub async fn wait_synced(&self, keys: &[BindingKey], limit: Duration) -> Vec<String> {
        let deadline = tokio::time::Instant::now() + limit;
        let mut late = Vec::new();
        for k in keys {
            let Some((_, sub)) = self.bindings.get(k) else {
                continue;
            };
            let mut rx = sub.synced.subscribe();
            let ok = tokio::time::timeout_at(deadline, rx.wait_for(|s| *s)).await;
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
    let mut names = b
        .namespace
        .as_ref()
        .and_then(|n| n.name_selector.as_ref())
        .map(|n| n.match_names.clone())
        .unwrap_or_default();
    names.sort();
    names.dedup();
    serde_json::json!([
        api_version,
        kind,
        names,
        b.label_selector.as_ref().and_then(label_selector_string),
        field_selector_string(b),
    ])
    .to_string()
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
}

/// One binding on a watch: its matcher and snapshot.
struct SubState {
    sub: Sub,
    /// The binding with the resolved kind, matching client-side.
    matcher: KubernetesBinding,
    kept: HashMap<(String, String), Kept>,
    synced: bool,
}

impl WatchTask {
    async fn run(self, mut subs: watch::Receiver<Vec<Sub>>, token: CancellationToken) {
        let b = &self.template;
        let what = format!(
            "{} {}",
            b.api_version.as_deref().unwrap_or("(any group)"),
            b.kind
        );
        // The kind may be a kind in any case, a plural or a short name;
        // without an apiVersion, in any group (the core group first).
        let (resource, namespaced) = loop {
            let found = match &b.api_version {
                Some(v) => resolve(&self.cluster, v, &b.kind).await,
                None => resolve_any_group(&self.cluster, &b.kind).await,
            };
            match found {
                Ok(Some(r)) => break r,
                Ok(None) => tracing::warn!(
                    "kubernetes binding: {what} is not served (yet); asking again in 5s"
                ),
                Err(e) => tracing::warn!(
                    "kubernetes binding: resolving {what}: {}; asking again in 5s",
                    crate::cluster::error_text(&e)
                ),
            }
            tokio::select! {
                _ = token.cancelled() => return,
                _ = tokio::time::sleep(Duration::from_secs(5)) => {}
            }
        };
        let names = b
            .namespace
            .as_ref()
            .and_then(|n| n.name_selector.as_ref())
            .map(|n| n.match_names.clone())
            .unwrap_or_default();
        let mut config = watcher::Config::default();
        if let Some(l) = b.label_selector.as_ref().and_then(label_selector_string) {
            config = config.labels(&l);
        }
        if let Some(f) = field_selector_string(b) {
            config = config.fields(&f);
        }
        let mut states: Vec<SubState> = Vec::new();
        // A binding joining a watch already listed lists it again, so it
        // gets its Synchronization; the others see only what changed.
        'relist: loop {
            let list = subs.borrow_and_update().clone();
            states.retain(|s| list.iter().any(|n| n.key == s.sub.key));
            for sub in list {
                if states.iter().any(|s| s.sub.key == sub.key) {
                    continue;
                }
                let who = who(&sub.binding);
                let sb = &sub.binding.binding;
                if sb
                    .namespace
                    .as_ref()
                    .is_some_and(|n| n.label_selector.is_some())
                {
                    tracing::warn!("{who}: namespace.labelSelector is not supported yet: ignored");
                }
                let mut matcher = sb.clone();
                matcher.kind = resource.kind.clone();
                matcher.api_version = None;
                if let Some(n) = matcher.namespace.as_mut() {
                    n.label_selector = None;
                }
                states.push(SubState {
                    sub,
                    matcher,
                    kept: HashMap::new(),
                    synced: false,
                });
            }
            let client = self.cluster.client().clone();
            let api: Api<DynamicObject> = match (namespaced, names.as_slice()) {
                (true, [one]) => Api::namespaced_with(client, one, &resource),
                _ => Api::all_with(client, &resource),
            };
            tracing::info!(
                bindings = states.len(),
                "kubernetes bindings: watching {} {}",
                resource.api_version,
                resource.plural
            );
            let mut stream = watcher::watcher(api, config.clone())
                .default_backoff()
                .boxed();
            let mut listing: Option<Vec<Value>> = None;
            loop {
                let ev = tokio::select! {
                    _ = token.cancelled() => return,
                    changed = subs.changed() => {
                        if changed.is_err() {
                            return;
                        }
                        let list = subs.borrow().clone();
                        if list.iter().any(|n| !states.iter().any(|s| s.sub.key == n.key)) {
                            continue 'relist;
                        }
                        subs.borrow_and_update();
                        states.retain(|s| list.iter().any(|n| n.key == s.sub.key));
                        continue;
                    }
                    ev = stream.next() => ev,
                };
                let ev = match ev {
                    None => return,
                    Some(Err(e)) => {
                        tracing::warn!("kubernetes bindings: watching {what}: {e}; retrying");
                        continue;
                    }
                    Some(Ok(ev)) => ev,
                };
                match ev {
                    Event::Init => listing = Some(Vec::new()),
                    Event::InitApply(o) => {
                        if let Some(l) = listing.as_mut() {
                            l.push(object_value(o, &resource));
                        }
                    }
                    Event::InitDone => {
                        let objects = listing.take().unwrap_or_default();
                        for st in &mut states {
                            st.listed(&self.shared, &objects);
                        }
                    }
                    Event::Apply(o) => {
                        let value = object_value(o, &resource);
                        for st in states.iter_mut().filter(|s| s.synced) {
                            if let Some((k, item)) = st.item(&self.shared, value.clone()) {
                                st.apply(&self.shared, k, item);
                            } else if let Some(k) = key_of(&value)
                                && let Some(old) = st.kept.remove(&k)
                            {
                                // No longer matching (client-side): gone.
                                st.publish(&self.shared);
                                st.event(&self.shared, WatchEvent::Deleted, old.item);
                            }
                        }
                    }
                    Event::Delete(o) => {
                        let value = object_value(o, &resource);
                        for st in states.iter_mut().filter(|s| s.synced) {
                            let Some(k) = key_of(&value) else { continue };
                            if st.kept.remove(&k).is_some() {
                                st.publish(&self.shared);
                                if let Some((_, item)) = st.item(&self.shared, value.clone()) {
                                    st.event(&self.shared, WatchEvent::Deleted, item.item);
                                }
                            }
                        }
                    }
                }
            }
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
fn key_of(o: &Value) -> Option<(String, String)> {
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

impl SubState {
    /// The initial list (or a relist): the snapshot at first, then what
    /// changed meanwhile as events.
    fn listed(&mut self, sh: &Shared, objects: &[Value]) {
        let new: HashMap<(String, String), Kept> = objects
            .iter()
            .filter_map(|o| self.item(sh, o.clone()))
            .collect();
        if !self.synced {
            self.kept = new;
            self.publish(sh);
            self.synced = true;
            self.sub.synced.send_replace(true);
            tracing::info!(
                "{}: synchronized, {} objects",
                who(&self.sub.binding),
                self.kept.len()
            );
            return;
        }
        let gone: Vec<_> = self
            .kept
            .keys()
            .filter(|k| !new.contains_key(*k))
            .cloned()
            .collect();
        for k in gone {
            if let Some(old) = self.kept.remove(&k) {
                self.publish(sh);
                self.event(sh, WatchEvent::Deleted, old.item);
            }
        }
        for (k, item) in new {
            self.apply(sh, k, item);
        }
    }

    /// An object as this binding keeps it; `None` when it does not match
    /// or its jqFilter fails (logged).
    fn item(&self, sh: &Shared, value: Value) -> Option<((String, String), Kept)> {
        if !self.matcher.matches(&value, &|_| None) {
            return None;
        }
        let b = &self.sub.binding.binding;
        // Built with the whole object, for the checksum below.
        let mut full = b.clone();
        full.keep_full_objects_in_memory = true;
        // The jqFilter may run in the jq worker process: a blocking call,
        // so this runtime thread hands its other tasks over meanwhile.
        let item = match tokio::task::block_in_place(|| SnapshotObject::new(&full, value, &sh.jq)) {
            Ok(i) => i,
            Err(e) => {
                tracing::error!("{}: {e}", who(&self.sub.binding));
                return None;
            }
        };
        let checksum = match &b.jq_filter {
            Some(_) => checksum(item.filter_result.as_ref()),
            None => checksum(item.object.as_ref()),
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
    fn apply(&mut self, sh: &Shared, k: (String, String), new: Kept) {
        let ev = match self.kept.get(&k) {
            None => WatchEvent::Added,
            Some(old) if old.checksum != new.checksum => WatchEvent::Modified,
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

    /// Writes the snapshot where the session reads it.
    fn publish(&self, sh: &Shared) {
        let mut items: Vec<SnapshotObject> = self.kept.values().map(|k| k.item.clone()).collect();
        sort_snapshot(&mut items);
        sh.live
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .entry(self.sub.key.0.clone())
            .or_default()
            .insert(self.sub.binding.binding.name.clone(), items);
    }

    /// Sends an `Event` context when the binding runs on it.
    fn event(&self, sh: &Shared, ev: WatchEvent, item: SnapshotObject) {
        let b = &self.sub.binding.binding;
        if !b.execute_hook_on_event.contains(&ev) {
            return;
        }
        let all = sh
            .live
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(&self.sub.key.0)
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
            module: self.sub.binding.module.clone(),
            hook: self.sub.binding.hook.clone(),
            binding: b.name.clone(),
            queue: b.queue.clone(),
            allow_failure: b.allow_failure,
            context,
            key: self.sub.key.clone(),
        });
    }
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

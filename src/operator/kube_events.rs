//! Kubernetes bindings, live: one kube-runtime watcher per kubernetes
//! binding of the global hooks and of the enabled modules' hooks, started
//! when the module is enabled (global hooks: at start) and stopped when it
//! is disabled or the operator shuts down.
//!
//! Each watch keeps its binding's snapshot (`{object, filterResult}` per
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
    pub allow_failure: bool,
    pub context: BindingContext,
    key: BindingKey,
}

struct Running {
    token: CancellationToken,
    synced: watch::Receiver<bool>,
}

/// The watches in force and the events they delivered.
pub struct KubeWatches {
    live: LiveSnapshots,
    running: BTreeMap<BindingKey, Running>,
    tx: mpsc::UnboundedSender<HookEvent>,
    rx: mpsc::UnboundedReceiver<HookEvent>,
}

impl Default for KubeWatches {
    fn default() -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        KubeWatches {
            live: LiveSnapshots::default(),
            running: BTreeMap::new(),
            tx,
            rx,
        }
    }
}

impl KubeWatches {
    /// The snapshots the watches keep, for the session.
    pub fn live(&self) -> LiveSnapshots {
        self.live.clone()
    }

    pub fn len(&self) -> usize {
        self.running.len()
    }

    /// Stops every watch and forgets every snapshot.
    pub fn clear(&mut self) {
        for r in self.running.values() {
            r.token.cancel();
        }
        self.running.clear();
        self.live.write().unwrap_or_else(|p| p.into_inner()).clear();
    }

    /// Puts `bindings` in force: new ones start watching, gone ones stop
    /// (their snapshots dropped). Returns the new ones.
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
            .running
            .keys()
            .filter(|k| !wanted.contains_key(*k))
            .cloned()
            .collect();
        for k in gone {
            if let Some(r) = self.running.remove(&k) {
                r.token.cancel();
            }
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
            if self.running.contains_key(&key) {
                continue;
            }
            started.push(key.clone());
            let token = shutdown.child_token();
            let (synced_tx, synced) = watch::channel(false);
            let w = Watch {
                key: key.clone(),
                binding: b,
                cluster: cluster.clone(),
                jq: jq.clone(),
                live: self.live.clone(),
                tx: self.tx.clone(),
                synced: synced_tx,
            };
            tokio::spawn(w.run(token.clone()));
            self.running.insert(key, Running { token, synced });
        }
        started
    }

    /// Waits until the watches `keys` have their initial lists, at most
    /// `limit`; returns the bindings still not synchronized.
    pub async fn wait_synced(&self, keys: &[BindingKey], limit: Duration) -> Vec<String> {
        let deadline = tokio::time::Instant::now() + limit;
        let mut late = Vec::new();
        for k in keys {
            let Some(r) = self.running.get(k) else {
                continue;
            };
            let mut rx = r.synced.clone();
            let ok = tokio::time::timeout_at(deadline, rx.wait_for(|s| *s)).await;
            if !matches!(ok, Ok(Ok(_))) {
                late.push(format!("{}: {}", k.0.1, k.1));
            }
        }
        late
    }

    /// The next event of a watch in force.
    pub async fn recv(&mut self) -> HookEvent {
        loop {
            // The sender lives in `self`: the channel never closes.
            if let Some(ev) = self.rx.recv().await
                && self.running.contains_key(&ev.key)
            {
                return ev;
            }
        }
    }

    /// The events delivered and not taken yet, in order.
    pub fn take_ready(&mut self) -> Vec<HookEvent> {
        let mut out = Vec::new();
        while let Ok(ev) = self.rx.try_recv() {
            if self.running.contains_key(&ev.key) {
                out.push(ev);
            }
        }
        out
    }
}

/// A kept object: its snapshot entry and the checksum compared for
/// `Modified`.
struct Kept {
    item: SnapshotObject,
    checksum: u64,
}

/// One binding's watch task.
struct Watch {
    key: BindingKey,
    binding: KubeBindingRef,
    cluster: Cluster,
    jq: JqRunner,
    live: LiveSnapshots,
    tx: mpsc::UnboundedSender<HookEvent>,
    synced: watch::Sender<bool>,
}

impl Watch {
    fn who(&self) -> String {
        match &self.binding.module {
            Some(m) => format!(
                "module '{m}': hook '{}': binding '{}'",
                self.binding.hook, self.binding.binding.name
            ),
            None => format!(
                "hook '{}': binding '{}'",
                self.binding.hook, self.binding.binding.name
            ),
        }
    }

    async fn run(self, token: CancellationToken) {
        let who = self.who();
        let b = &self.binding.binding;
        let api_version = b.api_version.clone().unwrap_or_else(|| "v1".into());
        // The kind may be a kind in any case, a plural or a short name.
        let (resource, namespaced) = loop {
            match resolve(&self.cluster, &api_version, &b.kind).await {
                Ok(Some(r)) => break r,
                Ok(None) => tracing::warn!(
                    "{who}: {api_version} {} is not served (yet); asking again in 5s",
                    b.kind
                ),
                Err(e) => tracing::warn!(
                    "{who}: resolving {api_version} {}: {}; asking again in 5s",
                    b.kind,
                    crate::cluster::error_text(&e)
                ),
            }
            tokio::select! {
                _ = token.cancelled() => return,
                _ = tokio::time::sleep(Duration::from_secs(5)) => {}
            }
        };
        let client = self.cluster.client().clone();
        let names = b
            .namespace
            .as_ref()
            .and_then(|n| n.name_selector.as_ref())
            .map(|n| n.match_names.clone())
            .unwrap_or_default();
        let api: Api<DynamicObject> = match (namespaced, names.as_slice()) {
            (true, [one]) => Api::namespaced_with(client, one, &resource),
            _ => Api::all_with(client, &resource),
        };
        let mut config = watcher::Config::default();
        if let Some(l) = b.label_selector.as_ref().and_then(label_selector_string) {
            config = config.labels(&l);
        }
        if let Some(f) = field_selector_string(b) {
            config = config.fields(&f);
        }
        if b.namespace
            .as_ref()
            .is_some_and(|n| n.label_selector.is_some())
        {
            tracing::warn!("{who}: namespace.labelSelector is not supported yet: ignored");
        }
        // Matching the rest client-side (several namespaces, several names).
        let mut matcher = b.clone();
        matcher.kind = resource.kind.clone();
        matcher.api_version = None;
        if let Some(n) = matcher.namespace.as_mut() {
            n.label_selector = None;
        }
        tracing::info!(
            "{who}: watching {} {}",
            resource.api_version,
            resource.plural
        );
        let mut stream = watcher::watcher(api, config).default_backoff().boxed();
        let mut kept: HashMap<(String, String), Kept> = HashMap::new();
        let mut listing: Option<HashMap<(String, String), Kept>> = None;
        let mut synced = false;
        loop {
            let ev = tokio::select! {
                _ = token.cancelled() => return,
                ev = stream.next() => ev,
            };
            let ev = match ev {
                None => return,
                Some(Err(e)) => {
                    tracing::warn!("{who}: watch: {e}; retrying");
                    continue;
                }
                Some(Ok(ev)) => ev,
            };
            match ev {
                Event::Init => listing = Some(HashMap::new()),
                Event::InitApply(o) => {
                    if let Some((k, item)) = self.item(&matcher, &resource, o, &who)
                        && let Some(l) = listing.as_mut()
                    {
                        l.insert(k, item);
                    }
                }
                Event::InitDone => {
                    let new = listing.take().unwrap_or_default();
                    if synced {
                        // A relist: what changed meanwhile becomes events.
                        let gone: Vec<_> = kept
                            .keys()
                            .filter(|k| !new.contains_key(*k))
                            .cloned()
                            .collect();
                        for k in gone {
                            if let Some(old) = kept.remove(&k) {
                                self.publish(&kept);
                                self.event(WatchEvent::Deleted, old.item);
                            }
                        }
                        for (k, item) in new {
                            self.apply(&mut kept, k, item);
                        }
                    } else {
                        kept = new;
                        self.publish(&kept);
                        synced = true;
                        let _ = self.synced.send(true);
                        tracing::info!("{who}: synchronized, {} objects", kept.len());
                    }
                }
                Event::Apply(o) => {
                    let Some((k, item)) = self.item(&matcher, &resource, o, &who) else {
                        continue;
                    };
                    if synced {
                        self.apply(&mut kept, k, item);
                    }
                }
                Event::Delete(o) => {
                    let Some((k, item)) = self.item(&matcher, &resource, o, &who) else {
                        continue;
                    };
                    if synced && kept.remove(&k).is_some() {
                        self.publish(&kept);
                        self.event(WatchEvent::Deleted, item.item);
                    }
                }
            }
        }
    }

    /// An object as this binding keeps it; `None` when it does not match
    /// or its jqFilter fails (logged).
    fn item(
        &self,
        matcher: &KubernetesBinding,
        resource: &ApiResource,
        mut o: DynamicObject,
        who: &str,
    ) -> Option<((String, String), Kept)> {
        o.metadata.managed_fields = None;
        o.types = Some(TypeMeta {
            api_version: resource.api_version.clone(),
            kind: resource.kind.clone(),
        });
        let value = serde_json::to_value(&o).ok()?;
        if !matcher.matches(&value, &|_| None) {
            return None;
        }
        let b = &self.binding.binding;
        // The event carries the whole object; the snapshot only when asked.
        let mut full = b.clone();
        full.keep_full_objects_in_memory = true;
        let item = match SnapshotObject::new(&full, value, &self.jq) {
            Ok(i) => i,
            Err(e) => {
                tracing::error!("{who}: {e}");
                return None;
            }
        };
        let checksum = match &b.jq_filter {
            Some(_) => checksum(item.filter_result.as_ref()),
            None => checksum(item.object.as_ref()),
        };
        Some((
            (item.namespace.clone(), item.name.clone()),
            Kept { item, checksum },
        ))
    }

    /// A listed or applied object: `Added`, `Modified` when its checksum
    /// changed, nothing otherwise.
    fn apply(&self, kept: &mut HashMap<(String, String), Kept>, k: (String, String), new: Kept) {
        let ev = match kept.get(&k) {
            None => WatchEvent::Added,
            Some(old) if old.checksum != new.checksum => WatchEvent::Modified,
            Some(_) => {
                // Same filter result: keep the fresher object quietly.
                kept.insert(k, new);
                self.publish(kept);
                return;
            }
        };
        let item = new.item.clone();
        kept.insert(k, new);
        self.publish(kept);
        self.event(ev, item);
    }

    /// Writes the snapshot where the session reads it.
    fn publish(&self, kept: &HashMap<(String, String), Kept>) {
        let keep_object = self.binding.binding.keep_full_objects_in_memory;
        let mut items: Vec<SnapshotObject> = kept
            .values()
            .map(|k| SnapshotObject {
                object: if keep_object {
                    k.item.object.clone()
                } else {
                    None
                },
                ..k.item.clone()
            })
            .collect();
        sort_snapshot(&mut items);
        self.live
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .entry(self.key.0.clone())
            .or_default()
            .insert(self.binding.binding.name.clone(), items);
    }

    /// Sends an `Event` context when the binding runs on it.
    fn event(&self, ev: WatchEvent, item: SnapshotObject) {
        let b = &self.binding.binding;
        if !b.execute_hook_on_event.contains(&ev) {
            return;
        }
        let all = self
            .live
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(&self.key.0)
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
        let _ = self.tx.send(HookEvent {
            module: self.binding.module.clone(),
            hook: self.binding.hook.clone(),
            binding: b.name.clone(),
            allow_failure: b.allow_failure,
            context,
            key: self.key.clone(),
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

//! Binding contexts: the JSON array a hook reads from `BINDING_CONTEXT_PATH`,
//! in shell-operator's exact shape (`pkg/hook/binding_context`
//! `BindingContext.MapV1`/`MapV0`, `ObjectAndFilterResult.Map`) with
//! addon-operator's lifecycle contexts (`RunHooksByBinding`, converge tasks:
//! `beforeHelm`, `afterAll`, … carry every kubernetes snapshot of the hook).
//!
//! Keys come out sorted, as Go's json.Marshal of a map writes them; snapshot
//! lists are sorted by namespace, then name.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::config::{BindingType, ConfigVersion, HookConfig, KubernetesBinding, WatchEvent};

/// One object of a kubernetes binding with its jqFilter result
/// (shell-operator's `ObjectAndFilterResult`).
#[derive(Clone, Debug, PartialEq)]
pub struct SnapshotObject {
    /// The object; `None` when the binding has `keepFullObjectsInMemory: false`.
    pub object: Option<Value>,
    /// The jqFilter output; `None` when the binding has no jqFilter (the key is
    /// then absent), `Some(Null)` for an empty output.
    pub filter_result: Option<Value>,
    /// metadata.namespace and metadata.name, for ordering.
    pub namespace: String,
    pub name: String,
}

impl SnapshotObject {
    /// Builds the snapshot entry for `object` as `binding` would keep it:
    /// runs its jqFilter, drops the object if it is not kept in memory.
    pub fn new(binding: &KubernetesBinding, object: Value) -> Result<SnapshotObject, String> {
        let meta = |k: &str| {
            object
                .pointer(&format!("/metadata/{k}"))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        let (namespace, name) = (meta("namespace"), meta("name"));
        let filter_result = match &binding.jq_filter {
            Some(f) => Some(f.apply(&object).map_err(|e| {
                format!(
                    "binding '{}': jqFilter on {}/{}: {e}",
                    binding.name, namespace, name
                )
            })?),
            None => None,
        };
        Ok(SnapshotObject {
            object: binding.keep_full_objects_in_memory.then_some(object),
            filter_result,
            namespace,
            name,
        })
    }

    fn to_map(&self) -> Map<String, Value> {
        let mut m = Map::new();
        if let Some(o) = &self.object {
            m.insert("object".into(), o.clone());
        }
        if let Some(f) = &self.filter_result {
            m.insert("filterResult".into(), f.clone());
        }
        m
    }

    /// The entry as it appears in `objects` and `snapshots`.
    pub fn to_json(&self) -> Value {
        Value::Object(self.to_map())
    }
}

/// Sorts a snapshot as `ByNamespaceAndName` does.
pub fn sort_snapshot(items: &mut [SnapshotObject]) {
    items.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
}

/// Snapshots of kubernetes bindings, by binding name.
pub type Snapshots = BTreeMap<String, Vec<SnapshotObject>>;

/// What a kubernetes context reports.
#[derive(Clone, Debug, PartialEq)]
pub enum KubeEvent {
    /// The initial list: all objects.
    Synchronization { objects: Vec<SnapshotObject> },
    /// One watch event; `object` is `None` when there is none to report.
    Event {
        watch_event: WatchEvent,
        object: Option<SnapshotObject>,
    },
}

/// One binding context.
#[derive(Clone, Debug, PartialEq)]
pub struct BindingContext {
    /// The binding's name (`onStartup`, `beforeHelm`, the schedule/kubernetes
    /// binding's `name`).
    pub binding: String,
    pub binding_type: BindingType,
    /// `Some` when the context carries snapshots (`includeSnapshotsFrom`, a
    /// group, or a lifecycle binding, which carries all of them).
    pub snapshots: Option<Snapshots>,
    /// The group of the binding; the context is then a `Group` context.
    pub group: Option<String>,
    /// For kubernetes bindings: the event.
    pub event: Option<KubeEvent>,
    /// Whether the binding has a jqFilter (an empty Event then reports
    /// `"filterResult": ""`, as shell-operator does).
    pub has_jq_filter: bool,
}

fn pick(all: &Snapshots, names: &[String]) -> Snapshots {
    names
        .iter()
        .map(|n| (n.clone(), all.get(n).cloned().unwrap_or_default()))
        .collect()
}

impl BindingContext {
    /// `onStartup`: `{"binding":"onStartup"}`.
    pub fn on_startup() -> Self {
        BindingContext {
            binding: "onStartup".into(),
            binding_type: BindingType::OnStartup,
            snapshots: None,
            group: None,
            event: None,
            has_jq_filter: false,
        }
    }

    /// A lifecycle binding (`beforeAll`, `afterAll`, `beforeHelm`, `afterHelm`,
    /// `beforeDeleteHelm`, `afterDeleteHelm`) with the snapshots of every
    /// kubernetes binding of the hook (empty lists for bindings with none).
    pub fn lifecycle(binding: BindingType, config: &HookConfig, all: &Snapshots) -> Self {
        let names: Vec<String> = config.kubernetes.iter().map(|k| k.name.clone()).collect();
        BindingContext {
            binding: binding.as_str().into(),
            binding_type: binding,
            snapshots: Some(pick(all, &names)),
            group: None,
            event: None,
            has_jq_filter: false,
        }
    }

    /// The context of the `index`-th schedule binding of `config`.
    pub fn schedule(config: &HookConfig, index: usize, all: &Snapshots) -> Option<Self> {
        let s = config.schedules.get(index)?;
        Some(BindingContext {
            binding: s.name.clone(),
            binding_type: BindingType::Schedule,
            snapshots: (!s.include_snapshots_from.is_empty())
                .then(|| pick(all, &s.include_snapshots_from)),
            group: s.group.clone(),
            event: None,
            has_jq_filter: false,
        })
    }

    /// A kubernetes binding's context (Synchronization or Event).
    pub fn kubernetes(binding: &KubernetesBinding, mut event: KubeEvent, all: &Snapshots) -> Self {
        if let KubeEvent::Synchronization { objects } = &mut event {
            sort_snapshot(objects);
        }
        BindingContext {
            binding: binding.name.clone(),
            binding_type: BindingType::Kubernetes,
            snapshots: (!binding.include_snapshots_from.is_empty())
                .then(|| pick(all, &binding.include_snapshots_from)),
            group: binding.group.clone(),
            event: Some(event),
            has_jq_filter: binding.jq_filter.is_some(),
        }
    }

    /// `MapV1`.
    pub fn to_json_v1(&self) -> Value {
        let mut res = Map::new();
        res.insert("binding".into(), Value::String(self.binding.clone()));
        if self.binding_type == BindingType::OnStartup {
            return Value::Object(res);
        }
        if let Some(snaps) = &self.snapshots {
            let m: Map<String, Value> = snaps
                .iter()
                .map(|(k, items)| {
                    let mut items = items.clone();
                    sort_snapshot(&mut items);
                    (
                        k.clone(),
                        Value::Array(items.iter().map(SnapshotObject::to_json).collect()),
                    )
                })
                .collect();
            res.insert("snapshots".into(), Value::Object(m));
        }
        // A group context is always "type: Group", even for Synchronization.
        if let Some(g) = &self.group {
            res.insert("type".into(), "Group".into());
            res.insert("groupName".into(), Value::String(g.clone()));
            return Value::Object(res);
        }
        if self.binding_type == BindingType::Schedule {
            res.insert("type".into(), "Schedule".into());
            return Value::Object(res);
        }
        let Some(event) = &self.event else {
            return Value::Object(res);
        };
        match event {
            KubeEvent::Synchronization { objects } => {
                res.insert("type".into(), "Synchronization".into());
                res.insert(
                    "objects".into(),
                    Value::Array(objects.iter().map(SnapshotObject::to_json).collect()),
                );
            }
            KubeEvent::Event {
                watch_event,
                object,
            } => {
                res.insert("type".into(), "Event".into());
                res.insert("watchEvent".into(), watch_event.as_str().into());
                match object {
                    Some(o) => res.extend(o.to_map()),
                    None => {
                        res.insert("object".into(), Value::Null);
                        if self.has_jq_filter {
                            res.insert("filterResult".into(), Value::String(String::new()));
                        }
                    }
                }
            }
        }
        Value::Object(res)
    }

    /// `MapV0`: `binding`, and for kubernetes events `resourceEvent`
    /// (add/update/delete) and the object's namespace, kind and name.
    pub fn to_json_v0(&self) -> Value {
        let mut res = Map::new();
        res.insert("binding".into(), Value::String(self.binding.clone()));
        if self.binding_type != BindingType::Kubernetes {
            return Value::Object(res);
        }
        let (ev, obj) = match &self.event {
            Some(KubeEvent::Event {
                watch_event,
                object,
            }) => (
                match watch_event {
                    WatchEvent::Added => "add",
                    WatchEvent::Modified => "update",
                    WatchEvent::Deleted => "delete",
                },
                object.as_ref(),
            ),
            Some(KubeEvent::Synchronization { objects }) => ("", objects.first()),
            None => ("", None),
        };
        res.insert("resourceEvent".into(), ev.into());
        if let Some(o) = obj {
            let kind = o
                .object
                .as_ref()
                .and_then(|x| x.get("kind"))
                .and_then(Value::as_str)
                .unwrap_or("");
            res.insert("resourceNamespace".into(), o.namespace.clone().into());
            res.insert("resourceKind".into(), kind.into());
            res.insert("resourceName".into(), o.name.clone().into());
        }
        Value::Object(res)
    }

    /// The context in the hook's config version.
    pub fn to_json(&self, version: ConfigVersion) -> Value {
        match version {
            ConfigVersion::V0 => self.to_json_v0(),
            ConfigVersion::V1 => self.to_json_v1(),
        }
    }
}

/// The file content: a JSON array of contexts (`ConvertBindingContextList`).
pub fn binding_context_json(contexts: &[BindingContext], version: ConfigVersion) -> String {
    let list: Vec<Value> = contexts.iter().map(|c| c.to_json(version)).collect();
    serde_json::to_string(&list).unwrap_or_else(|_| "[]".into())
}

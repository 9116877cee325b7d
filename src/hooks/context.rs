//! Binding contexts: the JSON array a hook reads from `BINDING_CONTEXT_PATH`,
//! in shell-operator's exact shape (`pkg/hook/binding_context`
//! `BindingContext.MapV1`/`MapV0`, `ObjectAndFilterResult.Map`) with
//! addon-operator's lifecycle contexts (`RunHooksByBinding`, converge tasks:
//! `beforeHelm`, `afterAll`, … carry every kubernetes snapshot of the hook).
//!
//! Keys come out sorted, as Go's json.Marshal of a map writes them; snapshot
//! lists are sorted by namespace, then name.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::config::{
    BindingType, ConfigVersion, HookConfig, KubernetesBinding, LabelSelector, WatchEvent,
};
use super::jq_sandbox::JqRunner;

/// One object of a kubernetes binding with its jqFilter result
/// (shell-operator's `ObjectAndFilterResult`). The object and the result
/// are shared, not copied, between a watch's cache, the published snapshot
/// and every context built from it: a clone is cheap.
#[derive(Clone, Debug, PartialEq)]
pub struct SnapshotObject {
    /// The object; `None` when the binding has `keepFullObjectsInMemory: false`.
    pub object: Option<Arc<Value>>,
    /// The jqFilter output; `None` when the binding has no jqFilter (the key is
    /// then absent), `Some(Null)` for an empty output.
    pub filter_result: Option<Arc<Value>>,
    /// metadata.namespace and metadata.name, for ordering.
    pub namespace: String,
    pub name: String,
}

impl SnapshotObject {
    /// Builds the snapshot entry for `object` as `binding` would keep it:
    /// runs its jqFilter through `jq`, drops the object if it is not kept
    /// in memory.
    pub fn new(
        binding: &KubernetesBinding,
        object: Value,
        jq: &JqRunner,
    ) -> Result<SnapshotObject, String> {
        let meta = |k: &str| {
            object
                .pointer(&format!("/metadata/{k}"))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        let (namespace, name) = (meta("namespace"), meta("name"));
        let filter_result = match &binding.jq_filter {
            Some(f) => Some(Arc::new(jq.apply(f, &object).map_err(|e| {
                format!(
                    "binding '{}': jqFilter on {}/{}: {e}",
                    binding.name, namespace, name
                )
            })?)),
            None => None,
        };
        Ok(SnapshotObject {
            object: binding
                .keep_full_objects_in_memory
                .then(|| Arc::new(object)),
            filter_result,
            namespace,
            name,
        })
    }

    fn to_map(&self) -> Map<String, Value> {
        let mut m = Map::new();
        if let Some(o) = &self.object {
            m.insert("object".into(), Value::clone(o));
        }
        if let Some(f) = &self.filter_result {
            m.insert("filterResult".into(), Value::clone(f));
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

/// Builds a hook's snapshots from objects recorded per binding name (the
/// offline `--snapshots` input): for every kubernetes binding of `config`
/// the objects listed under its name (none if absent), each run through the
/// binding's jqFilter, kept or dropped per `keepFullObjectsInMemory`.
pub fn snapshots_from_recorded(
    config: &HookConfig,
    recorded: &BTreeMap<String, Vec<Value>>,
    jq: &JqRunner,
) -> Result<Snapshots, String> {
    let mut out = Snapshots::new();
    for b in &config.kubernetes {
        let mut items = Vec::new();
        for o in recorded.get(&b.name).into_iter().flatten() {
            items.push(SnapshotObject::new(b, o.clone(), jq)?);
        }
        sort_snapshot(&mut items);
        out.insert(b.name.clone(), items);
    }
    Ok(out)
}

/// Builds a hook's snapshots from a flat list of cluster objects (for
/// example a `kubectl get -o json` dump): each kubernetes binding gets the
/// objects it would watch ([`KubernetesBinding::matches`]); `Namespace`
/// objects in the list give the labels for `namespace.labelSelector`.
pub fn snapshots_from_objects(
    config: &HookConfig,
    objects: &[Value],
    jq: &JqRunner,
) -> Result<Snapshots, String> {
    let ns_labels: BTreeMap<String, BTreeMap<String, String>> = objects
        .iter()
        .filter(|o| o.get("kind").and_then(Value::as_str) == Some("Namespace"))
        .filter_map(|o| {
            let name = o.pointer("/metadata/name")?.as_str()?.to_string();
            Some((name, labels_of(o)))
        })
        .collect();
    let mut out = Snapshots::new();
    for b in &config.kubernetes {
        let mut items = Vec::new();
        for o in objects {
            if b.matches(o, &|ns| ns_labels.get(ns).cloned()) {
                items.push(SnapshotObject::new(b, o.clone(), jq)?);
            }
        }
        sort_snapshot(&mut items);
        out.insert(b.name.clone(), items);
    }
    Ok(out)
}

fn labels_of(o: &Value) -> BTreeMap<String, String> {
    o.pointer("/metadata/labels")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

/// Whether `labels` satisfy `sel` (matchLabels and matchExpressions).
pub(crate) fn selector_matches(sel: &LabelSelector, labels: &BTreeMap<String, String>) -> bool {
    sel.match_labels
        .iter()
        .all(|(k, v)| labels.get(k) == Some(v))
        && sel.match_expressions.iter().all(|e| {
            let have = labels.get(&e.key);
            match e.operator.as_str() {
                "In" => have.is_some_and(|v| e.values.contains(v)),
                "NotIn" => !have.is_some_and(|v| e.values.contains(v)),
                "Exists" => have.is_some(),
                "DoesNotExist" => have.is_none(),
                _ => false,
            }
        })
}

/// A dotted field path (`metadata.name`, `status.phase`) of an object, as
/// the API server's field selectors read it.
fn field_value(o: &Value, path: &str) -> String {
    let mut cur = o;
    for part in path.split('.') {
        match cur.get(part) {
            Some(v) => cur = v,
            None => return String::new(),
        }
    }
    match cur {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

impl KubernetesBinding {
    /// Whether the binding would watch `object`: kind (case-insensitive;
    /// a plural or short resource name cannot be resolved without the API
    /// server and matches nothing), apiVersion if given, nameSelector,
    /// labelSelector, fieldSelector and the namespace selectors.
    /// `namespace_labels` gives a namespace's labels, if known.
    pub fn matches(
        &self,
        object: &Value,
        namespace_labels: &dyn Fn(&str) -> Option<BTreeMap<String, String>>,
    ) -> bool {
        let s = |p: &str| object.pointer(p).and_then(Value::as_str).unwrap_or("");
        if !s("/kind").eq_ignore_ascii_case(&self.kind) {
            return false;
        }
        if let Some(av) = &self.api_version
            && s("/apiVersion") != av
        {
            return false;
        }
        let name = s("/metadata/name");
        let namespace = s("/metadata/namespace");
        if let Some(ns) = &self.name_selector
            && !ns.match_names.iter().any(|n| n == name)
        {
            return false;
        }
        if let Some(ls) = &self.label_selector
            && !selector_matches(ls, &labels_of(object))
        {
            return false;
        }
        if let Some(fs) = &self.field_selector {
            for e in &fs.match_expressions {
                let equal = field_value(object, &e.field) == e.value;
                let want_equal = matches!(e.operator.as_str(), "=" | "==" | "Equals");
                if equal != want_equal {
                    return false;
                }
            }
        }
        if let Some(nsel) = &self.namespace {
            if let Some(names) = &nsel.name_selector
                && !names.match_names.iter().any(|n| n == namespace)
            {
                return false;
            }
            if let Some(ls) = &nsel.label_selector {
                let labels = namespace_labels(namespace).unwrap_or_default();
                if !selector_matches(ls, &labels) {
                    return false;
                }
            }
        }
        true
    }
}

/// Concatenates the contexts of consecutive queued runs of one hook into
/// one run and compacts groups, as shell-operator's
/// `combineBindingContextForHook`: a context is dropped when the next one
/// belongs to the same group (the later one carries fresher snapshots).
pub fn combine_contexts(runs: Vec<Vec<BindingContext>>) -> Vec<BindingContext> {
    let all: Vec<BindingContext> = runs.into_iter().flatten().collect();
    let mut out = Vec::with_capacity(all.len());
    for (i, bc) in all.iter().enumerate() {
        let superseded = bc.group.as_ref().is_some_and(|g| {
            all.get(i + 1)
                .is_some_and(|next| next.group.as_ref() == Some(g))
        });
        if !superseded {
            out.push(bc.clone());
        }
    }
    out
}

//! `hook --config` output parsed into typed bindings, as shell-operator's
//! `HookConfig.LoadAndValidate` (`pkg/hook/config`) and addon-operator's
//! `GetConfigForModule` (`models/hooks/kind/shellhook.go`) do it:
//!
//! 1. YAML or JSON (sigs.k8s.io/yaml) into a map; `configVersion` picks the
//!    version (absent → v0; v0 and v1 exist);
//! 2. the OpenAPI schema of that version ([`super::schema`]), which differs
//!    for global and module hooks in the lifecycle bindings it allows;
//! 3. conversion with the inter-field checks the schema cannot express
//!    (`ConvertAndCheck` in config_v0.go/config_v1.go): crontab, jqFilter,
//!    apiVersion, selectors, `includeSnapshotsFrom` naming exactly one
//!    kubernetes binding, groups, defaults (`queue: main`, binding names).

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;

use super::cron::{Crontab, parse_go_duration};
use super::jq::JqFilter;
use super::{HookError, HookKind, schema};

/// The binding types of addon-operator hooks (`pkg/hook/types/bindings.go`
/// plus shell-operator's `onStartup`, `schedule`, `kubernetes`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum BindingType {
    #[serde(rename = "onStartup")]
    OnStartup,
    #[serde(rename = "beforeAll")]
    BeforeAll,
    #[serde(rename = "afterAll")]
    AfterAll,
    #[serde(rename = "beforeHelm")]
    BeforeHelm,
    #[serde(rename = "afterHelm")]
    AfterHelm,
    #[serde(rename = "beforeDeleteHelm")]
    BeforeDeleteHelm,
    #[serde(rename = "afterDeleteHelm")]
    AfterDeleteHelm,
    #[serde(rename = "schedule")]
    Schedule,
    #[serde(rename = "kubernetes")]
    Kubernetes,
}

impl BindingType {
    /// The name used in configs and binding contexts (`onStartup`, `beforeHelm`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            BindingType::OnStartup => "onStartup",
            BindingType::BeforeAll => "beforeAll",
            BindingType::AfterAll => "afterAll",
            BindingType::BeforeHelm => "beforeHelm",
            BindingType::AfterHelm => "afterHelm",
            BindingType::BeforeDeleteHelm => "beforeDeleteHelm",
            BindingType::AfterDeleteHelm => "afterDeleteHelm",
            BindingType::Schedule => "schedule",
            BindingType::Kubernetes => "kubernetes",
        }
    }

    /// Bindings that carry only an order number.
    pub const ORDERED: [BindingType; 7] = [
        BindingType::OnStartup,
        BindingType::BeforeAll,
        BindingType::AfterAll,
        BindingType::BeforeHelm,
        BindingType::AfterHelm,
        BindingType::BeforeDeleteHelm,
        BindingType::AfterDeleteHelm,
    ];
}

impl std::fmt::Display for BindingType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The config format version.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum ConfigVersion {
    #[serde(rename = "v0")]
    V0,
    #[serde(rename = "v1")]
    V1,
}

impl ConfigVersion {
    pub fn as_str(self) -> &'static str {
        match self {
            ConfigVersion::V0 => "v0",
            ConfigVersion::V1 => "v1",
        }
    }
}

/// A hook's parsed configuration.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HookConfig {
    pub config_version: ConfigVersion,
    /// Order numbers of the ordered bindings the hook has (`onStartup: 10`).
    pub orders: BTreeMap<BindingType, f64>,
    pub schedules: Vec<ScheduleBinding>,
    pub kubernetes: Vec<KubernetesBinding>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub settings: Option<Settings>,
}

impl HookConfig {
    /// The order of an ordered binding, if the hook has it.
    pub fn order(&self, binding: BindingType) -> Option<f64> {
        self.orders.get(&binding).copied()
    }

    /// Whether the hook has a binding of this type.
    pub fn has_binding(&self, binding: BindingType) -> bool {
        match binding {
            BindingType::Schedule => !self.schedules.is_empty(),
            BindingType::Kubernetes => !self.kubernetes.is_empty(),
            b => self.orders.contains_key(&b),
        }
    }

    /// The kubernetes binding with this name.
    pub fn kubernetes_binding(&self, name: &str) -> Option<&KubernetesBinding> {
        self.kubernetes.iter().find(|k| k.name == name)
    }
}

/// `settings`: a token bucket per hook.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Settings {
    #[serde(serialize_with = "ser_duration")]
    pub execution_min_interval: Duration,
    pub execution_burst: i64,
}

fn ser_duration<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format!("{}s", d.as_secs_f64()))
}

impl Serialize for Crontab {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.spec)
    }
}

impl Serialize for JqFilter {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.source())
    }
}

/// One `schedule` binding.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleBinding {
    /// `name`, else "schedule".
    pub name: String,
    pub crontab: Crontab,
    pub allow_failure: bool,
    /// `queue`, else "main".
    pub queue: String,
    /// `includeSnapshotsFrom` plus, with a group, every binding of the group.
    pub include_snapshots_from: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
}

/// Kubernetes watch event types.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum WatchEvent {
    Added,
    Modified,
    Deleted,
}

impl WatchEvent {
    pub fn as_str(self) -> &'static str {
        match self {
            WatchEvent::Added => "Added",
            WatchEvent::Modified => "Modified",
            WatchEvent::Deleted => "Deleted",
        }
    }
}

/// `nameSelector`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NameSelector {
    pub match_names: Vec<String>,
}

/// A `matchExpressions` item of a label selector.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LabelSelectorRequirement {
    pub key: String,
    pub operator: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<String>,
}

/// metav1.LabelSelector.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LabelSelector {
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub match_labels: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub match_expressions: Vec<LabelSelectorRequirement>,
}

/// A `fieldSelector.matchExpressions` item.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FieldSelectorRequirement {
    pub field: String,
    pub operator: String,
    pub value: String,
}

/// `fieldSelector`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FieldSelector {
    pub match_expressions: Vec<FieldSelectorRequirement>,
}

/// `namespace`.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NamespaceSelector {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name_selector: Option<NameSelector>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
}

/// One `kubernetes` binding (v1), or an `onKubernetesEvent` entry (v0)
/// converted to the same shape.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct KubernetesBinding {
    /// `name`, else "kubernetes" (v0: "onKubernetesEvent").
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name_selector: Option<NameSelector>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field_selector: Option<FieldSelector>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<NamespaceSelector>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jq_filter: Option<JqFilter>,
    /// Events that run the hook; all three unless set; empty = snapshot only.
    pub execute_hook_on_event: Vec<WatchEvent>,
    pub execute_hook_on_synchronization: bool,
    /// Always true unless set to false together with a named queue.
    pub wait_for_synchronization: bool,
    pub keep_full_objects_in_memory: bool,
    pub allow_failure: bool,
    pub queue: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    pub include_snapshots_from: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resynchronization_period: Option<String>,
}

// ---- raw (versioned) shapes --------------------------------------------------

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct RawSettings {
    execution_min_interval: Option<String>,
    execution_burst: Option<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawScheduleV1 {
    #[serde(default)]
    name: String,
    #[serde(default)]
    crontab: String,
    #[serde(default)]
    allow_failure: bool,
    #[serde(default)]
    include_snapshots_from: Vec<String>,
    #[serde(default)]
    queue: String,
    #[serde(default)]
    group: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawKubernetesV1 {
    #[serde(default)]
    name: String,
    watch_event: Option<Vec<WatchEvent>>,
    execute_hook_on_event: Option<Vec<WatchEvent>>,
    execute_hook_on_synchronization: Option<bool>,
    wait_for_synchronization: Option<bool>,
    keep_full_objects_in_memory: Option<bool>,
    #[serde(default)]
    api_version: String,
    #[serde(default)]
    kind: String,
    name_selector: Option<NameSelector>,
    label_selector: Option<LabelSelector>,
    field_selector: Option<FieldSelector>,
    namespace: Option<NamespaceSelector>,
    #[serde(default)]
    jq_filter: String,
    #[serde(default)]
    allow_failure: bool,
    resynchronization_period: Option<String>,
    #[serde(default)]
    include_snapshots_from: Vec<String>,
    #[serde(default)]
    queue: String,
    #[serde(default)]
    group: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawScheduleV0 {
    #[serde(default)]
    name: String,
    #[serde(default)]
    crontab: String,
    #[serde(default)]
    allow_failure: bool,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawNamespaceV0 {
    #[serde(default)]
    match_names: Vec<String>,
    #[serde(default)]
    any: bool,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawKubernetesV0 {
    #[serde(default)]
    name: String,
    #[serde(default)]
    event: Vec<String>,
    #[serde(default)]
    kind: String,
    selector: Option<LabelSelector>,
    #[serde(default)]
    object_name: String,
    namespace_selector: Option<RawNamespaceV0>,
    #[serde(default)]
    jq_filter: String,
    #[serde(default)]
    allow_failure: bool,
}

/// Parses and validates `hook --config` output for a hook of `kind`;
/// errors name the hook and the failing field.
pub fn parse_config(hook: &str, kind: HookKind, text: &str) -> Result<HookConfig, HookError> {
    let err = |message: String| HookError::Config {
        hook: hook.to_string(),
        message,
    };
    let doc =
        crate::yaml::from_yaml(text).map_err(|e| err(format!("config unmarshal: {}", e.0)))?;
    let doc = yaml_to_json(&doc);
    // VersionedUntyped.LoadConfigVersion
    let version = match doc.get("configVersion") {
        None => ConfigVersion::V0,
        Some(Value::Null) => {
            return Err(err("config version: missing 'configVersion' value".into()));
        }
        Some(Value::String(s)) if s == "v1" => ConfigVersion::V1,
        Some(Value::String(s)) if s == "v0" => ConfigVersion::V0,
        Some(Value::String(s)) => {
            return Err(err(format!(
                "config version: 'configVersion' value '{s}' is unsupported"
            )));
        }
        Some(_) => {
            return Err(err(
                "config version: string value is expected for key 'configVersion'".into(),
            ));
        }
    };
    let problems = schema::validate(&doc, version.as_str(), kind);
    match problems.len() {
        0 => {}
        1 => return Err(err(problems.join(""))),
        // go-multierror's list format, one violation per line.
        n => {
            let list: Vec<String> = problems.iter().map(|p| format!("\t* {p}")).collect();
            return Err(err(format!("{n} errors occurred:\n{}", list.join("\n"))));
        }
    }
    let mut cfg = HookConfig {
        config_version: version,
        orders: BTreeMap::new(),
        schedules: Vec::new(),
        kubernetes: Vec::new(),
        settings: None,
    };
    // Ordered bindings. addon-operator reads the lifecycle ones into *uint
    // (`HookScheduleConfig`), so a negative order fails to unmarshal there.
    for b in BindingType::ORDERED {
        if let Some(v) = doc.get(b.as_str()) {
            let n = v
                .as_f64()
                .ok_or_else(|| err(format!("{b} in body must be of type integer")))?;
            if b != BindingType::OnStartup && n < 0.0 {
                return Err(err(format!(
                    "unmarshal schedule yaml hook config: {b}: cannot unmarshal negative number {n} into uint"
                )));
            }
            cfg.orders.insert(b, n);
        }
    }
    match version {
        ConfigVersion::V1 => convert_v1(&doc, &mut cfg).map_err(err)?,
        ConfigVersion::V0 => convert_v0(&doc, &mut cfg).map_err(err)?,
    }
    Ok(cfg)
}

fn field<T: for<'de> Deserialize<'de>>(doc: &Value, key: &str) -> Result<Option<T>, String> {
    match doc.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => serde_json::from_value(v.clone())
            .map(Some)
            .map_err(|e| format!("unmarshal {key}: {e}")),
    }
}

fn convert_v1(doc: &Value, cfg: &mut HookConfig) -> Result<(), String> {
    for key in [
        "kubernetesValidating",
        "kubernetesMutating",
        "kubernetesCustomResourceConversion",
    ] {
        if doc.get(key).is_some() {
            return Err(format!(
                "{key} bindings are not supported by antiopa (admission and conversion webhooks need a webhook server)"
            ));
        }
    }
    if let Some(s) = field::<RawSettings>(doc, "settings")? {
        cfg.settings = Some(convert_settings(s)?);
    }

    let raw_kube: Vec<RawKubernetesV1> = field(doc, "kubernetes")?.unwrap_or_default();
    for (i, k) in raw_kube.into_iter().enumerate() {
        cfg.kubernetes.push(convert_kubernetes_v1(k, i)?);
    }
    for (i, k) in cfg.kubernetes.iter().enumerate() {
        if !k.include_snapshots_from.is_empty() {
            check_include_snapshots(&cfg.kubernetes, &k.include_snapshots_from)
                .map_err(|e| format!("invalid kubernetes config [{i}]: includeSnapshots {e}"))?;
        }
    }

    let raw_sched: Vec<RawScheduleV1> = field(doc, "schedule")?.unwrap_or_default();
    for (i, s) in raw_sched.into_iter().enumerate() {
        let mut problems = Vec::new();
        let crontab = Crontab::parse(&s.crontab);
        if let Err(e) = &crontab {
            problems.push(format!("crontab is invalid: {e}"));
        }
        if !s.include_snapshots_from.is_empty()
            && let Err(e) = check_include_snapshots(&cfg.kubernetes, &s.include_snapshots_from)
        {
            problems.push(format!("includeSnapshotsFrom is invalid: {e}"));
        }
        let crontab = match crontab {
            Ok(c) if problems.is_empty() => c,
            _ => {
                return Err(format!(
                    "invalid schedule config [{i}]: {}",
                    problems.join("; ")
                ));
            }
        };
        cfg.schedules.push(ScheduleBinding {
            name: if s.name.is_empty() {
                "schedule".into()
            } else {
                s.name
            },
            crontab,
            allow_failure: s.allow_failure,
            queue: if s.queue.is_empty() {
                "main".into()
            } else {
                s.queue
            },
            include_snapshots_from: s.include_snapshots_from,
            group: non_empty(s.group),
        });
    }

    // Every binding of a group sees the snapshots of all the group's bindings.
    let mut groups: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for k in &cfg.kubernetes {
        if let Some(g) = &k.group {
            groups.entry(g.clone()).or_default().push(k.name.clone());
        }
    }
    for k in &mut cfg.kubernetes {
        if let Some(names) = k.group.as_ref().and_then(|g| groups.get(g)) {
            k.include_snapshots_from = merge_arrays(&k.include_snapshots_from, names);
        }
    }
    for s in &mut cfg.schedules {
        if let Some(names) = s.group.as_ref().and_then(|g| groups.get(g)) {
            s.include_snapshots_from = merge_arrays(&s.include_snapshots_from, names);
        }
    }
    Ok(())
}

/// shell-operator's `MergeArrays`: `a` then the items of `b` not in `a`.
fn merge_arrays(a: &[String], b: &[String]) -> Vec<String> {
    let mut out = a.to_vec();
    for x in b {
        if !out.contains(x) {
            out.push(x.clone());
        }
    }
    out
}

fn non_empty(s: String) -> Option<String> {
    if s.is_empty() { None } else { Some(s) }
}

fn convert_settings(s: RawSettings) -> Result<Settings, String> {
    // shell-operator's CheckAndConvertSettings parses both fields; its
    // SettingsV1 struct types executionBurst as a string while the schema
    // demands an integer, so no config could pass there. Here the schema
    // wins: an integer burst, a Go duration interval; absent fields take the
    // rate limiter's neutral values (no interval, burst 1).
    let interval = match s.execution_min_interval.as_deref() {
        None => Duration::ZERO,
        Some(d) => {
            parse_go_duration(d).map_err(|e| format!("executionMinInterval is invalid: {e}"))?
        }
    };
    let burst = match s.execution_burst {
        None => 1,
        Some(v) => v
            .as_i64()
            .filter(|b| i32::try_from(*b).is_ok())
            .ok_or_else(|| format!("executionBurst is invalid: {v}"))?,
    };
    Ok(Settings {
        execution_min_interval: interval,
        execution_burst: burst,
    })
}

fn convert_kubernetes_v1(k: RawKubernetesV1, i: usize) -> Result<KubernetesBinding, String> {
    let mut problems = Vec::new();
    if !k.api_version.is_empty()
        && let Err(e) = check_api_version(&k.api_version)
    {
        problems.push(e);
    }
    if let Some(ls) = &k.label_selector
        && let Err(e) = check_label_selector(ls)
    {
        problems.push(format!("labelSelector is invalid: {e}"));
    }
    if let Some(fs) = &k.field_selector
        && let Err(e) = check_field_selector(fs)
    {
        problems.push(format!("fieldSelector is invalid: {e}"));
    }
    if let Some(ns) = k.namespace.as_ref().and_then(|n| n.label_selector.as_ref())
        && let Err(e) = check_label_selector(ns)
    {
        problems.push(format!("namespace.labelSelector is invalid: {e}"));
    }
    if k.name_selector
        .as_ref()
        .is_some_and(|n| !n.match_names.is_empty())
        && k.field_selector.as_ref().is_some_and(|f| {
            f.match_expressions
                .iter()
                .any(|e| e.field == "metadata.name")
        })
    {
        problems.push(
            "fieldSelector 'metadata.name' and nameSelector.matchNames are mutually exclusive"
                .into(),
        );
    }
    if !problems.is_empty() {
        return Err(format!(
            "invalid kubernetes config [{i}]: {}",
            problems.join("; ")
        ));
    }
    let jq_filter = if k.jq_filter.is_empty() {
        None
    } else {
        Some(
            JqFilter::compile(&k.jq_filter)
                .map_err(|e| format!("invalid kubernetes config [{i}] jqFilter: {e}"))?,
        )
    };
    // executeHookOnEvent wins over the older watchEvent; neither → all.
    let events = k
        .execute_hook_on_event
        .or(k.watch_event)
        .unwrap_or_else(|| vec![WatchEvent::Added, WatchEvent::Modified, WatchEvent::Deleted]);
    let named_queue = !k.queue.is_empty();
    Ok(KubernetesBinding {
        name: if k.name.is_empty() {
            "kubernetes".into()
        } else {
            k.name
        },
        api_version: non_empty(k.api_version),
        kind: k.kind,
        name_selector: k.name_selector,
        label_selector: k.label_selector,
        field_selector: k.field_selector,
        namespace: k.namespace,
        jq_filter,
        execute_hook_on_event: events,
        execute_hook_on_synchronization: k.execute_hook_on_synchronization.unwrap_or(true),
        // WaitForSynchronization can be disabled only for named queues.
        wait_for_synchronization: !(k.wait_for_synchronization == Some(false) && named_queue),
        keep_full_objects_in_memory: k.keep_full_objects_in_memory.unwrap_or(true),
        allow_failure: k.allow_failure,
        queue: if named_queue { k.queue } else { "main".into() },
        group: non_empty(k.group),
        include_snapshots_from: k.include_snapshots_from,
        resynchronization_period: k.resynchronization_period,
    })
}

fn convert_v0(doc: &Value, cfg: &mut HookConfig) -> Result<(), String> {
    let raw_sched: Vec<RawScheduleV0> = field(doc, "schedule")?.unwrap_or_default();
    for (i, s) in raw_sched.into_iter().enumerate() {
        let crontab = Crontab::parse(&s.crontab)
            .map_err(|e| format!("invalid schedule config [{i}]: crontab is invalid: {e}"))?;
        cfg.schedules.push(ScheduleBinding {
            name: if s.name.is_empty() {
                "schedule".into()
            } else {
                s.name
            },
            crontab,
            allow_failure: s.allow_failure,
            queue: "main".into(),
            include_snapshots_from: Vec::new(),
            group: None,
        });
    }
    let raw_kube: Vec<RawKubernetesV0> = field(doc, "onKubernetesEvent")?.unwrap_or_default();
    for k in raw_kube {
        let mut events = Vec::new();
        for e in &k.event {
            events.push(match e.as_str() {
                "add" => WatchEvent::Added,
                "update" => WatchEvent::Modified,
                "delete" => WatchEvent::Deleted,
                other => return Err(format!("event '{other}' is unsupported")),
            });
        }
        if events.is_empty() {
            events = vec![WatchEvent::Added, WatchEvent::Modified, WatchEvent::Deleted];
        }
        let jq_filter = if k.jq_filter.is_empty() {
            None
        } else {
            Some(
                JqFilter::compile(&k.jq_filter)
                    .map_err(|e| format!("kubernetes config [{}] jqFilter: {e}", k.name))?,
            )
        };
        let namespace = k
            .namespace_selector
            .filter(|n| !n.any)
            .map(|n| NamespaceSelector {
                name_selector: Some(NameSelector {
                    match_names: n.match_names,
                }),
                label_selector: None,
            });
        cfg.kubernetes.push(KubernetesBinding {
            name: if k.name.is_empty() {
                "onKubernetesEvent".into()
            } else {
                k.name
            },
            api_version: None,
            kind: k.kind,
            name_selector: non_empty(k.object_name).map(|n| NameSelector {
                match_names: vec![n],
            }),
            label_selector: k.selector,
            field_selector: None,
            namespace,
            jq_filter,
            execute_hook_on_event: events,
            execute_hook_on_synchronization: true,
            wait_for_synchronization: true,
            keep_full_objects_in_memory: true,
            allow_failure: k.allow_failure,
            queue: "main".into(),
            group: None,
            include_snapshots_from: Vec::new(),
            resynchronization_period: None,
        });
    }
    Ok(())
}

/// shell-operator's `CheckIncludeSnapshots`.
fn check_include_snapshots(kube: &[KubernetesBinding], includes: &[String]) -> Result<(), String> {
    for inc in includes {
        match kube.iter().filter(|k| &k.name == inc).count() {
            0 => return Err(format!("'{inc}' binding name not found")),
            1 => {}
            n => return Err(format!("there are {n} '{inc}' binding names")),
        }
    }
    Ok(())
}

/// apimachinery `schema.ParseGroupVersion`: "v1", "group/version".
fn check_api_version(s: &str) -> Result<(), String> {
    if s == "/" || s.matches('/').count() > 1 || s.starts_with('/') || s.ends_with('/') {
        return Err(format!(
            "apiVersion is invalid: unexpected GroupVersion string: {s}"
        ));
    }
    Ok(())
}

fn is_dns1123_subdomain(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.split('.').all(|p| {
            !p.is_empty()
                && p.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !p.starts_with('-')
                && !p.ends_with('-')
        })
}

fn is_label_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
        && s.as_bytes()
            .first()
            .is_some_and(|b| b.is_ascii_alphanumeric())
        && s.as_bytes()
            .last()
            .is_some_and(|b| b.is_ascii_alphanumeric())
}

/// apimachinery `validation.IsQualifiedName` (label keys).
fn check_label_key(k: &str) -> Result<(), String> {
    let ok = match k.split_once('/') {
        Some((prefix, name)) => is_dns1123_subdomain(prefix) && is_label_name(name),
        None => is_label_name(k),
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "key: Invalid value: \"{k}\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
        ))
    }
}

fn check_label_value(v: &str) -> Result<(), String> {
    if v.is_empty() || is_label_name(v) {
        Ok(())
    } else {
        Err(format!(
            "values[0]: Invalid value: \"{v}\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
        ))
    }
}

/// metav1.LabelSelectorAsSelector's checks.
fn check_label_selector(ls: &LabelSelector) -> Result<(), String> {
    for (k, v) in &ls.match_labels {
        check_label_key(k)?;
        check_label_value(v)?;
    }
    for e in &ls.match_expressions {
        check_label_key(&e.key)?;
        match e.operator.as_str() {
            "In" | "NotIn" => {
                if e.values.is_empty() {
                    return Err("values: Invalid value: []string(nil): for 'in', 'notin' operators, values set can't be empty".into());
                }
            }
            "Exists" | "DoesNotExist" => {
                if !e.values.is_empty() {
                    return Err(format!(
                        "values: Invalid value: {:?}: values set must be empty for exists and does not exist",
                        e.values
                    ));
                }
            }
            other => {
                return Err(format!(
                    "\"{other}\" is not a valid label selector operator"
                ));
            }
        }
        for v in &e.values {
            check_label_value(v)?;
        }
    }
    Ok(())
}

/// `FormatFieldSelector` builds "field=value,…" and parses it with
/// fields.ParseSelector, which rejects an empty field name.
fn check_field_selector(fs: &FieldSelector) -> Result<(), String> {
    for e in &fs.match_expressions {
        if e.field.is_empty() {
            return Err(format!("invalid selector: '{}{}'", e.operator, e.value));
        }
    }
    Ok(())
}

/// YAML (Helm's JSON model) to serde_json; integral floats become integers
/// so `onStartup: 10` validates as `type: integer`.
pub(crate) fn yaml_to_json(y: &crate::yaml::Yaml) -> Value {
    crate::yaml::json::to_serde(y)
}

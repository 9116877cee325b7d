//! Kubernetes protobuf request bodies (`Content-Type: application/vnd.kubernetes.protobuf`),
//! decoded into the JSON objects the fake stores.
//!
//! client-go's typed clientsets send built-in objects this way; helm's release store (typed
//! `Secrets(ns).Create/Update/Delete`) is the case that matters here. The wire form is
//! apimachinery's `runtime/serializer/protobuf` one: the 4-byte magic `k8s\0`, then a
//! `runtime.Unknown` envelope whose `typeMeta` names the object's apiVersion and kind and whose
//! `raw` holds the object's own message. The messages below are declared by hand with the field
//! numbers of the upstream schemas (nothing is generated at build time):
//!
//! - `k8s.io/apimachinery/pkg/runtime/generated.proto`: `Unknown`, `TypeMeta`;
//! - `k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto`: `ObjectMeta`, `OwnerReference`,
//!   `ManagedFieldsEntry`, `FieldsV1`, `Time`, `DeleteOptions`, `Preconditions`;
//! - `k8s.io/api/core/v1/generated.proto`: `Secret`, `ConfigMap`, `Namespace`, `NamespaceSpec`,
//!   `NamespaceStatus`, `NamespaceCondition`, `ServiceAccount`, `ObjectReference`,
//!   `LocalObjectReference`, `Service`, `ServiceSpec`, `ServicePort`, `ServiceStatus`,
//!   `SessionAffinityConfig`, `ClientIPConfig`, `LoadBalancerStatus`, `LoadBalancerIngress`,
//!   `PortStatus` (with meta/v1's `Condition` and `util/intstr/generated.proto`'s
//!   `IntOrString`);
//! - `k8s.io/api/rbac/v1/generated.proto`: `Role`, `ClusterRole`, `AggregationRule`,
//!   `PolicyRule`, `RoleBinding`, `ClusterRoleBinding`, `Subject`, `RoleRef` (with meta/v1's
//!   `LabelSelector`), which `kubectl create role|clusterrole|rolebinding|clusterrolebinding`
//!   send.
//!
//! The JSON produced is what Go's `encoding/json` writes for the same decoded struct (the form
//! the client would have sent had it used JSON): `omitempty` fields are left out when empty
//! (Go's generated marshallers write empty non-pointer scalars on the wire, so absence and
//! emptiness are not distinguished), pointer fields (`immutable`, `controller`, …) are kept
//! when present, byte maps become standard base64, and `metav1.Time` becomes RFC 3339 in
//! seconds. A zero `creationTimestamp` (Go writes `null`) is left out; the server sets it anyway.
//!
//! Kinds without a declaration here get [`DecodeError::Unsupported`], which the server turns
//! into the real apiserver's 415 `UnsupportedMediaType` Status (as for a resource that does
//! not serve protobuf), never a crash or a guess.

use std::collections::BTreeMap;

use base64::Engine;
use prost::Message;
use serde_json::{Map, Value, json};

/// The media type of Kubernetes protobuf bodies.
pub const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// `protoEncodingPrefix` of apimachinery's protobuf serializer.
pub const MAGIC: [u8; 4] = [0x6b, 0x38, 0x73, 0x00];

/// `runtime.TypeMeta` (runtime/generated.proto).
#[derive(Clone, PartialEq, Message)]
pub struct TypeMeta {
    #[prost(string, optional, tag = "1")]
    pub api_version: Option<String>,
    #[prost(string, optional, tag = "2")]
    pub kind: Option<String>,
}

/// `runtime.Unknown` (runtime/generated.proto): the envelope of every protobuf body.
#[derive(Clone, PartialEq, Message)]
pub struct Unknown {
    #[prost(message, optional, tag = "1")]
    pub type_meta: Option<TypeMeta>,
    #[prost(bytes = "vec", optional, tag = "2")]
    pub raw: Option<Vec<u8>>,
    #[prost(string, optional, tag = "3")]
    pub content_encoding: Option<String>,
    #[prost(string, optional, tag = "4")]
    pub content_type: Option<String>,
}

/// `metav1.Time` (meta/v1/generated.proto): a Timestamp; empty means Go's zero time.
#[derive(Clone, PartialEq, Message)]
pub struct Time {
    #[prost(int64, optional, tag = "1")]
    pub seconds: Option<i64>,
    #[prost(int32, optional, tag = "2")]
    pub nanos: Option<i32>,
}

/// `metav1.OwnerReference`.
#[derive(Clone, PartialEq, Message)]
pub struct OwnerReference {
    #[prost(string, optional, tag = "1")]
    pub kind: Option<String>,
    #[prost(string, optional, tag = "3")]
    pub name: Option<String>,
    #[prost(string, optional, tag = "4")]
    pub uid: Option<String>,
    #[prost(string, optional, tag = "5")]
    pub api_version: Option<String>,
    #[prost(bool, optional, tag = "6")]
    pub controller: Option<bool>,
    #[prost(bool, optional, tag = "7")]
    pub block_owner_deletion: Option<bool>,
}

/// `metav1.FieldsV1`: the raw JSON of a field set.
#[derive(Clone, PartialEq, Message)]
pub struct FieldsV1 {
    #[prost(bytes = "vec", optional, tag = "1")]
    pub raw: Option<Vec<u8>>,
}

/// `metav1.ManagedFieldsEntry`.
#[derive(Clone, PartialEq, Message)]
pub struct ManagedFieldsEntry {
    #[prost(string, optional, tag = "1")]
    pub manager: Option<String>,
    #[prost(string, optional, tag = "2")]
    pub operation: Option<String>,
    #[prost(string, optional, tag = "3")]
    pub api_version: Option<String>,
    #[prost(message, optional, tag = "4")]
    pub time: Option<Time>,
    #[prost(string, optional, tag = "6")]
    pub fields_type: Option<String>,
    #[prost(message, optional, tag = "7")]
    pub fields_v1: Option<FieldsV1>,
    #[prost(string, optional, tag = "8")]
    pub subresource: Option<String>,
}

/// `metav1.ObjectMeta`.
#[derive(Clone, PartialEq, Message)]
pub struct ObjectMeta {
    #[prost(string, optional, tag = "1")]
    pub name: Option<String>,
    #[prost(string, optional, tag = "2")]
    pub generate_name: Option<String>,
    #[prost(string, optional, tag = "3")]
    pub namespace: Option<String>,
    #[prost(string, optional, tag = "4")]
    pub self_link: Option<String>,
    #[prost(string, optional, tag = "5")]
    pub uid: Option<String>,
    #[prost(string, optional, tag = "6")]
    pub resource_version: Option<String>,
    #[prost(int64, optional, tag = "7")]
    pub generation: Option<i64>,
    #[prost(message, optional, tag = "8")]
    pub creation_timestamp: Option<Time>,
    #[prost(message, optional, tag = "9")]
    pub deletion_timestamp: Option<Time>,
    #[prost(int64, optional, tag = "10")]
    pub deletion_grace_period_seconds: Option<i64>,
    #[prost(btree_map = "string, string", tag = "11")]
    pub labels: BTreeMap<String, String>,
    #[prost(btree_map = "string, string", tag = "12")]
    pub annotations: BTreeMap<String, String>,
    #[prost(message, repeated, tag = "13")]
    pub owner_references: Vec<OwnerReference>,
    #[prost(string, repeated, tag = "14")]
    pub finalizers: Vec<String>,
    #[prost(message, repeated, tag = "17")]
    pub managed_fields: Vec<ManagedFieldsEntry>,
}

/// `metav1.Preconditions`.
#[derive(Clone, PartialEq, Message)]
pub struct Preconditions {
    #[prost(string, optional, tag = "1")]
    pub uid: Option<String>,
    #[prost(string, optional, tag = "2")]
    pub resource_version: Option<String>,
}

/// `metav1.DeleteOptions`.
#[derive(Clone, PartialEq, Message)]
pub struct DeleteOptions {
    #[prost(int64, optional, tag = "1")]
    pub grace_period_seconds: Option<i64>,
    #[prost(message, optional, tag = "2")]
    pub preconditions: Option<Preconditions>,
    #[prost(bool, optional, tag = "3")]
    pub orphan_dependents: Option<bool>,
    #[prost(string, optional, tag = "4")]
    pub propagation_policy: Option<String>,
    #[prost(string, repeated, tag = "5")]
    pub dry_run: Vec<String>,
    #[prost(bool, optional, tag = "6")]
    pub ignore_store_read_error_with_cluster_breaking_potential: Option<bool>,
}

/// `v1.Secret` (core/v1/generated.proto).
#[derive(Clone, PartialEq, Message)]
pub struct Secret {
    #[prost(message, optional, tag = "1")]
    pub metadata: Option<ObjectMeta>,
    #[prost(btree_map = "string, bytes", tag = "2")]
    pub data: BTreeMap<String, Vec<u8>>,
    #[prost(string, optional, tag = "3")]
    pub r#type: Option<String>,
    #[prost(btree_map = "string, string", tag = "4")]
    pub string_data: BTreeMap<String, String>,
    #[prost(bool, optional, tag = "5")]
    pub immutable: Option<bool>,
}

/// `v1.ConfigMap`.
#[derive(Clone, PartialEq, Message)]
pub struct ConfigMap {
    #[prost(message, optional, tag = "1")]
    pub metadata: Option<ObjectMeta>,
    #[prost(btree_map = "string, string", tag = "2")]
    pub data: BTreeMap<String, String>,
    #[prost(btree_map = "string, bytes", tag = "3")]
    pub binary_data: BTreeMap<String, Vec<u8>>,
    #[prost(bool, optional, tag = "4")]
    pub immutable: Option<bool>,
}

/// `v1.NamespaceSpec`.
#[derive(Clone, PartialEq, Message)]
pub struct NamespaceSpec {
    #[prost(string, repeated, tag = "1")]
    pub finalizers: Vec<String>,
}

/// `v1.NamespaceCondition`.
#[derive(Clone, PartialEq, Message)]
pub struct NamespaceCondition {
    #[prost(string, optional, tag = "1")]
    pub r#type: Option<String>,
    #[prost(string, optional, tag = "2")]
    pub status: Option<String>,
    #[prost(message, optional, tag = "4")]
    pub last_transition_time: Option<Time>,
    #[prost(string, optional, tag = "5")]
    pub reason: Option<String>,
    #[prost(string, optional, tag = "6")]
    pub message: Option<String>,
}

/// `v1.NamespaceStatus`.
#[derive(Clone, PartialEq, Message)]
pub struct NamespaceStatus {
    #[prost(string, optional, tag = "1")]
    pub phase: Option<String>,
    #[prost(message, repeated, tag = "2")]
    pub conditions: Vec<NamespaceCondition>,
}

/// `v1.Namespace`.
#[derive(Clone, PartialEq, Message)]
pub struct Namespace {
    #[prost(message, optional, tag = "1")]
    pub metadata: Option<ObjectMeta>,
    #[prost(message, optional, tag = "2")]
    pub spec: Option<NamespaceSpec>,
    #[prost(message, optional, tag = "3")]
    pub status: Option<NamespaceStatus>,
}

/// `v1.ObjectReference`.
#[derive(Clone, PartialEq, Message)]
pub struct ObjectReference {
    #[prost(string, optional, tag = "1")]
    pub kind: Option<String>,
    #[prost(string, optional, tag = "2")]
    pub namespace: Option<String>,
    #[prost(string, optional, tag = "3")]
    pub name: Option<String>,
    #[prost(string, optional, tag = "4")]
    pub uid: Option<String>,
    #[prost(string, optional, tag = "5")]
    pub api_version: Option<String>,
    #[prost(string, optional, tag = "6")]
    pub resource_version: Option<String>,
    #[prost(string, optional, tag = "7")]
    pub field_path: Option<String>,
}

/// `v1.LocalObjectReference`.
#[derive(Clone, PartialEq, Message)]
pub struct LocalObjectReference {
    #[prost(string, optional, tag = "1")]
    pub name: Option<String>,
}

/// `v1.ServiceAccount`.
#[derive(Clone, PartialEq, Message)]
pub struct ServiceAccount {
    #[prost(message, optional, tag = "1")]
    pub metadata: Option<ObjectMeta>,
    #[prost(message, repeated, tag = "2")]
    pub secrets: Vec<ObjectReference>,
    #[prost(message, repeated, tag = "3")]
    pub image_pull_secrets: Vec<LocalObjectReference>,
    #[prost(bool, optional, tag = "4")]
    pub automount_service_account_token: Option<bool>,
}

/// `metav1.LabelSelectorRequirement`.
#[derive(Clone, PartialEq, Message)]
pub struct LabelSelectorRequirement {
    #[prost(string, optional, tag = "1")]
    pub key: Option<String>,
    #[prost(string, optional, tag = "2")]
    pub operator: Option<String>,
    #[prost(string, repeated, tag = "3")]
    pub values: Vec<String>,
}

/// `metav1.LabelSelector`.
#[derive(Clone, PartialEq, Message)]
pub struct LabelSelector {
    #[prost(btree_map = "string, string", tag = "1")]
    pub match_labels: BTreeMap<String, String>,
    #[prost(message, repeated, tag = "2")]
    pub match_expressions: Vec<LabelSelectorRequirement>,
}

/// `rbacv1.PolicyRule`.
#[derive(Clone, PartialEq, Message)]
pub struct PolicyRule {
    #[prost(string, repeated, tag = "1")]
    pub verbs: Vec<String>,
    #[prost(string, repeated, tag = "2")]
    pub api_groups: Vec<String>,
    #[prost(string, repeated, tag = "3")]
    pub resources: Vec<String>,
    #[prost(string, repeated, tag = "4")]
    pub resource_names: Vec<String>,
    #[prost(string, repeated, tag = "5")]
    pub non_resource_urls: Vec<String>,
}

/// `rbacv1.AggregationRule`.
#[derive(Clone, PartialEq, Message)]
pub struct AggregationRule {
    #[prost(message, repeated, tag = "1")]
    pub cluster_role_selectors: Vec<LabelSelector>,
}

/// `rbacv1.Role` and `rbacv1.ClusterRole` (a Role never carries field 3).
#[derive(Clone, PartialEq, Message)]
pub struct Role {
    #[prost(message, optional, tag = "1")]
    pub metadata: Option<ObjectMeta>,
    #[prost(message, repeated, tag = "2")]
    pub rules: Vec<PolicyRule>,
    #[prost(message, optional, tag = "3")]
    pub aggregation_rule: Option<AggregationRule>,
}

/// `rbacv1.Subject`.
#[derive(Clone, PartialEq, Message)]
pub struct Subject {
    #[prost(string, optional, tag = "1")]
    pub kind: Option<String>,
    #[prost(string, optional, tag = "2")]
    pub api_group: Option<String>,
    #[prost(string, optional, tag = "3")]
    pub name: Option<String>,
    #[prost(string, optional, tag = "4")]
    pub namespace: Option<String>,
}

/// `rbacv1.RoleRef`.
#[derive(Clone, PartialEq, Message)]
pub struct RoleRef {
    #[prost(string, optional, tag = "1")]
    pub api_group: Option<String>,
    #[prost(string, optional, tag = "2")]
    pub kind: Option<String>,
    #[prost(string, optional, tag = "3")]
    pub name: Option<String>,
}

/// `rbacv1.RoleBinding` and `rbacv1.ClusterRoleBinding`.
#[derive(Clone, PartialEq, Message)]
pub struct RoleBinding {
    #[prost(message, optional, tag = "1")]
    pub metadata: Option<ObjectMeta>,
    #[prost(message, repeated, tag = "2")]
    pub subjects: Vec<Subject>,
    #[prost(message, optional, tag = "3")]
    pub role_ref: Option<RoleRef>,
}

/// `intstr.IntOrString` (util/intstr/generated.proto): type 0 is an int, 1 a string.
#[derive(Clone, PartialEq, Message)]
pub struct IntOrString {
    #[prost(int64, optional, tag = "1")]
    pub r#type: Option<i64>,
    #[prost(int32, optional, tag = "2")]
    pub int_val: Option<i32>,
    #[prost(string, optional, tag = "3")]
    pub str_val: Option<String>,
}

/// `v1.ServicePort`.
#[derive(Clone, PartialEq, Message)]
pub struct ServicePort {
    #[prost(string, optional, tag = "1")]
    pub name: Option<String>,
    #[prost(string, optional, tag = "2")]
    pub protocol: Option<String>,
    #[prost(int32, optional, tag = "3")]
    pub port: Option<i32>,
    #[prost(message, optional, tag = "4")]
    pub target_port: Option<IntOrString>,
    #[prost(int32, optional, tag = "5")]
    pub node_port: Option<i32>,
    #[prost(string, optional, tag = "6")]
    pub app_protocol: Option<String>,
}

/// `v1.ClientIPConfig`.
#[derive(Clone, PartialEq, Message)]
pub struct ClientIpConfig {
    #[prost(int32, optional, tag = "1")]
    pub timeout_seconds: Option<i32>,
}

/// `v1.SessionAffinityConfig`.
#[derive(Clone, PartialEq, Message)]
pub struct SessionAffinityConfig {
    #[prost(message, optional, tag = "1")]
    pub client_ip: Option<ClientIpConfig>,
}

/// `v1.ServiceSpec`.
#[derive(Clone, PartialEq, Message)]
pub struct ServiceSpec {
    #[prost(message, repeated, tag = "1")]
    pub ports: Vec<ServicePort>,
    #[prost(btree_map = "string, string", tag = "2")]
    pub selector: BTreeMap<String, String>,
    #[prost(string, optional, tag = "3")]
    pub cluster_ip: Option<String>,
    #[prost(string, optional, tag = "4")]
    pub r#type: Option<String>,
    #[prost(string, repeated, tag = "5")]
    pub external_ips: Vec<String>,
    #[prost(string, optional, tag = "7")]
    pub session_affinity: Option<String>,
    #[prost(string, optional, tag = "8")]
    pub load_balancer_ip: Option<String>,
    #[prost(string, repeated, tag = "9")]
    pub load_balancer_source_ranges: Vec<String>,
    #[prost(string, optional, tag = "10")]
    pub external_name: Option<String>,
    #[prost(string, optional, tag = "11")]
    pub external_traffic_policy: Option<String>,
    #[prost(int32, optional, tag = "12")]
    pub health_check_node_port: Option<i32>,
    #[prost(bool, optional, tag = "13")]
    pub publish_not_ready_addresses: Option<bool>,
    #[prost(message, optional, tag = "14")]
    pub session_affinity_config: Option<SessionAffinityConfig>,
    #[prost(string, optional, tag = "17")]
    pub ip_family_policy: Option<String>,
    #[prost(string, repeated, tag = "18")]
    pub cluster_ips: Vec<String>,
    #[prost(string, repeated, tag = "19")]
    pub ip_families: Vec<String>,
    #[prost(bool, optional, tag = "20")]
    pub allocate_load_balancer_node_ports: Option<bool>,
    #[prost(string, optional, tag = "21")]
    pub load_balancer_class: Option<String>,
    #[prost(string, optional, tag = "22")]
    pub internal_traffic_policy: Option<String>,
    #[prost(string, optional, tag = "23")]
    pub traffic_distribution: Option<String>,
}

/// `v1.PortStatus`.
#[derive(Clone, PartialEq, Message)]
pub struct PortStatus {
    #[prost(int32, optional, tag = "1")]
    pub port: Option<i32>,
    #[prost(string, optional, tag = "2")]
    pub protocol: Option<String>,
    #[prost(string, optional, tag = "3")]
    pub error: Option<String>,
}

/// `v1.LoadBalancerIngress`.
#[derive(Clone, PartialEq, Message)]
pub struct LoadBalancerIngress {
    #[prost(string, optional, tag = "1")]
    pub ip: Option<String>,
    #[prost(string, optional, tag = "2")]
    pub hostname: Option<String>,
    #[prost(string, optional, tag = "3")]
    pub ip_mode: Option<String>,
    #[prost(message, repeated, tag = "4")]
    pub ports: Vec<PortStatus>,
}

/// `v1.LoadBalancerStatus`.
#[derive(Clone, PartialEq, Message)]
pub struct LoadBalancerStatus {
    #[prost(message, repeated, tag = "1")]
    pub ingress: Vec<LoadBalancerIngress>,
}

/// `metav1.Condition`.
#[derive(Clone, PartialEq, Message)]
pub struct Condition {
    #[prost(string, optional, tag = "1")]
    pub r#type: Option<String>,
    #[prost(string, optional, tag = "2")]
    pub status: Option<String>,
    #[prost(int64, optional, tag = "3")]
    pub observed_generation: Option<i64>,
    #[prost(message, optional, tag = "4")]
    pub last_transition_time: Option<Time>,
    #[prost(string, optional, tag = "5")]
    pub reason: Option<String>,
    #[prost(string, optional, tag = "6")]
    pub message: Option<String>,
}

/// `v1.ServiceStatus`.
#[derive(Clone, PartialEq, Message)]
pub struct ServiceStatus {
    #[prost(message, optional, tag = "1")]
    pub load_balancer: Option<LoadBalancerStatus>,
    #[prost(message, repeated, tag = "2")]
    pub conditions: Vec<Condition>,
}

/// `v1.Service`.
#[derive(Clone, PartialEq, Message)]
pub struct Service {
    #[prost(message, optional, tag = "1")]
    pub metadata: Option<ObjectMeta>,
    #[prost(message, optional, tag = "2")]
    pub spec: Option<ServiceSpec>,
    #[prost(message, optional, tag = "3")]
    pub status: Option<ServiceStatus>,
}

/// Why a protobuf body could not become an object.
#[derive(Debug, Clone, PartialEq)]
pub enum DecodeError {
    /// A kind this fake has no protobuf declaration for (`apiVersion`, `kind`).
    Unsupported(String, String),
    /// Not a protobuf body, or a malformed one: the serializer's error text, and the
    /// `(version, kind)` when the envelope was read.
    Malformed {
        gvk: Option<(String, String)>,
        message: String,
    },
}

/// Wraps an object message in the `k8s\0` + `runtime.Unknown` envelope, as client-go's
/// protobuf serializer writes it (only `typeMeta` and `raw` set).
pub fn envelope(api_version: &str, kind: &str, raw: Vec<u8>) -> Vec<u8> {
    let unk = Unknown {
        type_meta: Some(TypeMeta {
            api_version: Some(api_version.to_string()),
            kind: Some(kind.to_string()),
        }),
        raw: Some(raw),
        content_encoding: Some(String::new()),
        content_type: Some(String::new()),
    };
    let mut out = MAGIC.to_vec();
    out.extend(unk.encode_to_vec());
    out
}

/// Decodes a protobuf body into JSON. `default_api_version`/`default_kind` fill an envelope
/// that leaves them empty, as the serializer's `copyKindDefaults` does with the kind the
/// request's URL implies.
pub fn decode(
    body: &[u8],
    default_api_version: &str,
    default_kind: &str,
) -> Result<Value, DecodeError> {
    // The checks and texts of `protobuf.Serializer.Decode`.
    if body.is_empty() {
        return Err(malformed(None, "empty data"));
    }
    let Some(data) = body.strip_prefix(&MAGIC[..]) else {
        return Err(malformed(
            None,
            &format!(
                "provided data does not appear to be a protobuf message, expected prefix {:?}",
                MAGIC
            ),
        ));
    };
    if data.is_empty() {
        return Err(malformed(None, "empty body"));
    }
    let unk = Unknown::decode(data).map_err(|e| malformed(None, &e.to_string()))?;
    let tm = unk.type_meta.unwrap_or_default();
    let nonempty = |s: Option<String>, d: &str| s.filter(|s| !s.is_empty()).unwrap_or(d.into());
    let api_version = nonempty(tm.api_version, default_api_version);
    let kind = nonempty(tm.kind, default_kind);
    let raw = unk.raw.unwrap_or_default();
    let version = api_version
        .rsplit('/')
        .next()
        .unwrap_or_default()
        .to_string();
    let gvk = Some((version, kind.clone()));
    let bad = |e: prost::DecodeError| malformed(gvk.clone(), &e.to_string());
    let mut obj = Map::new();
    obj.insert("kind".into(), json!(kind));
    obj.insert("apiVersion".into(), json!(api_version));
    match (api_version.as_str(), kind.as_str()) {
        ("v1", "Secret") => {
            let s = Secret::decode(raw.as_slice()).map_err(bad)?;
            obj.insert("metadata".into(), object_meta(s.metadata));
            bool_ptr(&mut obj, "immutable", s.immutable);
            if !s.data.is_empty() {
                obj.insert("data".into(), byte_map(s.data));
            }
            if !s.string_data.is_empty() {
                obj.insert("stringData".into(), json!(s.string_data));
            }
            string(&mut obj, "type", s.r#type);
        }
        ("v1", "ConfigMap") => {
            let c = ConfigMap::decode(raw.as_slice()).map_err(bad)?;
            obj.insert("metadata".into(), object_meta(c.metadata));
            bool_ptr(&mut obj, "immutable", c.immutable);
            if !c.data.is_empty() {
                obj.insert("data".into(), json!(c.data));
            }
            if !c.binary_data.is_empty() {
                obj.insert("binaryData".into(), byte_map(c.binary_data));
            }
        }
        ("v1", "Namespace") => {
            let n = Namespace::decode(raw.as_slice()).map_err(bad)?;
            obj.insert("metadata".into(), object_meta(n.metadata));
            // Go writes the non-pointer spec and status structs even when empty.
            let mut spec = Map::new();
            let finalizers = n.spec.unwrap_or_default().finalizers;
            if !finalizers.is_empty() {
                spec.insert("finalizers".into(), json!(finalizers));
            }
            obj.insert("spec".into(), Value::Object(spec));
            let st = n.status.unwrap_or_default();
            let mut status = Map::new();
            string(&mut status, "phase", st.phase);
            if !st.conditions.is_empty() {
                let conds = st.conditions.into_iter().map(|c| {
                    let mut m = Map::new();
                    string(&mut m, "type", c.r#type);
                    string(&mut m, "status", c.status);
                    if let Some(t) = time(c.last_transition_time) {
                        m.insert("lastTransitionTime".into(), t);
                    }
                    string(&mut m, "reason", c.reason);
                    string(&mut m, "message", c.message);
                    Value::Object(m)
                });
                status.insert("conditions".into(), Value::Array(conds.collect()));
            }
            obj.insert("status".into(), Value::Object(status));
        }
        ("v1", "Service") => {
            let svc = Service::decode(raw.as_slice()).map_err(bad)?;
            obj.insert("metadata".into(), object_meta(svc.metadata));
            obj.insert("spec".into(), service_spec(svc.spec.unwrap_or_default()));
            obj.insert(
                "status".into(),
                service_status(svc.status.unwrap_or_default()),
            );
        }
        ("v1", "ServiceAccount") => {
            let sa = ServiceAccount::decode(raw.as_slice()).map_err(bad)?;
            obj.insert("metadata".into(), object_meta(sa.metadata));
            if !sa.secrets.is_empty() {
                let refs = sa.secrets.into_iter().map(|r| {
                    let mut m = Map::new();
                    string(&mut m, "kind", r.kind);
                    string(&mut m, "namespace", r.namespace);
                    string(&mut m, "name", r.name);
                    string(&mut m, "uid", r.uid);
                    string(&mut m, "apiVersion", r.api_version);
                    string(&mut m, "resourceVersion", r.resource_version);
                    string(&mut m, "fieldPath", r.field_path);
                    Value::Object(m)
                });
                obj.insert("secrets".into(), Value::Array(refs.collect()));
            }
            if !sa.image_pull_secrets.is_empty() {
                let refs = sa.image_pull_secrets.into_iter().map(|r| {
                    let mut m = Map::new();
                    string(&mut m, "name", r.name);
                    Value::Object(m)
                });
                obj.insert("imagePullSecrets".into(), Value::Array(refs.collect()));
            }
            bool_ptr(
                &mut obj,
                "automountServiceAccountToken",
                sa.automount_service_account_token,
            );
        }
        ("rbac.authorization.k8s.io/v1", "Role" | "ClusterRole") => {
            let r = Role::decode(raw.as_slice()).map_err(bad)?;
            obj.insert("metadata".into(), object_meta(r.metadata));
            if !r.rules.is_empty() {
                obj.insert(
                    "rules".into(),
                    Value::Array(r.rules.into_iter().map(policy_rule).collect()),
                );
            }
            if kind == "ClusterRole"
                && let Some(a) = r.aggregation_rule
            {
                let mut m = Map::new();
                if !a.cluster_role_selectors.is_empty() {
                    let sels = a.cluster_role_selectors.into_iter().map(label_selector);
                    m.insert("clusterRoleSelectors".into(), Value::Array(sels.collect()));
                }
                obj.insert("aggregationRule".into(), Value::Object(m));
            }
        }
        ("rbac.authorization.k8s.io/v1", "RoleBinding" | "ClusterRoleBinding") => {
            let b = RoleBinding::decode(raw.as_slice()).map_err(bad)?;
            obj.insert("metadata".into(), object_meta(b.metadata));
            if !b.subjects.is_empty() {
                let subjects = b.subjects.into_iter().map(|x| {
                    // kind and name have no omitempty in Go.
                    let mut m = Map::new();
                    m.insert("kind".into(), json!(x.kind.unwrap_or_default()));
                    string(&mut m, "apiGroup", x.api_group);
                    m.insert("name".into(), json!(x.name.unwrap_or_default()));
                    string(&mut m, "namespace", x.namespace);
                    Value::Object(m)
                });
                obj.insert("subjects".into(), Value::Array(subjects.collect()));
            }
            let r = b.role_ref.unwrap_or_default();
            obj.insert(
                "roleRef".into(),
                json!({
                    "apiGroup": r.api_group.unwrap_or_default(),
                    "kind": r.kind.unwrap_or_default(),
                    "name": r.name.unwrap_or_default(),
                }),
            );
        }
        ("v1" | "meta.k8s.io/v1", "DeleteOptions") => {
            let d = DeleteOptions::decode(raw.as_slice()).map_err(bad)?;
            if let Some(g) = d.grace_period_seconds {
                obj.insert("gracePeriodSeconds".into(), json!(g));
            }
            if let Some(p) = d.preconditions {
                let mut m = Map::new();
                // Both are pointers in Go: present means set, even when empty.
                if let Some(u) = p.uid {
                    m.insert("uid".into(), json!(u));
                }
                if let Some(rv) = p.resource_version {
                    m.insert("resourceVersion".into(), json!(rv));
                }
                obj.insert("preconditions".into(), Value::Object(m));
            }
            bool_ptr(&mut obj, "orphanDependents", d.orphan_dependents);
            if let Some(p) = d.propagation_policy {
                obj.insert("propagationPolicy".into(), json!(p));
            }
            if !d.dry_run.is_empty() {
                obj.insert("dryRun".into(), json!(d.dry_run));
            }
            bool_ptr(
                &mut obj,
                "ignoreStoreReadErrorWithClusterBreakingPotential",
                d.ignore_store_read_error_with_cluster_breaking_potential,
            );
        }
        _ => return Err(DecodeError::Unsupported(api_version, kind)),
    }
    Ok(Value::Object(obj))
}

fn malformed(gvk: Option<(String, String)>, message: &str) -> DecodeError {
    DecodeError::Malformed {
        gvk,
        message: message.to_string(),
    }
}

/// A `omitempty` string field.
fn string(m: &mut Map<String, Value>, key: &str, v: Option<String>) {
    if let Some(s) = v.filter(|s| !s.is_empty()) {
        m.insert(key.into(), json!(s));
    }
}

/// A `*bool` field: kept when set.
fn bool_ptr(m: &mut Map<String, Value>, key: &str, v: Option<bool>) {
    if let Some(b) = v {
        m.insert(key.into(), json!(b));
    }
}

fn byte_map(m: BTreeMap<String, Vec<u8>>) -> Value {
    let b64 = base64::engine::general_purpose::STANDARD;
    Value::Object(
        m.into_iter()
            .map(|(k, v)| (k, json!(b64.encode(v))))
            .collect(),
    )
}

/// `intstr.IntOrString.MarshalJSON`.
fn int_or_string(v: IntOrString) -> Value {
    if v.r#type.unwrap_or(0) == 1 {
        json!(v.str_val.unwrap_or_default())
    } else {
        json!(v.int_val.unwrap_or(0))
    }
}

fn string_list(m: &mut Map<String, Value>, key: &str, list: Vec<String>) {
    if !list.is_empty() {
        m.insert(key.into(), json!(list));
    }
}

fn service_spec(s: ServiceSpec) -> Value {
    let mut m = Map::new();
    if !s.ports.is_empty() {
        let ports = s.ports.into_iter().map(|p| {
            let mut x = Map::new();
            string(&mut x, "name", p.name);
            string(&mut x, "protocol", p.protocol);
            if let Some(a) = p.app_protocol {
                x.insert("appProtocol".into(), json!(a));
            }
            // port has no omitempty; targetPort is a struct, which omitempty never drops.
            x.insert("port".into(), json!(p.port.unwrap_or(0)));
            x.insert(
                "targetPort".into(),
                int_or_string(p.target_port.unwrap_or_default()),
            );
            if let Some(n) = p.node_port.filter(|n| *n != 0) {
                x.insert("nodePort".into(), json!(n));
            }
            Value::Object(x)
        });
        m.insert("ports".into(), Value::Array(ports.collect()));
    }
    if !s.selector.is_empty() {
        m.insert("selector".into(), json!(s.selector));
    }
    string(&mut m, "clusterIP", s.cluster_ip);
    string_list(&mut m, "clusterIPs", s.cluster_ips);
    string(&mut m, "type", s.r#type);
    string_list(&mut m, "externalIPs", s.external_ips);
    string(&mut m, "sessionAffinity", s.session_affinity);
    string(&mut m, "loadBalancerIP", s.load_balancer_ip);
    string_list(
        &mut m,
        "loadBalancerSourceRanges",
        s.load_balancer_source_ranges,
    );
    string(&mut m, "externalName", s.external_name);
    string(&mut m, "externalTrafficPolicy", s.external_traffic_policy);
    if let Some(p) = s.health_check_node_port.filter(|p| *p != 0) {
        m.insert("healthCheckNodePort".into(), json!(p));
    }
    if s.publish_not_ready_addresses == Some(true) {
        m.insert("publishNotReadyAddresses".into(), json!(true));
    }
    if let Some(c) = s.session_affinity_config {
        let mut x = Map::new();
        if let Some(ip) = c.client_ip {
            let mut y = Map::new();
            if let Some(t) = ip.timeout_seconds {
                y.insert("timeoutSeconds".into(), json!(t));
            }
            x.insert("clientIP".into(), Value::Object(y));
        }
        m.insert("sessionAffinityConfig".into(), Value::Object(x));
    }
    string_list(&mut m, "ipFamilies", s.ip_families);
    // The rest are pointers in Go: kept when present.
    for (key, v) in [
        ("ipFamilyPolicy", s.ip_family_policy),
        ("loadBalancerClass", s.load_balancer_class),
        ("internalTrafficPolicy", s.internal_traffic_policy),
        ("trafficDistribution", s.traffic_distribution),
    ] {
        if let Some(v) = v {
            m.insert(key.into(), json!(v));
        }
    }
    bool_ptr(
        &mut m,
        "allocateLoadBalancerNodePorts",
        s.allocate_load_balancer_node_ports,
    );
    Value::Object(m)
}

fn service_status(s: ServiceStatus) -> Value {
    let mut lb = Map::new();
    let ingress = s.load_balancer.unwrap_or_default().ingress;
    if !ingress.is_empty() {
        let ingress = ingress.into_iter().map(|i| {
            let mut x = Map::new();
            string(&mut x, "ip", i.ip);
            string(&mut x, "hostname", i.hostname);
            if let Some(mode) = i.ip_mode {
                x.insert("ipMode".into(), json!(mode));
            }
            if !i.ports.is_empty() {
                let ports = i.ports.into_iter().map(|p| {
                    let mut y = Map::new();
                    y.insert("port".into(), json!(p.port.unwrap_or(0)));
                    y.insert("protocol".into(), json!(p.protocol.unwrap_or_default()));
                    if let Some(e) = p.error {
                        y.insert("error".into(), json!(e));
                    }
                    Value::Object(y)
                });
                x.insert("ports".into(), Value::Array(ports.collect()));
            }
            Value::Object(x)
        });
        lb.insert("ingress".into(), Value::Array(ingress.collect()));
    }
    let mut m = Map::new();
    m.insert("loadBalancer".into(), Value::Object(lb));
    if !s.conditions.is_empty() {
        let conds = s.conditions.into_iter().map(|c| {
            // Only observedGeneration is omitempty in metav1.Condition.
            let mut x = Map::new();
            x.insert("type".into(), json!(c.r#type.unwrap_or_default()));
            x.insert("status".into(), json!(c.status.unwrap_or_default()));
            if let Some(g) = c.observed_generation.filter(|g| *g != 0) {
                x.insert("observedGeneration".into(), json!(g));
            }
            x.insert(
                "lastTransitionTime".into(),
                time(c.last_transition_time).unwrap_or(Value::Null),
            );
            x.insert("reason".into(), json!(c.reason.unwrap_or_default()));
            x.insert("message".into(), json!(c.message.unwrap_or_default()));
            Value::Object(x)
        });
        m.insert("conditions".into(), Value::Array(conds.collect()));
    }
    Value::Object(m)
}

fn policy_rule(r: PolicyRule) -> Value {
    let mut m = Map::new();
    // verbs has no omitempty in Go (an empty list is written as null, which the server drops).
    if !r.verbs.is_empty() {
        m.insert("verbs".into(), json!(r.verbs));
    }
    for (key, list) in [
        ("apiGroups", r.api_groups),
        ("resources", r.resources),
        ("resourceNames", r.resource_names),
        ("nonResourceURLs", r.non_resource_urls),
    ] {
        if !list.is_empty() {
            m.insert(key.into(), json!(list));
        }
    }
    Value::Object(m)
}

fn label_selector(s: LabelSelector) -> Value {
    let mut m = Map::new();
    if !s.match_labels.is_empty() {
        m.insert("matchLabels".into(), json!(s.match_labels));
    }
    if !s.match_expressions.is_empty() {
        let exprs = s.match_expressions.into_iter().map(|e| {
            let mut x = Map::new();
            x.insert("key".into(), json!(e.key.unwrap_or_default()));
            x.insert("operator".into(), json!(e.operator.unwrap_or_default()));
            if !e.values.is_empty() {
                x.insert("values".into(), json!(e.values));
            }
            Value::Object(x)
        });
        m.insert("matchExpressions".into(), Value::Array(exprs.collect()));
    }
    Value::Object(m)
}

/// `metav1.Time` as Go's JSON writes it; `None` for the zero time (an empty message).
fn time(t: Option<Time>) -> Option<Value> {
    let t = t?;
    let secs = t.seconds.unwrap_or(0);
    if secs == 0 && t.nanos.unwrap_or(0) == 0 {
        return None;
    }
    let dt = chrono::DateTime::from_timestamp(secs, 0)?;
    Some(json!(dt.format("%Y-%m-%dT%H:%M:%SZ").to_string()))
}

fn object_meta(m: Option<ObjectMeta>) -> Value {
    let m = m.unwrap_or_default();
    let mut o = Map::new();
    string(&mut o, "name", m.name);
    string(&mut o, "generateName", m.generate_name);
    string(&mut o, "namespace", m.namespace);
    string(&mut o, "selfLink", m.self_link);
    string(&mut o, "uid", m.uid);
    string(&mut o, "resourceVersion", m.resource_version);
    if let Some(g) = m.generation.filter(|g| *g != 0) {
        o.insert("generation".into(), json!(g));
    }
    if let Some(t) = time(m.creation_timestamp) {
        o.insert("creationTimestamp".into(), t);
    }
    if let Some(t) = time(m.deletion_timestamp) {
        o.insert("deletionTimestamp".into(), t);
    }
    if let Some(g) = m.deletion_grace_period_seconds {
        o.insert("deletionGracePeriodSeconds".into(), json!(g));
    }
    if !m.labels.is_empty() {
        o.insert("labels".into(), json!(m.labels));
    }
    if !m.annotations.is_empty() {
        o.insert("annotations".into(), json!(m.annotations));
    }
    if !m.owner_references.is_empty() {
        let refs = m.owner_references.into_iter().map(|r| {
            // apiVersion, kind, name and uid have no omitempty in Go.
            let mut x = Map::new();
            x.insert(
                "apiVersion".into(),
                json!(r.api_version.unwrap_or_default()),
            );
            x.insert("kind".into(), json!(r.kind.unwrap_or_default()));
            x.insert("name".into(), json!(r.name.unwrap_or_default()));
            x.insert("uid".into(), json!(r.uid.unwrap_or_default()));
            bool_ptr(&mut x, "controller", r.controller);
            bool_ptr(&mut x, "blockOwnerDeletion", r.block_owner_deletion);
            Value::Object(x)
        });
        o.insert("ownerReferences".into(), Value::Array(refs.collect()));
    }
    if !m.finalizers.is_empty() {
        o.insert("finalizers".into(), json!(m.finalizers));
    }
    if !m.managed_fields.is_empty() {
        let entries = m.managed_fields.into_iter().map(|e| {
            let mut x = Map::new();
            string(&mut x, "manager", e.manager);
            string(&mut x, "operation", e.operation);
            string(&mut x, "apiVersion", e.api_version);
            if let Some(t) = time(e.time) {
                x.insert("time".into(), t);
            }
            string(&mut x, "fieldsType", e.fields_type);
            if let Some(raw) = e.fields_v1.and_then(|f| f.raw) {
                let v = serde_json::from_slice(&raw).unwrap_or(Value::Null);
                x.insert("fieldsV1".into(), v);
            }
            string(&mut x, "subresource", e.subresource);
            Value::Object(x)
        });
        o.insert("managedFields".into(), Value::Array(entries.collect()));
    }
    Value::Object(o)
}

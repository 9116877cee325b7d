//! The resource table: every served group/version/resource, from which routing and discovery are
//! both driven. Custom resources join it when a CustomResourceDefinition is created.

use serde_json::{Value, json};

/// One served resource in one version.
#[derive(Clone, Debug, PartialEq)]
pub struct Resource {
    pub group: String,
    pub version: String,
    pub plural: String,
    pub singular: String,
    pub kind: String,
    pub namespaced: bool,
    /// Has a `/status` subresource: writes to the main resource keep the stored status.
    pub status: bool,
    /// Has `spec`-driven `metadata.generation`.
    pub generation: bool,
    pub short_names: Vec<String>,
    /// Added by a CRD (its name), rather than built in.
    pub crd: Option<String>,
}

impl Resource {
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The storage key: objects are shared across the versions of one group/resource.
    pub fn key(&self) -> (String, String) {
        (self.group.clone(), self.plural.clone())
    }

    /// The APIResource entry of an APIResourceList.
    pub fn discovery(&self) -> Value {
        let verbs = [
            "create",
            "delete",
            "deletecollection",
            "get",
            "list",
            "patch",
            "update",
            "watch",
        ];
        let mut v = json!({
            "name": self.plural,
            "singularName": self.singular,
            "namespaced": self.namespaced,
            "kind": self.kind,
            "verbs": verbs,
        });
        if !self.short_names.is_empty() {
            v["shortNames"] = json!(self.short_names);
        }
        v
    }
}

struct Builtin {
    group: &'static str,
    version: &'static str,
    plural: &'static str,
    kind: &'static str,
    namespaced: bool,
    status: bool,
    short: &'static [&'static str],
}

const fn b(
    group: &'static str,
    version: &'static str,
    plural: &'static str,
    kind: &'static str,
    namespaced: bool,
    status: bool,
    short: &'static [&'static str],
) -> Builtin {
    Builtin {
        group,
        version,
        plural,
        kind,
        namespaced,
        status,
        short,
    }
}

const BUILTINS: &[Builtin] = &[
    b("", "v1", "namespaces", "Namespace", false, true, &["ns"]),
    b("", "v1", "configmaps", "ConfigMap", true, false, &["cm"]),
    b("", "v1", "secrets", "Secret", true, false, &[]),
    b("", "v1", "services", "Service", true, true, &["svc"]),
    b(
        "",
        "v1",
        "serviceaccounts",
        "ServiceAccount",
        true,
        false,
        &["sa"],
    ),
    b("", "v1", "pods", "Pod", true, true, &["po"]),
    b("", "v1", "endpoints", "Endpoints", true, false, &["ep"]),
    b(
        "",
        "v1",
        "persistentvolumeclaims",
        "PersistentVolumeClaim",
        true,
        true,
        &["pvc"],
    ),
    b(
        "",
        "v1",
        "persistentvolumes",
        "PersistentVolume",
        false,
        true,
        &["pv"],
    ),
    b("", "v1", "nodes", "Node", false, true, &["no"]),
    b("", "v1", "events", "Event", true, false, &["ev"]),
    b(
        "",
        "v1",
        "limitranges",
        "LimitRange",
        true,
        false,
        &["limits"],
    ),
    b(
        "",
        "v1",
        "resourcequotas",
        "ResourceQuota",
        true,
        true,
        &["quota"],
    ),
    b(
        "apps",
        "v1",
        "deployments",
        "Deployment",
        true,
        true,
        &["deploy"],
    ),
    b(
        "apps",
        "v1",
        "statefulsets",
        "StatefulSet",
        true,
        true,
        &["sts"],
    ),
    b("apps", "v1", "daemonsets", "DaemonSet", true, true, &["ds"]),
    b(
        "apps",
        "v1",
        "replicasets",
        "ReplicaSet",
        true,
        true,
        &["rs"],
    ),
    b("batch", "v1", "jobs", "Job", true, true, &[]),
    b("batch", "v1", "cronjobs", "CronJob", true, true, &["cj"]),
    b(
        "rbac.authorization.k8s.io",
        "v1",
        "roles",
        "Role",
        true,
        false,
        &[],
    ),
    b(
        "rbac.authorization.k8s.io",
        "v1",
        "rolebindings",
        "RoleBinding",
        true,
        false,
        &[],
    ),
    b(
        "rbac.authorization.k8s.io",
        "v1",
        "clusterroles",
        "ClusterRole",
        false,
        false,
        &[],
    ),
    b(
        "rbac.authorization.k8s.io",
        "v1",
        "clusterrolebindings",
        "ClusterRoleBinding",
        false,
        false,
        &[],
    ),
    b(
        "networking.k8s.io",
        "v1",
        "ingresses",
        "Ingress",
        true,
        true,
        &["ing"],
    ),
    b(
        "networking.k8s.io",
        "v1",
        "networkpolicies",
        "NetworkPolicy",
        true,
        false,
        &["netpol"],
    ),
    b(
        "networking.k8s.io",
        "v1",
        "ingressclasses",
        "IngressClass",
        false,
        false,
        &[],
    ),
    b(
        "policy",
        "v1",
        "poddisruptionbudgets",
        "PodDisruptionBudget",
        true,
        true,
        &["pdb"],
    ),
    b(
        "apiextensions.k8s.io",
        "v1",
        "customresourcedefinitions",
        "CustomResourceDefinition",
        false,
        true,
        &["crd", "crds"],
    ),
    b(
        "admissionregistration.k8s.io",
        "v1",
        "validatingwebhookconfigurations",
        "ValidatingWebhookConfiguration",
        false,
        false,
        &[],
    ),
    b(
        "admissionregistration.k8s.io",
        "v1",
        "mutatingwebhookconfigurations",
        "MutatingWebhookConfiguration",
        false,
        false,
        &[],
    ),
    b(
        "storage.k8s.io",
        "v1",
        "storageclasses",
        "StorageClass",
        false,
        false,
        &["sc"],
    ),
    b(
        "storage.k8s.io",
        "v1",
        "csidrivers",
        "CSIDriver",
        false,
        false,
        &[],
    ),
    b(
        "storage.k8s.io",
        "v1",
        "volumeattachments",
        "VolumeAttachment",
        false,
        true,
        &[],
    ),
    b(
        "autoscaling",
        "v2",
        "horizontalpodautoscalers",
        "HorizontalPodAutoscaler",
        true,
        true,
        &["hpa"],
    ),
    b(
        "autoscaling",
        "v1",
        "horizontalpodautoscalers",
        "HorizontalPodAutoscaler",
        true,
        true,
        &["hpa"],
    ),
    b(
        "coordination.k8s.io",
        "v1",
        "leases",
        "Lease",
        true,
        false,
        &[],
    ),
    b(
        "scheduling.k8s.io",
        "v1",
        "priorityclasses",
        "PriorityClass",
        false,
        false,
        &["pc"],
    ),
];

/// The built-in resources.
pub fn builtins() -> Vec<Resource> {
    BUILTINS
        .iter()
        .map(|b| Resource {
            group: b.group.to_string(),
            version: b.version.to_string(),
            plural: b.plural.to_string(),
            singular: b.kind.to_lowercase(),
            kind: b.kind.to_string(),
            namespaced: b.namespaced,
            status: b.status,
            generation: b.status && !matches!(b.kind, "Namespace" | "Node" | "Pod" | "Service"),
            short_names: b.short.iter().map(|s| s.to_string()).collect(),
            crd: None,
        })
        .collect()
}

/// The resources a CRD object serves (one per served version).
pub fn from_crd(crd: &Value) -> Vec<Resource> {
    let spec = &crd["spec"];
    let group = spec["group"].as_str().unwrap_or_default();
    let names = &spec["names"];
    let plural = names["plural"].as_str().unwrap_or_default();
    let kind = names["kind"].as_str().unwrap_or_default();
    if group.is_empty() || plural.is_empty() || kind.is_empty() {
        return Vec::new();
    }
    let singular = names["singular"]
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| kind.to_lowercase());
    let short_names: Vec<String> = names["shortNames"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let namespaced = spec["scope"].as_str() != Some("Cluster");
    let crd_name = crd["metadata"]["name"].as_str().map(str::to_string);
    spec["versions"]
        .as_array()
        .map(|vs| {
            vs.iter()
                .filter(|v| v["served"].as_bool().unwrap_or(true))
                .filter_map(|v| {
                    Some(Resource {
                        group: group.to_string(),
                        version: v["name"].as_str()?.to_string(),
                        plural: plural.to_string(),
                        singular: singular.clone(),
                        kind: kind.to_string(),
                        namespaced,
                        status: v["subresources"]["status"].is_object(),
                        generation: true,
                        short_names: short_names.clone(),
                        crd: crd_name.clone(),
                    })
                })
                .collect()
        })
        .unwrap_or_default()
}

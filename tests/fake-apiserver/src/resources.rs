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
        // The `all` category kubectl resolves `kubectl get all` through.
        let all = matches!(
            (self.group.as_str(), self.plural.as_str()),
            ("", "pods" | "services" | "replicationcontrollers")
                | (
                    "apps",
                    "deployments" | "statefulsets" | "daemonsets" | "replicasets"
                )
                | ("batch", "jobs" | "cronjobs")
                | ("autoscaling", "horizontalpodautoscalers")
        );
        if all {
            v["categories"] = json!(["all"]);
        }
        v
    }

    /// Has a `/scale` subresource (autoscaling/v1 Scale over `spec.replicas`).
    pub fn scale(&self) -> bool {
        self.group == "apps"
            && matches!(
                self.plural.as_str(),
                "deployments" | "statefulsets" | "replicasets"
            )
    }
}

/// The built-in resources: every listable type of the Kubernetes version the fake reports
/// (k8s-openapi's `v1_33`, see [`KUBERNETES_MINOR`]), in their stable versions only, as a real
/// server serves them by default (alpha and beta APIs are off unless enabled). Group, version,
/// kind, plural and scope come from the types; whether a `/status` subresource exists from
/// whether the type has a `status` field; short names (discovery data no schema carries) from
/// [`short_names`]. A test checks the list against k8s-openapi's sources.
pub fn builtins() -> Vec<Resource> {
    macro_rules! types {
        ($($t:ty),* $(,)?) => { vec![$(from_type::<$t>()),*] };
    }
    types![
        k8s_openapi::api::core::v1::ComponentStatus,
        k8s_openapi::api::core::v1::ConfigMap,
        k8s_openapi::api::core::v1::Endpoints,
        k8s_openapi::api::core::v1::Event,
        k8s_openapi::api::core::v1::LimitRange,
        k8s_openapi::api::core::v1::Namespace,
        k8s_openapi::api::core::v1::Node,
        k8s_openapi::api::core::v1::PersistentVolume,
        k8s_openapi::api::core::v1::PersistentVolumeClaim,
        k8s_openapi::api::core::v1::Pod,
        k8s_openapi::api::core::v1::PodTemplate,
        k8s_openapi::api::core::v1::ReplicationController,
        k8s_openapi::api::core::v1::ResourceQuota,
        k8s_openapi::api::core::v1::Secret,
        k8s_openapi::api::core::v1::Service,
        k8s_openapi::api::core::v1::ServiceAccount,
        k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration,
        k8s_openapi::api::admissionregistration::v1::ValidatingAdmissionPolicy,
        k8s_openapi::api::admissionregistration::v1::ValidatingAdmissionPolicyBinding,
        k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration,
        k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
        k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService,
        k8s_openapi::api::apps::v1::ControllerRevision,
        k8s_openapi::api::apps::v1::DaemonSet,
        k8s_openapi::api::apps::v1::Deployment,
        k8s_openapi::api::apps::v1::ReplicaSet,
        k8s_openapi::api::apps::v1::StatefulSet,
        k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler,
        k8s_openapi::api::autoscaling::v1::HorizontalPodAutoscaler,
        k8s_openapi::api::batch::v1::CronJob,
        k8s_openapi::api::batch::v1::Job,
        k8s_openapi::api::certificates::v1::CertificateSigningRequest,
        k8s_openapi::api::coordination::v1::Lease,
        k8s_openapi::api::discovery::v1::EndpointSlice,
        k8s_openapi::api::events::v1::Event,
        k8s_openapi::api::flowcontrol::v1::FlowSchema,
        k8s_openapi::api::flowcontrol::v1::PriorityLevelConfiguration,
        k8s_openapi::api::networking::v1::IPAddress,
        k8s_openapi::api::networking::v1::Ingress,
        k8s_openapi::api::networking::v1::IngressClass,
        k8s_openapi::api::networking::v1::NetworkPolicy,
        k8s_openapi::api::networking::v1::ServiceCIDR,
        k8s_openapi::api::node::v1::RuntimeClass,
        k8s_openapi::api::policy::v1::PodDisruptionBudget,
        k8s_openapi::api::rbac::v1::ClusterRole,
        k8s_openapi::api::rbac::v1::ClusterRoleBinding,
        k8s_openapi::api::rbac::v1::Role,
        k8s_openapi::api::rbac::v1::RoleBinding,
        k8s_openapi::api::scheduling::v1::PriorityClass,
        k8s_openapi::api::storage::v1::CSIDriver,
        k8s_openapi::api::storage::v1::CSINode,
        k8s_openapi::api::storage::v1::CSIStorageCapacity,
        k8s_openapi::api::storage::v1::StorageClass,
        k8s_openapi::api::storage::v1::VolumeAttachment,
    ]
}

/// The Kubernetes minor version whose types [`builtins`] serves (and `/version` reports).
pub const KUBERNETES_MINOR: u32 = 33;

fn from_type<T>() -> Resource
where
    T: k8s_openapi::Resource + serde::de::DeserializeOwned + serde::Serialize + 'static,
{
    use std::any::TypeId;
    let namespaced =
        TypeId::of::<T::Scope>() == TypeId::of::<k8s_openapi::NamespaceResourceScope>();
    // A type with a `status` field keeps it through a round trip; serde drops unknown fields.
    let status = serde_json::from_value::<T>(json!({"status": {}}))
        .ok()
        .and_then(|o| serde_json::to_value(o).ok())
        .is_some_and(|v| v.get("status").is_some());
    let kind = T::KIND.to_string();
    Resource {
        group: T::GROUP.to_string(),
        version: T::VERSION.to_string(),
        plural: T::URL_PATH_SEGMENT.to_string(),
        singular: kind.to_lowercase(),
        namespaced,
        status,
        generation: status && !matches!(T::KIND, "Namespace" | "Node" | "Pod" | "Service"),
        short_names: short_names(T::GROUP, T::URL_PATH_SEGMENT)
            .iter()
            .map(|s| s.to_string())
            .collect(),
        kind,
        crd: None,
    }
}

/// Short names as a 1.33 server's discovery lists them.
fn short_names(group: &str, plural: &str) -> &'static [&'static str] {
    match (group, plural) {
        ("", "namespaces") => &["ns"],
        ("", "configmaps") => &["cm"],
        ("", "services") => &["svc"],
        ("", "serviceaccounts") => &["sa"],
        ("", "pods") => &["po"],
        ("", "endpoints") => &["ep"],
        ("", "persistentvolumeclaims") => &["pvc"],
        ("", "persistentvolumes") => &["pv"],
        ("", "nodes") => &["no"],
        ("", "events") | ("events.k8s.io", "events") => &["ev"],
        ("", "limitranges") => &["limits"],
        ("", "resourcequotas") => &["quota"],
        ("", "replicationcontrollers") => &["rc"],
        ("", "componentstatuses") => &["cs"],
        ("apps", "deployments") => &["deploy"],
        ("apps", "statefulsets") => &["sts"],
        ("apps", "daemonsets") => &["ds"],
        ("apps", "replicasets") => &["rs"],
        ("batch", "cronjobs") => &["cj"],
        ("networking.k8s.io", "ingresses") => &["ing"],
        ("networking.k8s.io", "networkpolicies") => &["netpol"],
        ("policy", "poddisruptionbudgets") => &["pdb"],
        ("apiextensions.k8s.io", "customresourcedefinitions") => &["crd", "crds"],
        ("storage.k8s.io", "storageclasses") => &["sc"],
        ("autoscaling", "horizontalpodautoscalers") => &["hpa"],
        ("scheduling.k8s.io", "priorityclasses") => &["pc"],
        ("certificates.k8s.io", "certificatesigningrequests") => &["csr"],
        _ => &[],
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;
    use std::path::{Path, PathBuf};

    /// k8s-openapi's sources for the served version, from cargo's registry.
    fn k8s_openapi_sources() -> Option<PathBuf> {
        let home = std::env::var_os("CARGO_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cargo")))?;
        let registry = std::fs::read_dir(home.join("registry/src")).ok()?;
        registry.flatten().find_map(|index| {
            let dir = index.path().join("k8s-openapi-0.29.0/src/v1_33");
            dir.is_dir().then_some(dir)
        })
    }

    fn listable(dir: &Path, out: &mut BTreeSet<(String, String)>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                listable(&p, out);
                continue;
            }
            let text = std::fs::read_to_string(&p).unwrap_or_default();
            if !text.contains("impl crate::ListableResource for") {
                continue;
            }
            let konst = |name: &str| {
                let at = text.find(&format!("const {name}: &'static str = \""))?;
                let rest = &text[at..];
                let start = rest.find('"')? + 1;
                let end = start + rest[start..].find('"')?;
                Some(rest[start..end].to_string())
            };
            if let (Some(av), Some(kind)) = (konst("API_VERSION"), konst("KIND")) {
                let version = av.rsplit('/').next().unwrap_or_default();
                if !version.contains("alpha") && !version.contains("beta") {
                    out.insert((av, kind));
                }
            }
        }
    }

    #[test]
    fn builtin_types_are_every_listable_stable_type() {
        let Some(dir) = k8s_openapi_sources() else {
            eprintln!("skipped: k8s-openapi 0.29.0 sources not found in cargo's registry");
            return;
        };
        let mut want = BTreeSet::new();
        listable(&dir, &mut want);
        let served: BTreeSet<(String, String)> = builtins()
            .iter()
            .map(|r| (r.api_version(), r.kind.clone()))
            .collect();
        assert_eq!(served, want);
        let find = |plural: &str| builtins().into_iter().find(|r| r.plural == plural).unwrap();
        assert!(find("apiservices").status && !find("apiservices").namespaced);
        assert!(find("deployments").status && find("deployments").namespaced);
        assert!(!find("configmaps").status);
    }
}

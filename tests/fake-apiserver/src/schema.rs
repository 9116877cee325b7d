//! The merge schema: which lists are list-maps (and by which keys), which are sets, and which maps
//! and structs are atomic.
//!
//! The real apiserver reads this from the OpenAPI extensions (`x-kubernetes-list-type`,
//! `x-kubernetes-list-map-keys`, `x-kubernetes-map-type`); this fake uses a hand-written table of the
//! built-in types antiopa's tests touch. Lists default to atomic and maps to granular, which is also
//! what custom resources without list annotations get. A path is the sequence of field names from
//! the object root (list items add no segment), e.g. `spec.template.spec.containers.ports`.

/// How a list merges and is owned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ListType {
    /// Owned and replaced whole.
    Atomic,
    /// Items keyed by these fields (`x-kubernetes-list-type: map`).
    Map(&'static [&'static str]),
    /// Items are scalar set members (`x-kubernetes-list-type: set`).
    Set,
}

/// Where the pod spec lives in each built-in workload kind.
fn pod_spec_prefix(group: &str, kind: &str) -> Option<&'static [&'static str]> {
    match (group, kind) {
        ("", "Pod") => Some(&["spec"]),
        ("", "PodTemplate") => Some(&["template", "spec"]),
        ("", "ReplicationController")
        | ("apps", "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet")
        | ("batch", "Job") => Some(&["spec", "template", "spec"]),
        ("batch", "CronJob") => Some(&["spec", "jobTemplate", "spec", "template", "spec"]),
        _ => None,
    }
}

fn strip<'a>(path: &'a [&'a str], prefix: &[&str]) -> Option<&'a [&'a str]> {
    if path.len() >= prefix.len() && path[..prefix.len()] == *prefix {
        Some(&path[prefix.len()..])
    } else {
        None
    }
}

/// Whether this resource is one of the built-in types the table describes (custom resources get
/// the default rules: atomic lists, granular maps).
fn builtin(group: &str) -> bool {
    !group.contains('.') || group.ends_with(".k8s.io")
}

/// The list type at `path` of an object of `group`/`kind`.
pub fn list_type(group: &str, kind: &str, path: &[&str]) -> ListType {
    // ObjectMeta, shared by every kind (custom resources included).
    match path {
        ["metadata", "finalizers"] => return ListType::Set,
        ["metadata", "ownerReferences"] => return ListType::Map(&["uid"]),
        _ => {}
    }
    if !builtin(group) {
        return ListType::Atomic;
    }
    if let Some(prefix) = pod_spec_prefix(group, kind)
        && let Some(rest) = strip(path, prefix)
    {
        return match rest {
            ["containers" | "initContainers" | "ephemeralContainers"] => ListType::Map(&["name"]),
            ["volumes" | "imagePullSecrets"] => ListType::Map(&["name"]),
            [
                "containers" | "initContainers" | "ephemeralContainers",
                "env",
            ] => ListType::Map(&["name"]),
            [
                "containers" | "initContainers" | "ephemeralContainers",
                "ports",
            ] => ListType::Map(&["containerPort", "protocol"]),
            [
                "containers" | "initContainers" | "ephemeralContainers",
                "volumeMounts",
            ] => ListType::Map(&["mountPath"]),
            _ => ListType::Atomic,
        };
    }
    match (group, kind, path) {
        ("", "Service", ["spec", "ports"]) => ListType::Map(&["port", "protocol"]),
        ("", "Namespace", ["spec", "finalizers"]) => ListType::Set,
        _ => ListType::Atomic,
    }
}

/// Whether the map or struct at `path` is atomic (owned and replaced whole).
pub fn map_atomic(group: &str, kind: &str, path: &[&str]) -> bool {
    if !builtin(group) {
        return false;
    }
    // LabelSelector is `+structType=atomic`; Service and pod node selectors are `+mapType=atomic`.
    match (group, kind, path) {
        (
            "apps",
            "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet",
            ["spec", "selector"],
        )
        | ("batch", "Job", ["spec", "selector"])
        | ("policy", "PodDisruptionBudget", ["spec", "selector"])
        | ("networking.k8s.io", "NetworkPolicy", ["spec", "podSelector"])
        | ("", "Service", ["spec", "selector"]) => return true,
        _ => {}
    }
    if let Some(prefix) = pod_spec_prefix(group, kind)
        && let Some(rest) = strip(path, prefix)
    {
        return matches!(rest, ["nodeSelector"]);
    }
    false
}

/// The value a missing list-map key field defaults to: `protocol` is defaulted to `TCP` by the
/// apiserver's defaulting (and declared as the OpenAPI default), so `{port: 80}` and
/// `{port: 80, protocol: TCP}` are the same item.
pub fn key_default(field: &str) -> Option<serde_json::Value> {
    (field == "protocol").then(|| serde_json::Value::String("TCP".to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_against_fake_apiserver_schema() {
        assert_eq!(
            list_type(
                "apps",
                "Deployment",
                &["spec", "template", "spec", "containers"]
            ),
            ListType::Map(&["name"])
        );
        assert_eq!(
            list_type(
                "apps",
                "Deployment",
                &["spec", "template", "spec", "containers", "args"]
            ),
            ListType::Atomic
        );
        assert_eq!(
            list_type("example.com", "Foo", &["spec", "containers"]),
            ListType::Atomic
        );
        assert_eq!(
            list_type("", "Service", &["spec", "ports"]),
            ListType::Map(&["port", "protocol"])
        );
        assert!(map_atomic("apps", "Deployment", &["spec", "selector"]));
    }
}

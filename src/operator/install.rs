//! The manifests that install the operator (`antiopa manifests`): its
//! Namespace, ServiceAccount, RBAC, ConfigMap, Deployment and, with two
//! replicas or more, a PodDisruptionBudget. Pure: settings in, YAML out.
//!
//! RBAC is least privilege for the operator itself — a Role in its
//! namespace for its release Secrets, its ConfigMap, its Lease and Events —
//! and, for what the modules install (anything at all), a ClusterRole the
//! user chooses: `cluster-admin` bound, or the rules of a file.

use serde_json::{Value, json};

use super::leader::DEFAULT_LEASE_NAME;

/// The HTTP port: `/healthz`, `/readyz`, `/metrics` (addon-operator's 9650).
pub const HTTP_PORT: u16 = 9650;

/// What the modules may do in the cluster.
#[derive(Clone, Debug, PartialEq)]
pub enum ModuleRbac {
    /// Bind the built-in `cluster-admin` ClusterRole.
    ClusterAdmin,
    /// A ClusterRole with these `rules` (a YAML list of PolicyRules).
    Rules(Vec<Value>),
}

/// `antiopa manifests` settings.
#[derive(Clone, Debug)]
pub struct InstallSettings {
    pub namespace: String,
    pub image: String,
    pub replicas: u32,
    pub leader_elect: bool,
    pub config_map: String,
    pub rbac: ModuleRbac,
}

/// The name every object of the installation carries.
const NAME: &str = "antiopa";

/// The manifests, as one multi-document YAML text in apply order.
pub fn manifests(s: &InstallSettings) -> String {
    let labels = json!({"app.kubernetes.io/name": NAME, "app.kubernetes.io/component": "operator"});
    let meta = |name: &str| json!({"name": name, "namespace": s.namespace, "labels": labels});
    let mut docs = vec![
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": s.namespace}}),
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta(NAME)}),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": meta(NAME),
            "rules": [
                // Release records (helm's Secrets) of every module.
                {"apiGroups": [""], "resources": ["secrets"],
                 "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]},
                // Its ConfigMap: watched, and written back for remembered values.
                {"apiGroups": [""], "resources": ["configmaps"], "resourceNames": [s.config_map],
                 "verbs": ["get", "list", "watch", "update", "patch"]},
                {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list", "watch", "create"]},
                {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
                 "verbs": ["get", "list", "watch", "create", "update", "patch"]},
                {"apiGroups": ["", "events.k8s.io"], "resources": ["events"],
                 "verbs": ["create", "patch"]},
            ],
        }),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": meta(NAME),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": NAME},
            "subjects": [{"kind": "ServiceAccount", "name": NAME, "namespace": s.namespace}],
        }),
    ];
    // Cluster-scoped names carry the namespace: two installations coexist.
    let cluster_name = format!("{NAME}-{}", s.namespace);
    let role_ref = match &s.rbac {
        ModuleRbac::ClusterAdmin => "cluster-admin".to_string(),
        ModuleRbac::Rules(rules) => {
            docs.push(json!({
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": {"name": cluster_name, "labels": labels},
                "rules": rules,
            }));
            cluster_name.clone()
        }
    };
    docs.push(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": cluster_name, "labels": labels},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role_ref},
        "subjects": [{"kind": "ServiceAccount", "name": NAME, "namespace": s.namespace}],
    }));
    docs.push(json!({
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": meta(&s.config_map),
        "data": {"global": "{}\n"},
    }));
    docs.push(deployment(s, &labels, meta(NAME)));
    if s.replicas >= 2 {
        docs.push(json!({
            "apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": meta(NAME),
            "spec": {"maxUnavailable": 1, "selector": {"matchLabels": labels}},
        }));
    }
    docs.iter()
        .map(|d| {
            let map = d.as_object().cloned().unwrap_or_default();
            format!("---\n{}", crate::values::values_to_yaml(&map))
        })
        .collect()
}

fn deployment(s: &InstallSettings, labels: &Value, meta: Value) -> Value {
    let mut env = vec![
        json!({"name": "ADDON_OPERATOR_NAMESPACE",
               "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}}),
        json!({"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}),
        json!({"name": "ADDON_OPERATOR_CONFIG_MAP", "value": s.config_map}),
        json!({"name": "ADDON_OPERATOR_TMP_DIR", "value": "/tmp/antiopa"}),
    ];
    let mut args = vec![json!("run")];
    if s.leader_elect {
        args.push(json!("--leader-elect"));
        env.push(json!({"name": "ANTIOPA_LEADER_ELECTION_LEASE", "value": DEFAULT_LEASE_NAME}));
    }
    let probe = |path: &str, period: u32, failures: u32| {
        json!({"httpGet": {"path": path, "port": "http"}, "periodSeconds": period,
               "failureThreshold": failures, "timeoutSeconds": 3})
    };
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta,
        "spec": {
            "replicas": s.replicas,
            "selector": {"matchLabels": labels},
            // One writer at a time even without leader election.
            "strategy": if s.leader_elect {
                json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}})
            } else {
                json!({"type": "Recreate"})
            },
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "serviceAccountName": NAME,
                    // SIGTERM: module runs under way finish (30 s), then the Lease is released.
                    "terminationGracePeriodSeconds": 45,
                    "securityContext": {
                        "runAsNonRoot": true, "runAsUser": 65532, "runAsGroup": 65532,
                        "fsGroup": 65532, "seccompProfile": {"type": "RuntimeDefault"},
                    },
                    "containers": [{
                        "name": "operator",
                        "image": s.image,
                        "args": args,
                        "env": env,
                        "ports": [{"name": "http", "containerPort": HTTP_PORT, "protocol": "TCP"}],
                        "livenessProbe": probe("/healthz", 10, 6),
                        "readinessProbe": probe("/readyz", 5, 3),
                        "resources": {
                            "requests": {"cpu": "100m", "memory": "128Mi"},
                            "limits": {"memory": "512Mi"},
                        },
                        "securityContext": {
                            "allowPrivilegeEscalation": false,
                            "readOnlyRootFilesystem": true,
                            "capabilities": {"drop": ["ALL"]},
                        },
                        // Hook temp files and the debug socket: the only writable paths.
                        "volumeMounts": [
                            {"name": "tmp", "mountPath": "/tmp"},
                            {"name": "run", "mountPath": "/var/run/antiopa"},
                        ],
                    }],
                    "volumes": [
                        {"name": "tmp", "emptyDir": {}},
                        {"name": "run", "emptyDir": {}},
                    ],
                },
            },
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(replicas: u32) -> InstallSettings {
        InstallSettings {
            namespace: "ops".into(),
            image: "antiopa:dev".into(),
            replicas,
            leader_elect: replicas > 1,
            config_map: "addon-operator".into(),
            rbac: ModuleRbac::ClusterAdmin,
        }
    }

    #[test]
    fn a_disruption_budget_only_with_two_replicas_or_more() {
        assert!(!manifests(&settings(1)).contains("PodDisruptionBudget"));
        let two = manifests(&settings(2));
        assert!(two.contains("kind: PodDisruptionBudget"), "{two}");
        assert!(two.contains("--leader-elect"), "{two}");
    }
}

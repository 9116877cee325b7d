//! Installing and using the CLI as an operator's user would: `antiopa
//! manifests | kubectl apply --server-side -f -` against fake apiserver
//! creates every object (the printed YAML snapshotted), its refusals;
//! `antiopa completion` scripts; `antiopa history -o json|yaml` parses.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::cluster_support::*;

fn antiopa_out(list: &[&str]) -> std::process::Output {
    Command::new(antiopa()).args(list).output().unwrap()
}

/// `kubectl apply --server-side -f -` of `yaml`, off the runtime's threads.
async fn kubectl_apply(kubeconfig: &Path, yaml: String) -> std::process::Output {
    let kc = kubeconfig.to_path_buf();
    tokio::task::spawn_blocking(move || {
        let mut child = Command::new("kubectl")
            .args(["apply", "--server-side", "-f", "-", "--kubeconfig"])
            .arg(&kc)
            .env("HOME", std::env::temp_dir())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(yaml.as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn manifests_install_with_kubectl_apply_server_side_against_fake_apiserver() {
    let out = antiopa_out(&[
        "manifests",
        "--namespace",
        "ops",
        "--image",
        "registry.example/antiopa:1.0",
        "--leader-elect",
        "--replicas",
        "2",
        "--cluster-admin",
    ]);
    let yaml = ok(&out);
    insta::assert_snapshot!(yaml);

    let s = serve().await;
    let applied = kubectl_apply(&s.kubeconfig, yaml).await;
    let text = ok(&applied);
    eprintln!("{text}");
    let f = &s.fake;
    assert!(f.get("namespaces", None, "ops").is_some(), "{text}");
    for (res, name) in [
        ("serviceaccounts", "antiopa"),
        ("roles.rbac.authorization.k8s.io", "antiopa"),
        ("rolebindings.rbac.authorization.k8s.io", "antiopa"),
        ("configmaps", "addon-operator"),
        ("poddisruptionbudgets.policy", "antiopa"),
    ] {
        assert!(
            f.get(res, Some("ops"), name).is_some(),
            "{res} {name}: {text}"
        );
    }
    let crb = f
        .get(
            "clusterrolebindings.rbac.authorization.k8s.io",
            None,
            "antiopa-ops",
        )
        .expect("ClusterRoleBinding");
    assert_eq!(crb["roleRef"]["name"], "cluster-admin");
    let d = f
        .get("deployments.apps", Some("ops"), "antiopa")
        .expect("Deployment");
    assert_eq!(d["spec"]["replicas"], 2);
    let pod = &d["spec"]["template"]["spec"];
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    let c = &pod["containers"][0];
    assert_eq!(c["image"], "registry.example/antiopa:1.0");
    assert_eq!(c["args"], serde_json::json!(["run", "--leader-elect"]));
    assert_eq!(c["securityContext"]["readOnlyRootFilesystem"], true);
    assert_eq!(c["livenessProbe"]["httpGet"]["path"], "/healthz");
    assert_eq!(c["readinessProbe"]["httpGet"]["path"], "/readyz");
    assert_eq!(c["ports"][0]["containerPort"], 9650);
    let env = c["env"].as_array().unwrap();
    assert!(
        env.iter().any(|e| e["name"] == "POD_NAME"
            && e["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"),
        "{env:?}"
    );

    // A second apply changes nothing and conflicts with nothing.
    let again = kubectl_apply(
        &s.kubeconfig,
        ok(&antiopa_out(&[
            "manifests",
            "--namespace",
            "ops",
            "--image",
            "registry.example/antiopa:1.0",
            "--leader-elect",
            "--replicas",
            "2",
            "--cluster-admin",
        ])),
    )
    .await;
    ok(&again);
}

#[test]
fn manifests_ask_for_a_module_rbac_choice_and_take_rules_from_a_file() {
    let none = antiopa_out(&["manifests"]);
    assert!(!none.status.success());
    let err = String::from_utf8_lossy(&none.stderr);
    assert!(err.contains("--cluster-admin or --rbac-rules"), "{err}");

    let two = antiopa_out(&["manifests", "--replicas", "2", "--cluster-admin"]);
    assert!(!two.status.success());
    assert!(
        String::from_utf8_lossy(&two.stderr).contains("needs --leader-elect"),
        "{two:?}"
    );

    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join("rules.yaml");
    std::fs::write(
        &rules,
        "- apiGroups: [\"\", \"apps\"]\n  resources: [\"configmaps\", \"deployments\"]\n  verbs: [\"*\"]\n",
    )
    .unwrap();
    let out = ok(&antiopa_out(&[
        "manifests",
        "--rbac-rules",
        rules.to_str().unwrap(),
    ]));
    let docs: Vec<serde_json::Value> = serde_yaml_ng::Deserializer::from_str(&out)
        .map(|d| serde::Deserialize::deserialize(d).unwrap())
        .collect();
    let role = docs
        .iter()
        .find(|d| d["kind"] == "ClusterRole")
        .expect("a ClusterRole");
    assert_eq!(role["rules"][0]["resources"][1], "deployments");
    let binding = docs
        .iter()
        .find(|d| d["kind"] == "ClusterRoleBinding")
        .unwrap();
    assert_eq!(binding["roleRef"]["name"], role["metadata"]["name"]);
    assert!(!docs.iter().any(|d| d["kind"] == "PodDisruptionBudget"));

    let bad = dir.path().join("bad.yaml");
    std::fs::write(&bad, "just: a map\n").unwrap();
    let out = antiopa_out(&["manifests", "--rbac-rules", bad.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("bad.yaml"), "{err}");
}

#[test]
fn completion_scripts_name_the_subcommands() {
    for shell in ["bash", "zsh", "fish"] {
        let out = antiopa_out(&["completion", shell]);
        let text = ok(&out);
        for sub in ["template", "manifests", "history", "run", "completion"] {
            assert!(text.contains(sub), "{shell}: no {sub}");
        }
    }
    let bad = antiopa_out(&["completion", "tcsh"]);
    assert!(!bad.status.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_prints_json_and_yaml_as_helm_against_fake_apiserver() {
    let s = serve().await;
    let chart = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/charts/hello");
    let chart = chart.to_str().unwrap();
    for _ in 0..2 {
        ok(&run_args(
            antiopa(),
            args(
                &["apply", "demo", chart, "-n", "web", "--create-namespace"],
                &s.kubeconfig,
            ),
        )
        .await);
    }
    let json = ok(&run_args(
        antiopa(),
        args(
            &["history", "demo", "-n", "web", "-o", "json"],
            &s.kubeconfig,
        ),
    )
    .await);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let entries = v.as_array().unwrap();
    assert_eq!(entries.len(), 1, "{json}");
    let e = &entries[0];
    assert_eq!(e["revision"], 1);
    assert_eq!(e["status"], "deployed");
    assert!(e["chart"].as_str().unwrap().starts_with("hello-"), "{json}");
    for k in ["updated", "app_version", "description"] {
        assert!(e.get(k).is_some(), "{k}: {json}");
    }
    let yaml = ok(&run_args(
        antiopa(),
        args(
            &["history", "demo", "-n", "web", "-o", "yaml"],
            &s.kubeconfig,
        ),
    )
    .await);
    let y: serde_json::Value = serde_yaml_ng::from_str(&yaml).unwrap();
    assert_eq!(y, v, "{yaml}");
    let table = ok(&run_args(
        antiopa(),
        args(&["history", "demo", "-n", "web"], &s.kubeconfig),
    )
    .await);
    assert!(table.starts_with("REVISION"), "{table}");
}

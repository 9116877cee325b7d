//! Drift repair (issue 29): `antiopa run`, the real binary, against fake
//! apiserver, with real kubectl deleting and editing released objects. A
//! deleted object comes back alone (no module run, no release revision); a
//! hook Job its delete policy removed triggers nothing; a field antiopa owns
//! that `kubectl patch` changed is reverted with `driftMode: enabled`,
//! reported and left with `warn`; a field only kubectl set is left alone;
//! a controller that keeps undoing a field is given up after the limit with
//! one message; `antiopa drift` lists what differs, object by object.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::cluster_operator::{
    NS, Operator, cluster, eventually, executable, kubectl, last, prepare,
};
use crate::cluster_support::*;

/// A modules tree with one module per `(name, values, templates)`.
fn tree(dir: &Path, modules: &[(&str, &str, &str)]) -> (PathBuf, PathBuf) {
    let root = dir.join("modules");
    let global = dir.join("global-hooks");
    std::fs::create_dir_all(&global).unwrap();
    let mut enabled = String::new();
    for (i, (name, values, templates)) in modules.iter().enumerate() {
        let d = root.join(format!("{:03}-{name}", 10 * (i + 1)));
        std::fs::create_dir_all(d.join("templates")).unwrap();
        std::fs::write(
            d.join("Chart.yaml"),
            format!("apiVersion: v2\nname: {name}\nversion: 0.1.0\n"),
        )
        .unwrap();
        std::fs::write(d.join("values.yaml"), values).unwrap();
        std::fs::write(d.join("templates/all.yaml"), templates).unwrap();
        enabled.push_str(&format!("{name}Enabled: true\n"));
    }
    std::fs::write(root.join("values.yaml"), enabled).unwrap();
    // An empty global hooks directory is fine; one no-op hook keeps the
    // layout as shipped.
    executable(
        &global.join("noop.sh"),
        "#!/bin/sh\nif [ \"$1\" = \"--config\" ]; then echo '{\"configVersion\":\"v1\",\"onStartup\":1}'; fi\n",
    );
    (root, global)
}

fn cm(s: &Served, name: &str) -> Option<serde_json::Value> {
    s.fake.get("v1/configmaps", Some(NS), name)
}

fn module_runs(log: &str, module: &str) -> usize {
    log.lines()
        .filter(|l| l.contains("module run done") && l.contains(&format!("module={module}")))
        .count()
}

fn events(s: &Served, reason: &str, name: &str) -> Vec<serde_json::Value> {
    s.fake
        .list("v1/events")
        .into_iter()
        .filter(|e| e["reason"] == reason && e["involvedObject"]["name"] == name)
        .collect()
}

/// Polls every 20 ms until `check` holds (at most `limit`); the time taken.
async fn timed<F: FnMut() -> bool>(limit: Duration, what: &str, mut check: F) -> Duration {
    let t = Instant::now();
    while t.elapsed() < limit {
        if check() {
            return t.elapsed();
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("not within {limit:?}: {what}");
}

const WEB: &str = r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: web-a
data:
  a: "1"
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: web-b
data:
  b: "1"
---
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector:
    app: web
  ports:
  - port: 80
---
apiVersion: batch/v1
kind: Job
metadata:
  name: web-migrate
  annotations:
    helm.sh/hook: post-install,post-upgrade
    helm.sh/hook-delete-policy: hook-succeeded
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: m
        image: busybox
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleted_objects_are_restored_alone_and_deleted_hook_jobs_trigger_nothing_against_fake_apiserver()
 {
    let s = serve().await;
    s.fake.set_complete_jobs(true);
    let kc = &s.kubeconfig;
    let dir = tempfile::tempdir().unwrap();
    let (modules, global) = tree(dir.path(), &[("web", "web: {}\n", WEB)]);
    prepare(kc, None).await;
    let op = Operator::start(kc, &modules, &global, &dir.path().join("op.log"), &[]);
    let c = cluster(kc).await;
    eventually(Duration::from_secs(30), "web deployed", || async {
        last(&c, "web").await.is_some_and(|r| r.version == 1)
    })
    .await;
    // The hook Job ran and its delete policy removed it.
    assert!(
        s.fake
            .get("batch/v1/jobs", Some(NS), "web-migrate")
            .is_none(),
        "{}",
        op.log()
    );
    // Let the watches list (and see the hook's deletion, if they could).
    eventually(Duration::from_secs(10), "drift watching", || async {
        op.log().contains("converged")
    })
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;

    for name in ["web-a", "web-b"] {
        let uid = cm(&s, name).unwrap()["metadata"]["uid"].clone();
        kubectl(kc, &["-n", NS, "delete", "configmap", name]).await;
        let took = timed(Duration::from_secs(10), "restored", || {
            cm(&s, name).is_some_and(|o| o["metadata"]["uid"] != uid)
        })
        .await;
        println!("{name} restored {took:?} after kubectl delete returned");
    }
    let svc_uid = s.fake.get("v1/services", Some(NS), "web").unwrap()["metadata"]["uid"].clone();
    kubectl(kc, &["-n", NS, "delete", "service", "web"]).await;
    timed(Duration::from_secs(10), "service restored", || {
        s.fake
            .get("v1/services", Some(NS), "web")
            .is_some_and(|o| o["metadata"]["uid"] != svc_uid)
    })
    .await;
    let restored = cm(&s, "web-a").unwrap();
    assert_eq!(restored["data"]["a"], "1");
    assert_eq!(
        restored["metadata"]["labels"]["app.kubernetes.io/managed-by"],
        "Helm"
    );
    let managers: Vec<&str> = restored["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["manager"].as_str())
        .collect();
    assert_eq!(managers, ["antiopa"]);

    // Restored alone: no module run, no release revision, no hook rerun.
    let history = antiopa::release::history(&c, "web", NS).await.unwrap();
    assert_eq!(history.len(), 1, "no new revision");
    let log = op.log();
    assert_eq!(module_runs(&log, "web"), 1, "{log}");
    assert!(
        s.fake
            .get("batch/v1/jobs", Some(NS), "web-migrate")
            .is_none(),
        "the hook Job was not brought back"
    );
    assert!(!log.contains("Job"), "the hook Job never counts: {log}");
    assert_eq!(log.matches("restored").count(), 3, "{log}");
    let ev = events(&s, "DriftRestored", "web-a");
    assert_eq!(ev.len(), 1, "{ev:?}");
    assert_eq!(ev[0]["involvedObject"]["kind"], "ConfigMap");
    assert_eq!(ev[0]["type"], "Normal");
    assert_eq!(
        ev[0]["involvedObject"]["uid"],
        cm(&s, "web-a").unwrap()["metadata"]["uid"]
    );
}

const KEEP: &str = r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Chart.Name }}-cm
data:
  a: "1"
  b: "1"
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changed_fields_are_reverted_enabled_reported_warn_and_others_fields_left_alone_against_fake_apiserver()
 {
    let s = serve().await;
    let kc = &s.kubeconfig;
    let dir = tempfile::tempdir().unwrap();
    let (modules, global) = tree(
        dir.path(),
        &[
            ("keep", "keep: {}\n", KEEP),
            ("report", "report:\n  driftMode: warn\n", KEEP),
            (
                "lax",
                "lax:\n  driftIgnore:\n  - paths: [\"/data/b\"]\n    target: {kind: ConfigMap}\n",
                KEEP,
            ),
        ],
    );
    prepare(kc, None).await;
    let op = Operator::start(kc, &modules, &global, &dir.path().join("op.log"), &[]);
    eventually(Duration::from_secs(30), "converged", || async {
        op.log().contains("converged")
    })
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let patch = |name: &'static str, p: &'static str| async move {
        kubectl(
            kc,
            &[
                "-n",
                NS,
                "patch",
                "configmap",
                name,
                "--type=merge",
                "-p",
                p,
            ],
        )
        .await;
    };

    // A field only kubectl sets is never fought.
    patch("keep-cm", r#"{"data":{"extra":"x"}}"#).await;
    // Reverted: a field antiopa owns, with driftMode enabled.
    patch("keep-cm", r#"{"data":{"a":"2"}}"#).await;
    let took = timed(Duration::from_secs(10), "a reverted", || {
        cm(&s, "keep-cm").is_some_and(|o| o["data"]["a"] == "1")
    })
    .await;
    println!("keep-cm .data.a reverted {took:?} after kubectl patch returned");
    // warn: reported, left as it is.
    patch("report-cm", r#"{"data":{"a":"2"}}"#).await;
    // An ignored field is left alone; another field is still reverted.
    patch("lax-cm", r#"{"data":{"b":"2"}}"#).await;
    patch("lax-cm", r#"{"data":{"a":"2"}}"#).await;
    timed(Duration::from_secs(10), "lax a reverted", || {
        cm(&s, "lax-cm").is_some_and(|o| o["data"]["a"] == "1")
    })
    .await;
    eventually(Duration::from_secs(10), "warn reported", || async {
        op.log().contains("report-cm changed")
    })
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;

    let keep = cm(&s, "keep-cm").unwrap();
    assert_eq!(keep["data"]["extra"], "x", "another manager's field stays");
    assert_eq!(keep["data"]["a"], "1");
    assert_eq!(
        cm(&s, "report-cm").unwrap()["data"]["a"],
        "2",
        "warn leaves it"
    );
    assert_eq!(cm(&s, "lax-cm").unwrap()["data"]["b"], "2", "ignored");
    let log = op.log();
    assert!(
        log.contains(r#"drift: ConfigMap addons/keep-cm changed: /data/a (taken by "kubectl-patch"): restored"#),
        "{log}"
    );
    assert!(
        log.contains(r#"drift: ConfigMap addons/report-cm changed: /data/a (taken by "kubectl-patch") (driftMode warn: reported, not reverted)"#),
        "{log}"
    );
    assert!(!log.contains("/data/extra"), "{log}");
    assert!(!log.contains("/data/b"), "{log}");
    assert_eq!(
        log.matches("report-cm changed").count(),
        1,
        "reported once: {log}"
    );
    assert_eq!(events(&s, "DriftDetected", "report-cm").len(), 1);
    assert_eq!(events(&s, "DriftRestored", "keep-cm").len(), 1);
    // Each module ran once: drift never re-runs a module.
    for m in ["keep", "report", "lax"] {
        assert_eq!(module_runs(&log, m), 1, "{log}");
    }

    // `antiopa drift` lists what differs now, object by object.
    let out = std::process::Command::new(antiopa())
        .args(["drift", "-n", NS, "--kubeconfig"])
        .arg(kc)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("~ v1 ConfigMap addons/report-cm (module report)"),
        "{text}"
    );
    assert!(
        text.contains("-  a: \"2\"") && text.contains("+  a: \"1\""),
        "{text}"
    );
    assert!(
        !text.contains("keep-cm") && !text.contains("lax-cm"),
        "{text}"
    );
    kubectl(kc, &["-n", NS, "delete", "configmap", "report-cm"]).await;
    let out = std::process::Command::new(antiopa())
        .args(["drift", "report", "-n", NS, "--kubeconfig"])
        .arg(kc)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("- v1 ConfigMap addons/report-cm (module report): missing"),
        "{text}"
    );
    assert!(text.contains("1 missing, 0 changed"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_controller_fighting_a_field_is_given_up_after_the_limit_with_one_message_against_fake_apiserver()
 {
    let s = serve().await;
    let kc = &s.kubeconfig;
    let dir = tempfile::tempdir().unwrap();
    let (modules, global) = tree(dir.path(), &[("fight", "fight: {}\n", KEEP)]);
    prepare(kc, None).await;
    let op = Operator::start(kc, &modules, &global, &dir.path().join("op.log"), &[]);
    eventually(Duration::from_secs(30), "converged", || async {
        op.log().contains("converged")
    })
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    // Another controller sets .data.a whenever it sees it differ.
    let end = Instant::now() + Duration::from_secs(60);
    while !op.log().contains("stopped restoring") {
        assert!(Instant::now() < end, "never gave up: {}", op.log());
        if cm(&s, "fight-cm").is_some_and(|o| o["data"]["a"] != "fought") {
            kubectl(
                kc,
                &[
                    "-n",
                    NS,
                    "patch",
                    "configmap",
                    "fight-cm",
                    "--type=merge",
                    "-p",
                    r#"{"data":{"a":"fought"}}"#,
                ],
            )
            .await;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(cm(&s, "fight-cm").unwrap()["data"]["a"], "fought");
    let log = op.log();
    let stopped: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("stopped restoring"))
        .collect();
    assert_eq!(stopped.len(), 1, "{log}");
    assert!(
        stopped[0].contains(r#"ConfigMap addons/fight-cm: stopped restoring after 5 attempts within 600s: ConfigMap addons/fight-cm changed: /data/a (taken by "kubectl-patch")"#),
        "{}",
        stopped[0]
    );
    assert_eq!(
        log.matches("fight-cm changed: /data/a (taken by \"kubectl-patch\"): restored")
            .count(),
        5,
        "{log}"
    );
    assert_eq!(events(&s, "DriftRestoreStopped", "fight-cm").len(), 1);
}

const WIDGET_CRD: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
"#;

const WIDGETS: &str = r#"apiVersion: example.com/v1
kind: Widget
metadata:
  name: w1
spec:
  size: 1
---
apiVersion: example.com/v1
kind: Widget
metadata:
  name: w2
spec:
  size: 2
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: plain
data:
  a: "1"
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn released_custom_resources_wait_for_their_removed_crd_and_come_back_with_it_against_fake_apiserver()
 {
    let s = serve().await;
    let kc = &s.kubeconfig;
    let dir = tempfile::tempdir().unwrap();
    let (modules, global) = tree(dir.path(), &[("shop", "shop: {}\n", WIDGETS)]);
    let crds = modules.join("010-shop/crds");
    std::fs::create_dir_all(&crds).unwrap();
    std::fs::write(crds.join("widget.yaml"), WIDGET_CRD).unwrap();
    prepare(kc, None).await;
    let op = Operator::start(kc, &modules, &global, &dir.path().join("op.log"), &[]);
    let c = cluster(kc).await;
    eventually(Duration::from_secs(30), "shop deployed", || async {
        last(&c, "shop").await.is_some_and(|r| r.version == 1)
    })
    .await;
    eventually(Duration::from_secs(10), "drift watching", || async {
        op.log().contains("converged")
    })
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let widget = |name: &str| s.fake.get("example.com/v1/widgets", Some(NS), name);
    assert!(widget("w1").is_some() && widget("w2").is_some());

    // The CRD goes, and its custom resources with it.
    kubectl(kc, &["delete", "crd", "widgets.example.com"]).await;
    assert!(widget("w1").is_none() && widget("w2").is_none());
    tokio::time::sleep(Duration::from_secs(5)).await;
    let log = op.log();
    assert!(
        log.matches("not restored").count() <= 1,
        "one failed restore at most, not one per object: {log}"
    );
    assert!(!log.contains("restore failed"), "no retries: {log}");
    assert!(!log.contains("stopped restoring"), "{log}");
    assert!(events(&s, "DriftRestoreStopped", "w1").is_empty());
    // Drift of the release's other objects goes on meanwhile.
    let uid = cm(&s, "plain").unwrap()["metadata"]["uid"].clone();
    kubectl(kc, &["-n", NS, "delete", "configmap", "plain"]).await;
    timed(Duration::from_secs(10), "plain restored", || {
        cm(&s, "plain").is_some_and(|o| o["metadata"]["uid"] != uid)
    })
    .await;

    // The CRD comes back: its watch lists again and the custom resources
    // are restored, without a module run.
    let file = dir.path().join("crd.yaml");
    std::fs::write(&file, WIDGET_CRD).unwrap();
    kubectl(kc, &["apply", "-f", file.to_str().unwrap()]).await;
    let took = timed(Duration::from_secs(90), "widgets restored", || {
        widget("w1").is_some() && widget("w2").is_some()
    })
    .await;
    println!("custom resources restored {took:?} after the CRD came back");
    assert_eq!(widget("w2").unwrap()["spec"]["size"], 2);
    let log = op.log();
    assert_eq!(
        log.matches("watch of released objects failing").count(),
        1,
        "reported once, no error loop: {log}"
    );
    assert_eq!(module_runs(&log, "shop"), 1, "{log}");
    assert_eq!(
        antiopa::release::history(&c, "shop", NS)
            .await
            .unwrap()
            .len(),
        1
    );
}

//! Watch health of `antiopa run` (the real binary) against fake apiserver,
//! with real kubectl as the other actor: watch connections killed, frozen
//! (open but silent) or ended with `410 Expired` are restarted and
//! re-synchronized so the hook gets exactly the events it missed, once;
//! a kind whose CRD is installed after start starts delivering within 5 s,
//! a deleted CRD empties the snapshot with `Deleted` events and waits
//! quietly, and a re-created one delivers again.
//!
//! The hook logs one line per binding context it gets (`Added name
//! {filterResult}`, …), so the tests compare exactly what it was told.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::cluster_operator::{NS, Operator, eventually, executable, kubectl};
use crate::cluster_support::*;

/// Bookmarks from the fake every half second; the operator's liveness
/// deadline is 3 s.
const BOOKMARKS: Duration = Duration::from_millis(500);
const LIVENESS: &str = "3s";

/// An empty modules tree and one global hook with a kubernetes binding of
/// `api_version`/`kind` (jqFilter `filter`, `selector` JSON or empty),
/// appending one line per context to `events.log` in `dir`.
fn hook_tree(dir: &Path, api_version: &str, kind: &str, filter: &str, selector: &str) {
    let modules = dir.join("modules");
    let global = dir.join("global-hooks");
    std::fs::create_dir_all(&modules).unwrap();
    std::fs::create_dir_all(&global).unwrap();
    let log = dir.join("events.log");
    let selector = if selector.is_empty() {
        String::new()
    } else {
        format!(",\"labelSelector\":{selector}")
    };
    executable(
        &global.join("record.sh"),
        &format!(
            r#"#!/bin/sh
if [ "$1" = "--config" ]; then echo '{{"configVersion":"v1","kubernetes":[{{"name":"watched","apiVersion":"{api_version}","kind":"{kind}"{selector},"jqFilter":"{filter}"}}]}}'; exit 0; fi
jq -r '.[] | if .type == "Event" then "\(.watchEvent) \(.object.metadata.name) \(.filterResult | tojson)" else "\(.type) \(.objects | length)" end' "$BINDING_CONTEXT_PATH" >> {log}
"#,
            log = log.display()
        ),
    );
}

/// The hook's lines so far.
fn events(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("events.log"))
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

/// The lines after the first `from`, sorted (events of one re-sync come
/// in the operator's order, not the edits').
fn events_since(dir: &Path, from: usize) -> Vec<String> {
    let mut e: Vec<String> = events(dir).into_iter().skip(from).collect();
    e.sort();
    e
}

fn start(s: &Served, dir: &Path) -> Operator {
    Operator::start(
        &s.kubeconfig,
        &dir.join("modules"),
        &dir.join("global-hooks"),
        &dir.join("op.log"),
        &["--watch-liveness", LIVENESS],
    )
}

/// A labelled ConfigMap `name` with `data.k`, applied with kubectl.
async fn apply_cm(kc: &Path, dir: &Path, name: &str, value: &str) {
    let file = dir.join(format!("{name}.yaml"));
    std::fs::write(
        &file,
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {NS}\n  labels:\n    watch: me\ndata:\n  k: {value}\n"
        ),
    )
    .unwrap();
    kubectl(kc, &["apply", "-f", file.to_str().unwrap()]).await;
}

/// The namespace, the operator's ConfigMap, labelled ConfigMaps `a` and
/// `b`, and the operator started and synchronized (its hook told of both).
async fn started_with_two(s: &Served, dir: &Path) -> Operator {
    s.fake.set_bookmark_interval(BOOKMARKS);
    hook_tree(
        dir,
        "v1",
        "ConfigMap",
        ".data",
        r#"{"matchLabels":{"watch":"me"}}"#,
    );
    let kc = &s.kubeconfig;
    kubectl(kc, &["create", "namespace", NS]).await;
    kubectl(kc, &["-n", NS, "create", "configmap", "addon-operator"]).await;
    apply_cm(kc, dir, "a", "a1").await;
    let op = start(s, dir);
    eventually(Duration::from_secs(30), "Synchronization run", || async {
        events(dir).contains(&"Synchronization 1".to_string())
    })
    .await;
    // Live: a new object is an event.
    apply_cm(kc, dir, "b", "b1").await;
    eventually(Duration::from_secs(10), "Added b", || async {
        events(dir).contains(&r#"Added b {"k":"b1"}"#.to_string())
    })
    .await;
    op
}

/// Creates `c`, modifies `a`, deletes `b` with kubectl.
async fn three_changes(kc: &Path, dir: &Path) {
    apply_cm(kc, dir, "c", "c1").await;
    kubectl(
        kc,
        &[
            "-n",
            NS,
            "patch",
            "configmap",
            "a",
            "--type=merge",
            "-p",
            r#"{"data":{"k":"a2"}}"#,
        ],
    )
    .await;
    kubectl(kc, &["-n", NS, "delete", "configmap", "b"]).await;
}

/// What the hook must be told of [`three_changes`], exactly once each.
fn three_events() -> Vec<String> {
    vec![
        r#"Added c {"k":"c1"}"#.to_string(),
        r#"Deleted b {"k":"b1"}"#.to_string(),
        r#"Modified a {"k":"a2"}"#.to_string(),
    ]
}

/// Waits until the hook got `want` after line `from`, then a while more,
/// and checks nothing else came (no event repeated, none missed).
async fn exactly(op: &Operator, dir: &Path, from: usize, want: Vec<String>) {
    let mut want = want;
    want.sort();
    eventually(Duration::from_secs(15), "the missed events", || async {
        events_since(dir, from).len() >= want.len()
    })
    .await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(events_since(dir, from), want, "{}", op.log());
}

/// How many times the operator (re)listed the ConfigMaps.
fn lists(op: &Operator) -> usize {
    op.log()
        .matches("kubernetes bindings: watching v1 configmaps")
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_watch_connections_are_restarted_and_resynchronized_against_fake_apiserver() {
    let s = serve().await;
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let op = started_with_two(&s, dir).await;
    let before = events(dir).len();
    let listed = lists(&op);

    let open = s.fake.kill_watches();
    let killed = Instant::now();
    assert!(open >= 1, "no watch was open");
    three_changes(&s.kubeconfig, dir).await;
    eventually(
        Duration::from_secs(10),
        "a relist after the kill",
        || async { lists(&op) > listed },
    )
    .await;
    // Measured when the relist was seen, kubectl's time included.
    let took = killed.elapsed();
    println!("watch re-synchronized {took:.2?} after its connection was killed");
    assert!(took < Duration::from_secs(5), "{took:?}\n{}", op.log());
    exactly(&op, dir, before, three_events()).await;
    // One restart, logged once with the kind, the place and why.
    let log = op.log();
    let restarts: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("stopped delivering"))
        .collect();
    assert_eq!(restarts.len(), 1, "{log}");
    assert!(
        restarts[0].contains("v1 configmaps in all namespaces")
            && restarts[0].contains("the connection"),
        "{log}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn frozen_watches_are_noticed_at_the_liveness_deadline_and_resynchronized_against_fake_apiserver()
 {
    let s = serve().await;
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let op = started_with_two(&s, dir).await;
    let before = events(dir).len();

    // A watch counts as dead on silence only once its server has shown
    // it sends bookmarks (one that never does is just watched again).
    tokio::time::sleep(BOOKMARKS * 2).await;
    s.fake.freeze_watches();
    let frozen = Instant::now();
    // Nothing reaches the hook through a frozen watch...
    three_changes(&s.kubeconfig, dir).await;
    // ... until the liveness deadline restarts it.
    while !op.log().contains("no event nor bookmark for 3s") {
        assert!(
            frozen.elapsed() < Duration::from_secs(15),
            "not restarted:\n{}",
            op.log()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let noticed = frozen.elapsed();
    println!("frozen watch noticed and restarted after {noticed:.2?} (liveness deadline 3 s)");
    assert!(
        // The deadline counts from the last bookmark, up to 0.5 s before.
        noticed >= Duration::from_millis(2400) && noticed < Duration::from_secs(8),
        "{noticed:?}\n{}",
        op.log()
    );
    exactly(&op, dir, before, three_events()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relist_after_410_expired_neither_repeats_nor_misses_events_against_fake_apiserver() {
    let s = serve().await;
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let op = started_with_two(&s, dir).await;

    // Nothing changed: the relist after 410 tells the hook nothing.
    let before = events(dir).len();
    let listed = lists(&op);
    s.fake.expire_watches();
    eventually(Duration::from_secs(10), "a relist after 410", || async {
        lists(&op) > listed
    })
    .await;
    exactly(&op, dir, before, vec![]).await;

    // Changes the watch never delivered (frozen), then 410 before the
    // liveness deadline: the relist finds exactly them.
    let before = events(dir).len();
    let listed = lists(&op);
    s.fake.freeze_watches();
    let api: kube::Api<k8s_openapi::api::core::v1::ConfigMap> =
        kube::Api::namespaced(s.fake.client(), NS);
    let cm = |name: &str, v: &str| {
        serde_json::from_value::<k8s_openapi::api::core::v1::ConfigMap>(serde_json::json!({
            "metadata": {"name": name, "labels": {"watch": "me"}},
            "data": {"k": v},
        }))
        .unwrap()
    };
    api.create(&Default::default(), &cm("c", "c1"))
        .await
        .unwrap();
    api.patch(
        "a",
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(serde_json::json!({"data": {"k": "a2"}})),
    )
    .await
    .unwrap();
    api.delete("b", &Default::default()).await.unwrap();
    s.fake.expire_watches();
    eventually(Duration::from_secs(10), "a relist after 410", || async {
        lists(&op) > listed
    })
    .await;
    exactly(&op, dir, before, three_events()).await;
    let log = op.log();
    assert!(log.contains("410 Expired): listing again"), "{log}");
    // 410 is a relist, not a failure.
    assert!(!log.contains("stopped delivering"), "{log}");
}

const CRD: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names:
    plural: widgets
    singular: widget
    kind: Widget
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
"#;

fn widget(name: &str, size: u32) -> String {
    format!(
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: {name}\n  namespace: {NS}\nspec:\n  size: {size}\n"
    )
}

async fn apply_text(kc: &Path, dir: &Path, name: &str, text: &str) {
    let file = dir.join(name);
    std::fs::write(&file, text).unwrap();
    kubectl(
        kc,
        &["apply", "--validate=false", "-f", file.to_str().unwrap()],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kind_installed_later_starts_and_a_deleted_crd_waits_quietly_against_fake_apiserver() {
    let s = serve().await;
    let kc = &s.kubeconfig;
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    s.fake.set_bookmark_interval(BOOKMARKS);
    hook_tree(dir, "example.com/v1", "Widget", ".spec", "");
    kubectl(kc, &["create", "namespace", NS]).await;
    kubectl(kc, &["-n", NS, "create", "configmap", "addon-operator"]).await;
    let op = start(&s, dir);
    eventually(Duration::from_secs(30), "waiting for the kind", || async {
        op.log().contains(
            "example.com/v1 Widget is not served (its CRD not installed?): waiting for it",
        )
    })
    .await;
    // The converge does not wait 10 s for a kind that is not there.
    assert!(
        !op.log().contains("not synchronized within"),
        "{}",
        op.log()
    );

    // Installed: delivering within 5 s.
    apply_text(kc, dir, "crd.yaml", CRD).await;
    let installed = Instant::now();
    apply_text(kc, dir, "w1.yaml", &widget("w1", 1)).await;
    eventually(Duration::from_secs(15), "Added w1", || async {
        events(dir).contains(&r#"Added w1 {"size":1}"#.to_string())
    })
    .await;
    let took = installed.elapsed();
    println!(
        "binding on a CRD installed after start delivered {took:.2?} after the CRD was created"
    );
    assert!(took < Duration::from_secs(5), "{took:?}\n{}", op.log());

    // Deleted: the hook is told its objects are gone, then quiet.
    let before = events(dir).len();
    kubectl(kc, &["delete", "crd", "widgets.example.com"]).await;
    eventually(Duration::from_secs(10), "the kind gone", || async {
        op.log()
            .contains("example.com/v1 Widget is no longer served")
    })
    .await;
    exactly(
        &op,
        dir,
        before,
        vec![r#"Deleted w1 {"size":1}"#.to_string()],
    )
    .await;
    let warnings = |log: &str| log.lines().filter(|l| l.contains("Widget")).count();
    let n = warnings(&op.log());
    tokio::time::sleep(Duration::from_secs(4)).await;
    let log = op.log();
    assert_eq!(warnings(&log), n, "no error loop:\n{log}");
    assert!(!log.contains("stopped delivering"), "{log}");

    // Re-created: delivers again.
    let before = events(dir).len();
    apply_text(kc, dir, "crd.yaml", CRD).await;
    let again = Instant::now();
    apply_text(kc, dir, "w2.yaml", &widget("w2", 2)).await;
    exactly(&op, dir, before, vec![r#"Added w2 {"size":2}"#.to_string()]).await;
    println!(
        "re-created CRD: delivering again {:.2?} after it was created (including a 1.5 s check that nothing else came)",
        again.elapsed()
    );
}

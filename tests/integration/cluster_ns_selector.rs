//! A kubernetes binding's `namespace.labelSelector`, the real `antiopa run`
//! against fake apiserver with real kubectl labelling namespaces: objects
//! of matching namespaces are in Synchronization and arrive as events,
//! those of others never do; a namespace that gets the labels brings its
//! objects in (`Added`), one that loses them takes them out (`Deleted`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};

use crate::cluster_operator::{NS, Operator, eventually, executable, kubectl};
use crate::cluster_support::*;

/// A module whose hook watches ConfigMaps in namespaces labelled
/// `team=a` and appends every context it runs with to `runs.jsonl`:
/// its type, event, object (`namespace/name`) and snapshot.
fn tree(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let modules = dir.join("modules");
    let global = dir.join("global-hooks");
    std::fs::create_dir_all(&global).unwrap();
    let d = modules.join("010-teams");
    std::fs::create_dir_all(d.join("templates")).unwrap();
    std::fs::create_dir_all(d.join("hooks")).unwrap();
    std::fs::write(modules.join("values.yaml"), "teamsEnabled: true\n").unwrap();
    std::fs::write(
        d.join("Chart.yaml"),
        "apiVersion: v2\nname: teams\nversion: 0.1.0\n",
    )
    .unwrap();
    std::fs::write(d.join("values.yaml"), "teams: {}\n").unwrap();
    let runs = dir.join("runs.jsonl");
    executable(
        &d.join("hooks/teams.sh"),
        &format!(
            r#"#!/bin/sh
if [ "$1" = "--config" ]; then echo '{{"configVersion":"v1","kubernetes":[{{"name":"cms","apiVersion":"v1","kind":"ConfigMap","namespace":{{"labelSelector":{{"matchLabels":{{"team":"a"}}}}}},"jqFilter":".metadata.namespace + \"/\" + .metadata.name","includeSnapshotsFrom":["cms"]}}]}}'; exit 0; fi
jq -c '.[] | {{type, watchEvent, object: .filterResult, snapshot: [.snapshots.cms[].filterResult]}}' "$BINDING_CONTEXT_PATH" >> {runs}
"#,
            runs = runs.display()
        ),
    );
    (modules, global, runs)
}

fn contexts(runs: &Path) -> Vec<Value> {
    std::fs::read_to_string(runs)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn has(runs: &Path, want: &Value) -> bool {
    contexts(runs).iter().any(|c| c == want)
}

async fn configmap(kc: &Path, ns: &str, name: &str) {
    kubectl(kc, &["-n", ns, "create", "configmap", name]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn namespace_label_selector_follows_namespace_labels_against_fake_apiserver() {
    let s = serve().await;
    let kc = &s.kubeconfig;
    let dir = tempfile::tempdir().unwrap();
    let (modules, global, runs) = tree(dir.path());
    kubectl(kc, &["create", "namespace", NS]).await;
    kubectl(kc, &["-n", NS, "create", "configmap", "addon-operator"]).await;
    for ns in ["team-a1", "team-a2", "other"] {
        kubectl(kc, &["create", "namespace", ns]).await;
    }
    kubectl(kc, &["label", "namespace", "team-a1", "team=a"]).await;
    kubectl(kc, &["label", "namespace", "team-a2", "team=a"]).await;
    configmap(kc, "team-a1", "one").await;
    configmap(kc, "team-a2", "two").await;
    configmap(kc, "other", "x").await;

    let op = Operator::start(kc, &modules, &global, &dir.path().join("op.log"), &[]);
    // Synchronization: the objects of both labelled namespaces.
    let sync = json!({"type": "Synchronization", "watchEvent": null, "object": null,
        "snapshot": ["team-a1/one", "team-a2/two"]});
    eventually(Duration::from_secs(30), "Synchronization", || async {
        has(&runs, &sync)
    })
    .await;

    // Added in a labelled namespace.
    configmap(kc, "team-a1", "three").await;
    let added = json!({"type": "Event", "watchEvent": "Added", "object": "team-a1/three",
        "snapshot": ["team-a1/one", "team-a1/three", "team-a2/two"]});
    eventually(Duration::from_secs(10), "Added in team-a1", || async {
        has(&runs, &added)
    })
    .await;

    // Nothing from an unlabelled namespace.
    configmap(kc, "other", "y").await;
    // Waited for through a later event in a labelled namespace.
    configmap(kc, "team-a2", "four").await;
    eventually(Duration::from_secs(10), "Added in team-a2", || async {
        contexts(&runs)
            .iter()
            .any(|c| c["object"] == "team-a2/four")
    })
    .await;
    let seen = contexts(&runs);
    assert!(
        !seen.iter().any(|c| c.to_string().contains("other/")),
        "{seen:?}\n{}",
        op.log()
    );

    // Labelled: its objects come in as Added.
    let labelled = std::time::Instant::now();
    kubectl(kc, &["label", "namespace", "other", "team=a"]).await;
    let all = json!([
        "other/x",
        "other/y",
        "team-a1/one",
        "team-a1/three",
        "team-a2/four",
        "team-a2/two"
    ]);
    eventually(Duration::from_secs(10), "other's objects Added", || async {
        let c = contexts(&runs);
        ["other/x", "other/y"].iter().all(|o| {
            c.iter()
                .any(|c| c["watchEvent"] == "Added" && c["object"] == *o)
        }) && c.last().map(|c| &c["snapshot"]) == Some(&all)
    })
    .await;
    println!(
        "namespace labelled to its objects' Added runs done: {:.2}s (kubectl included)",
        labelled.elapsed().as_secs_f64()
    );
    // And it is watched now.
    configmap(kc, "other", "z").await;
    eventually(Duration::from_secs(10), "Added in other", || async {
        contexts(&runs)
            .iter()
            .any(|c| c["watchEvent"] == "Added" && c["object"] == "other/z")
    })
    .await;

    // Unlabelled: its objects leave, as Deleted.
    let unlabelled = std::time::Instant::now();
    kubectl(kc, &["label", "namespace", "other", "team-"]).await;
    let rest = json!([
        "team-a1/one",
        "team-a1/three",
        "team-a2/four",
        "team-a2/two"
    ]);
    eventually(
        Duration::from_secs(10),
        "other's objects Deleted",
        || async {
            let c = contexts(&runs);
            ["other/x", "other/y", "other/z"].iter().all(|o| {
                c.iter()
                    .any(|c| c["watchEvent"] == "Deleted" && c["object"] == *o)
            }) && c.last().map(|c| &c["snapshot"]) == Some(&rest)
        },
    )
    .await;
    println!(
        "namespace unlabelled to its objects' Deleted runs done: {:.2}s (kubectl included)",
        unlabelled.elapsed().as_secs_f64()
    );
    // And no longer watched.
    let before = contexts(&runs).len();
    configmap(kc, "other", "w").await;
    configmap(kc, "team-a1", "five").await;
    eventually(Duration::from_secs(10), "Added in team-a1", || async {
        contexts(&runs)
            .iter()
            .any(|c| c["object"] == "team-a1/five")
    })
    .await;
    let seen = contexts(&runs);
    assert!(
        !seen[before..]
            .iter()
            .any(|c| c.to_string().contains("other/w")),
        "{seen:?}\n{}",
        op.log()
    );
    assert!(!op.log().contains("run failed"), "{}", op.log());
    assert!(!op.log().contains("not supported"), "{}", op.log());
}

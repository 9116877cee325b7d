//! Archived modules in `antiopa run`, the real binary against fake
//! apiserver, with kubectl editing its ConfigMap: `db-archived: "true"`
//! archives module `db` (workloads deleted, its claim and history kept,
//! phase `Archived`, no run on a values edit), removing the key restores
//! it and renders afresh; an archived module that is disabled stays
//! archived (not uninstalled); the retention sweep of an operator started
//! with a short `--archive-retention` cleans up the module's archive (and
//! not another release's); `antiopa actions` prints who did each step,
//! and helm still reads the history.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::cluster_operator::{NS, Operator, cluster, eventually, last, patch_config, prepare};
use crate::cluster_support::*;
use antiopa::release::lifecycle;

/// Modules `db` (a claim, a Deployment and a Service; its size from its
/// config section) and `web` (a ConfigMap).
fn tree(dir: &Path) -> (PathBuf, PathBuf) {
    let modules = dir.join("modules");
    let global = dir.join("global-hooks");
    std::fs::create_dir_all(&global).unwrap();
    std::fs::write(
        dir.join("values.yaml"),
        "dbEnabled: true\nwebEnabled: true\n",
    )
    .unwrap();
    std::fs::create_dir_all(&modules).unwrap();
    std::fs::rename(dir.join("values.yaml"), modules.join("values.yaml")).unwrap();
    let db = modules.join("010-db");
    std::fs::create_dir_all(db.join("templates")).unwrap();
    std::fs::write(
        db.join("Chart.yaml"),
        "apiVersion: v2\nname: db\nversion: 0.1.0\n",
    )
    .unwrap();
    std::fs::write(db.join("values.yaml"), "db:\n  size: 1Gi\n").unwrap();
    std::fs::write(
        db.join("templates/all.yaml"),
        "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: db-data\nspec:\n  accessModes: [ReadWriteOnce]\n  resources:\n    requests:\n      storage: 1Gi\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: db\n  annotations:\n    size: {{ .Values.db.size | quote }}\nspec:\n  selector:\n    matchLabels: {app: db}\n  template:\n    metadata:\n      labels: {app: db}\n    spec:\n      containers:\n      - name: db\n        image: mysql:8\n---\napiVersion: v1\nkind: Service\nmetadata:\n  name: db\nspec:\n  selector: {app: db}\n  ports:\n  - port: 3306\n",
    )
    .unwrap();
    let web = modules.join("020-web");
    std::fs::create_dir_all(web.join("templates")).unwrap();
    std::fs::write(
        web.join("Chart.yaml"),
        "apiVersion: v2\nname: web\nversion: 0.1.0\n",
    )
    .unwrap();
    std::fs::write(
        web.join("templates/cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  a: b\n",
    )
    .unwrap();
    (modules, global)
}

async fn exists(kc: &Path, what: &str) -> bool {
    run_args(
        "kubectl".into(),
        args(&["-n", NS, "get", what, "-o", "name"], kc),
    )
    .await
    .status
    .success()
}

/// `antiopa module status NAME -o json` through the operator's debug socket.
async fn phase(socket: &Path, name: &str) -> String {
    let out = run_args(
        antiopa(),
        vec![
            "module".into(),
            "status".into(),
            name.into(),
            "-o".into(),
            "json".into(),
            "--debug-socket".into(),
            socket.display().to_string(),
        ],
    )
    .await;
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    v["phase"].as_str().unwrap_or_default().to_string()
}

async fn db_state(c: &antiopa::cluster::Cluster) -> Option<lifecycle::State> {
    last(c, "db").await.map(|r| lifecycle::state(&r))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operator_archives_restores_and_sweeps_a_module_through_its_configmap_against_fake_apiserver()
 {
    let s = serve().await;
    let kc = &s.kubeconfig;
    let dir = tempfile::tempdir().unwrap();
    let (modules, global) = tree(dir.path());
    prepare(kc, Some("web-archived=false")).await;
    let c = cluster(kc).await;
    let log = dir.path().join("op.log");
    let socket = log.with_extension("sock");
    let limit = Duration::from_secs(60);
    let op = Operator::start(kc, &modules, &global, &log, &[]);
    eventually(limit, "db and web deployed", || async {
        db_state(&c).await == Some(lifecycle::State::Running) && last(&c, "web").await.is_some()
    })
    .await;
    assert!(exists(kc, "deployment/db").await);

    // Archived through the ConfigMap: workloads gone, claim and history kept.
    patch_config(kc, r#"{"data":{"db-archived":"true"}}"#).await;
    eventually(limit, "db archived", || async {
        db_state(&c).await == Some(lifecycle::State::Archived)
    })
    .await;
    assert!(!exists(kc, "deployment/db").await, "{}", op.log());
    assert!(!exists(kc, "service/db").await);
    assert!(exists(kc, "persistentvolumeclaim/db-data").await);
    assert!(exists(kc, "configmap/web").await, "web is not archived");
    eventually(limit, "phase Archived", || async {
        phase(&socket, "db").await == "Archived"
    })
    .await;
    let archived_rev = last(&c, "db").await.unwrap().version;

    // While archived, a config edit does not run it.
    patch_config(kc, r#"{"data":{"db":"size: 2Gi\n"}}"#).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let r = last(&c, "db").await.unwrap();
    assert_eq!(
        (lifecycle::state(&r), r.version),
        (lifecycle::State::Archived, archived_rev),
        "{}",
        op.log()
    );
    assert!(!exists(kc, "deployment/db").await);

    // The key removed: restored, then rendered afresh with the new size.
    patch_config(kc, r#"{"data":{"db-archived":null}}"#).await;
    eventually(limit, "db running again with the new size", || async {
        let out = run_args(
            "kubectl".into(),
            args(
                &[
                    "-n",
                    NS,
                    "get",
                    "deployment/db",
                    "-o",
                    "jsonpath={.metadata.annotations.size}",
                ],
                kc,
            ),
        )
        .await;
        db_state(&c).await == Some(lifecycle::State::Running)
            && String::from_utf8_lossy(&out.stdout) == "2Gi"
    })
    .await;
    eventually(limit, "phase Ready", || async {
        phase(&socket, "db").await == "Ready"
    })
    .await;
    let hist = ok(&run_args(antiopa(), args(&["history", "db", "-n", NS], kc)).await);
    assert!(hist.contains("Archived by antiopa (config)"), "{hist}");
    assert!(
        hist.contains(&format!(
            "Restored revision {archived_rev} by antiopa (config)"
        )),
        "{hist}"
    );
    if let Some(helm) = helm() {
        let h = ok(&run_args(helm, args(&["history", "db", "-n", NS], kc)).await);
        assert!(h.contains("Archived by antiopa (config)"), "{h}");
        assert!(h.contains("Restored revision"), "{h}");
    }
    let table = ok(&run_args(antiopa(), args(&["actions", "db", "-n", NS], kc)).await);
    let header = table.lines().next().unwrap_or_default();
    for col in ["WHEN", "ACTION", "BY", "OUTCOME", "REVISION"] {
        assert!(header.contains(col), "{table}");
    }
    assert!(
        table
            .lines()
            .any(|l| l.contains("archive") && l.contains("antiopa (config)")),
        "{table}"
    );
    assert!(
        table
            .lines()
            .any(|l| l.contains("restore") && l.contains("antiopa (config)")),
        "{table}"
    );

    // Archived and disabled: stays archived, not uninstalled.
    patch_config(kc, r#"{"data":{"db-archived":"true"}}"#).await;
    eventually(limit, "db archived again", || async {
        db_state(&c).await == Some(lifecycle::State::Archived)
    })
    .await;
    patch_config(kc, r#"{"data":{"db-archived":null,"dbEnabled":"false"}}"#).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        db_state(&c).await,
        Some(lifecycle::State::Archived),
        "{}",
        op.log()
    );
    assert!(exists(kc, "persistentvolumeclaim/db-data").await);
    assert_eq!(phase(&socket, "db").await, "Archived");
    drop(op);

    // Another (non-module) release archived in the same namespace.
    let chart = write_chart(
        dir.path(),
        "other",
        "",
        &[(
            "cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: other\ndata:\n  a: b\n",
        )],
    );
    ok(&run_args(
        antiopa(),
        args(
            &["apply", "other", &chart.display().to_string(), "-n", NS],
            kc,
        ),
    )
    .await);
    ok(&run_args(antiopa(), args(&["archive", "other", "-n", NS], kc)).await);

    // A short retention: the sweep at start cleans the module's archive up.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let log2 = dir.path().join("op2.log");
    let op = Operator::start(
        kc,
        &modules,
        &global,
        &log2,
        &[
            "--archive-retention",
            "2s",
            "--archive-sweep-interval",
            "1s",
        ],
    );
    eventually(limit, "db's archive cleaned up", || async {
        last(&c, "db").await.is_none()
    })
    .await;
    assert!(
        !exists(kc, "persistentvolumeclaim/db-data").await,
        "{}",
        op.log()
    );
    assert!(
        last(&c, "other").await.is_some(),
        "another release's archive is not the operator's to clean up"
    );
    let json = ok(&run_args(
        antiopa(),
        args(&["actions", "db", "-n", NS, "-o", "json"], kc),
    )
    .await);
    let actions: serde_json::Value = serde_json::from_str(&json).unwrap();
    let cleanup = actions
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["action"] == "cleanup")
        .unwrap_or_else(|| panic!("{json}"));
    assert_eq!(cleanup["by"], "antiopa (retention)", "{json}");
    assert_eq!(cleanup["outcome"], "ok", "{json}");
    let yaml = ok(&run_args(
        antiopa(),
        args(&["actions", "db", "-n", NS, "-o", "yaml"], kc),
    )
    .await);
    assert!(yaml.contains("by: antiopa (retention)"), "{yaml}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_leader_sweeps_expired_archives_against_fake_apiserver() {
    let s = serve().await;
    let kc = &s.kubeconfig;
    let dir = tempfile::tempdir().unwrap();
    let (modules, global) = tree(dir.path());
    prepare(kc, Some("db-archived=true")).await;
    let c = cluster(kc).await;
    let limit = Duration::from_secs(60);
    // Archived from the start: not installed; then deployed and archived.
    let op = Operator::start(kc, &modules, &global, &dir.path().join("op1.log"), &[]);
    eventually(limit, "web deployed", || async {
        last(&c, "web").await.is_some()
    })
    .await;
    assert!(
        last(&c, "db").await.is_none(),
        "archived from the start: never installed"
    );
    drop(op);
    patch_config(kc, r#"{"data":{"db-archived":null}}"#).await;
    let op = Operator::start(kc, &modules, &global, &dir.path().join("op2.log"), &[]);
    eventually(limit, "db deployed", || async {
        db_state(&c).await == Some(lifecycle::State::Running)
    })
    .await;
    patch_config(kc, r#"{"data":{"db-archived":"true"}}"#).await;
    eventually(limit, "db archived", || async {
        db_state(&c).await == Some(lifecycle::State::Archived)
    })
    .await;
    drop(op);

    // Someone else holds the Lease: a standby with a short retention
    // cleans nothing up.
    let now = chrono::Utc::now()
        .format("%Y-%m-%dT%H:%M:%S%.6fZ")
        .to_string();
    let lease = format!(
        r#"{{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{{"name":"antiopa-leader-election","namespace":"{NS}"}},"spec":{{"holderIdentity":"someone-else","renewTime":"{now}","acquireTime":"{now}","leaseDurationSeconds":3600}}}}"#
    );
    let file = dir.path().join("lease.json");
    std::fs::write(&file, lease).unwrap();
    ok(&run_args(
        "kubectl".into(),
        args(&["apply", "-f", &file.display().to_string()], kc),
    )
    .await);
    let log = dir.path().join("standby.log");
    let standby = Operator::start(
        kc,
        &modules,
        &global,
        &log,
        &[
            "--leader-elect",
            "--archive-retention",
            "1s",
            "--archive-sweep-interval",
            "1s",
        ],
    );
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert_eq!(
        db_state(&c).await,
        Some(lifecycle::State::Archived),
        "{}",
        standby.log()
    );
    // The Lease freed: the replica leads, and its sweep cleans up.
    ok(&run_args(
        "kubectl".into(),
        args(
            &["-n", NS, "delete", "lease", "antiopa-leader-election"],
            kc,
        ),
    )
    .await);
    eventually(limit, "db's archive cleaned up by the leader", || async {
        last(&c, "db").await.is_none()
    })
    .await;
    assert!(
        !exists(kc, "persistentvolumeclaim/db-data").await,
        "{}",
        standby.log()
    );
}

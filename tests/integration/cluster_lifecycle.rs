//! Release lifecycle with the real binary against fake apiserver, kubectl
//! and helm reading what it leaves: `archive` deletes the workloads and
//! keeps the PersistentVolumeClaim and the history (`helm history` reads
//! it), `restore` applies the same manifest again, `cleanup --expired`
//! after the retention removes the claim and the history; every action is
//! in the history and in Kubernetes Events, with who did it.

use std::path::Path;

use crate::cluster_support::*;

fn chart(dir: &Path) -> std::path::PathBuf {
    write_chart(
        dir,
        "db",
        "size: 1Gi\n",
        &[
            (
                "pvc.yaml",
                "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: data\nspec:\n  accessModes: [ReadWriteOnce]\n  resources:\n    requests:\n      storage: {{ .Values.size }}\n",
            ),
            (
                "deploy.yaml",
                "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: db\nspec:\n  selector:\n    matchLabels: {app: db}\n  template:\n    metadata:\n      labels: {app: db}\n    spec:\n      containers:\n      - name: db\n        image: mysql:8\n",
            ),
            (
                "svc.yaml",
                "apiVersion: v1\nkind: Service\nmetadata:\n  name: db\nspec:\n  selector: {app: db}\n  ports:\n  - port: 3306\n",
            ),
        ],
    )
}

async fn kubectl_exists(kc: &Path, what: &str) -> bool {
    let out = run_args(
        "kubectl".into(),
        args(&["-n", "apps", "get", what, "-o", "name"], kc),
    )
    .await;
    out.status.success()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn archive_restore_and_cleanup_keep_data_and_history_against_fake_apiserver() {
    let s = serve().await;
    let kc = &s.kubeconfig;
    let dir = tempfile::tempdir().unwrap();
    let c = chart(dir.path()).display().to_string();
    ok(&run_args(
        antiopa(),
        args(&["apply", "db", &c, "-n", "apps", "--create-namespace"], kc),
    )
    .await);
    // Archive: workloads gone, the claim and the history kept.
    let out = ok(&run_args(
        antiopa(),
        args(
            &["archive", "db", "-n", "apps", "--actor", "qa@example"],
            kc,
        ),
    )
    .await);
    assert!(
        out.contains("release \"db\" archived (revision 1, 2 objects deleted, 1 kept)"),
        "{out}"
    );
    assert!(out.contains("kept: PersistentVolumeClaim data"), "{out}");
    assert!(!kubectl_exists(kc, "deployment/db").await);
    assert!(!kubectl_exists(kc, "service/db").await);
    assert!(kubectl_exists(kc, "persistentvolumeclaim/data").await);
    let hist = ok(&run_args(antiopa(), args(&["history", "db", "-n", "apps"], kc)).await);
    assert!(
        hist.contains("uninstalled") && hist.contains("Archived by qa@example"),
        "{hist}"
    );
    if let Some(helm) = helm() {
        let h = ok(&run_args(helm, args(&["history", "db", "-n", "apps"], kc)).await);
        assert!(h.contains("Archived by qa@example"), "{h}");
    }
    // Only an archived release is restored, only a deployed one archived.
    let again = run_args(antiopa(), args(&["archive", "db", "-n", "apps"], kc)).await;
    assert!(!again.status.success());
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("only a deployed release can be archived")
    );

    // Restore: the same objects back, as revision 2.
    let out = ok(&run_args(
        antiopa(),
        args(
            &["restore", "db", "-n", "apps", "--actor", "qa@example"],
            kc,
        ),
    )
    .await);
    assert!(
        out.contains("release \"db\" restored (revision 2)"),
        "{out}"
    );
    assert!(kubectl_exists(kc, "deployment/db").await);
    assert!(kubectl_exists(kc, "service/db").await);
    let hist = ok(&run_args(antiopa(), args(&["history", "db", "-n", "apps"], kc)).await);
    assert!(hist.contains("Restored revision 1 by qa@example"), "{hist}");
    let cluster = antiopa::cluster::Cluster::from_client(
        s.fake.client(),
        antiopa::cluster::RateLimit::default(),
    );
    let h = antiopa::release::history(&cluster, "db", "apps")
        .await
        .unwrap();
    assert_eq!(h.len(), 2);
    assert_eq!(
        h[0].manifest, h[1].manifest,
        "the restored manifest differs"
    );
    assert_eq!(h[1].status(), antiopa::release::Status::Deployed);

    // Not expired yet: cleanup --expired leaves an archive alone.
    ok(&run_args(antiopa(), args(&["archive", "db", "-n", "apps"], kc)).await);
    let out = ok(&run_args(
        antiopa(),
        args(
            &["cleanup", "--expired", "--retention", "14d", "-n", "apps"],
            kc,
        ),
    )
    .await);
    assert_eq!(out, "");
    assert!(kubectl_exists(kc, "persistentvolumeclaim/data").await);
    // Past a (shortened) retention: the claim and the history go.
    let out = ok(&run_args(
        antiopa(),
        args(
            &[
                "cleanup",
                "--expired",
                "--retention",
                "0s",
                "-n",
                "apps",
                "--actor",
                "cron",
            ],
            kc,
        ),
    )
    .await);
    assert!(
        out.contains("release \"db\" cleaned up (1 claims deleted, history removed)"),
        "{out}"
    );
    assert!(!kubectl_exists(kc, "persistentvolumeclaim/data").await);
    let gone = run_args(antiopa(), args(&["history", "db", "-n", "apps"], kc)).await;
    assert!(!gone.status.success());

    // The action log survives in Events, with who acted.
    let events = ok(&run_args(
        "kubectl".into(),
        args(&["-n", "apps", "get", "events", "-o", "json"], kc),
    )
    .await);
    let events: serde_json::Value = serde_json::from_str(&events).unwrap();
    let reasons: Vec<String> = events["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["source"]["component"] == "antiopa")
        .map(|e| {
            format!(
                "{} {}",
                e["reason"].as_str().unwrap_or(""),
                e["message"].as_str().unwrap_or("")
            )
        })
        .collect();
    assert!(
        reasons
            .iter()
            .any(|r| r.starts_with("Archived ") && r.contains("by qa@example")),
        "{reasons:?}"
    );
    assert!(
        reasons.iter().any(|r| r.starts_with("Restored ")),
        "{reasons:?}"
    );
    assert!(
        reasons
            .iter()
            .any(|r| r.starts_with("CleanedUp ") && r.contains("by cron")),
        "{reasons:?}"
    );
}

//! Interplay with the real helm v3.17.3 and the `antiopa` binary over HTTP,
//! against fake apiserver (served on 127.0.0.1 with a kubeconfig): helm
//! lists and reads releases antiopa wrote, antiopa upgrades releases helm
//! installed, and a process killed between writes leaves a release the next
//! apply completes. Skipped with a printed reason when helm is absent,
//! except in CI.

use std::process::Command;
use std::time::Duration;

use crate::cluster_support::*;
use antiopa::cluster::{Cluster, RateLimit};
use antiopa::release::{self, Status};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn helm_lists_and_reads_antiopa_releases_against_fake_apiserver() {
    let Some(helm) = helm() else { return };
    let s = serve().await;
    let dir = tempfile::tempdir().unwrap();
    let chart = app_chart(dir.path());
    let c = chart.display().to_string();
    let out = ok(&run_args(
        antiopa(),
        args(
            &["apply", "web", &c, "-n", "apps", "--create-namespace"],
            &s.kubeconfig,
        ),
    )
    .await);
    assert!(
        out.contains("release \"web\" revision 1 deployed: created 6"),
        "{out}"
    );
    ok(&run_args(
        antiopa(),
        args(
            &["apply", "web", &c, "-n", "apps", "--set", "replicas=2"],
            &s.kubeconfig,
        ),
    )
    .await);

    let list = ok(&run_args(
        helm.clone(),
        args(&["list", "-n", "apps", "-o", "json"], &s.kubeconfig),
    )
    .await);
    let list: serde_json::Value = serde_json::from_str(&list).unwrap();
    assert_eq!(list[0]["name"], "web");
    assert_eq!(list[0]["revision"], "2");
    assert_eq!(list[0]["status"], "deployed");
    assert_eq!(list[0]["chart"], "app-0.1.0");
    assert_eq!(list[0]["app_version"], "1.0");

    let cluster = Cluster::from_client(s.fake.client(), RateLimit::default());
    let ours = release::history(&cluster, "web", "apps").await.unwrap();
    let manifest = ok(&run_args(
        helm.clone(),
        args(&["get", "manifest", "web", "-n", "apps"], &s.kubeconfig),
    )
    .await);
    // helm prints the stored manifest and a newline.
    assert_eq!(manifest, format!("{}\n", ours[1].manifest));
    assert!(manifest.contains("replicas: 2"));

    let hist = ok(&run_args(
        helm.clone(),
        args(&["history", "web", "-n", "apps"], &s.kubeconfig),
    )
    .await);
    let lines: Vec<&str> = hist.lines().collect();
    assert!(
        lines[1].contains("superseded") && lines[1].contains("Install complete"),
        "{hist}"
    );
    assert!(
        lines[2].contains("deployed") && lines[2].contains("Upgrade complete"),
        "{hist}"
    );

    // Our own history command reads the same records.
    let ours = ok(&run_args(
        antiopa(),
        args(&["history", "web", "-n", "apps"], &s.kubeconfig),
    )
    .await);
    assert!(ours.lines().nth(2).unwrap().contains("deployed"), "{ours}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn antiopa_upgrades_a_release_helm_installed_against_fake_apiserver() {
    let Some(helm) = helm() else { return };
    let s = serve().await;
    let dir = tempfile::tempdir().unwrap();
    let chart = app_chart(dir.path());
    let c = chart.display().to_string();
    // helm creates the namespace, validates through the fake's OpenAPI v3
    // document, and writes its release Secret in protobuf.
    ok(&run_args(
        helm.clone(),
        args(
            &["install", "web", &c, "-n", "apps", "--create-namespace"],
            &s.kubeconfig,
        ),
    )
    .await);
    let ns = s.fake.get("v1/namespaces", None, "apps").unwrap();
    assert_eq!(ns["metadata"]["managedFields"][0]["manager"], "helm");
    let v1 = s
        .fake
        .get("v1/secrets", Some("apps"), "sh.helm.release.v1.web.v1")
        .unwrap();
    assert_eq!(v1["type"], "helm.sh/release.v1");
    assert_eq!(v1["metadata"]["labels"]["owner"], "helm");

    // The codec reads helm's record.
    let cluster = Cluster::from_client(s.fake.client(), RateLimit::default());
    let h = release::history(&cluster, "web", "apps").await.unwrap();
    assert_eq!(h.len(), 1);
    assert_eq!(h[0].status(), Status::Deployed);
    assert_eq!(h[0].chart_label(), "app-0.1.0");
    assert!(
        h[0].manifest
            .contains("# Source: app/templates/deploy.yaml")
    );

    // antiopa takes the release over (helm's fields are adopted) and upgrades
    // it in place.
    let out = ok(&run_args(
        antiopa(),
        args(
            &[
                "apply",
                "web",
                &c,
                "-n",
                "apps",
                "--set",
                "replicas=3,extra=false",
            ],
            &s.kubeconfig,
        ),
    )
    .await);
    assert!(out.contains("revision 2 deployed"), "{out}");
    assert!(out.contains("pruned 1"), "{out}");
    let d = s
        .fake
        .get("apps/v1/deployments", Some("apps"), "web")
        .unwrap();
    assert_eq!(d["spec"]["replicas"], 3);
    assert!(
        s.fake
            .get("v1/configmaps", Some("apps"), "web-extra")
            .is_none()
    );
    let v1 = s
        .fake
        .get("v1/secrets", Some("apps"), "sh.helm.release.v1.web.v1")
        .unwrap();
    assert_eq!(v1["metadata"]["labels"]["status"], "superseded");

    let list = ok(&run_args(
        helm.clone(),
        args(&["list", "-n", "apps", "-o", "json"], &s.kubeconfig),
    )
    .await);
    let list: serde_json::Value = serde_json::from_str(&list).unwrap();
    assert_eq!(list[0]["revision"], "2");
    assert_eq!(list[0]["status"], "deployed");

    let hist = ok(&run_args(
        helm.clone(),
        args(&["history", "web", "-n", "apps"], &s.kubeconfig),
    )
    .await);
    let lines: Vec<&str> = hist.lines().collect();
    assert_eq!(lines.len(), 3, "{hist}");
    assert!(
        lines[1].starts_with("1 ")
            && lines[1].contains("superseded")
            && lines[1].contains("Install complete"),
        "{hist}"
    );
    assert!(
        lines[2].starts_with("2 ")
            && lines[2].contains("deployed")
            && lines[2].contains("Upgrade complete"),
        "{hist}"
    );

    let ours = release::history(&cluster, "web", "apps").await.unwrap();
    let manifest = ok(&run_args(
        helm.clone(),
        args(&["get", "manifest", "web", "-n", "apps"], &s.kubeconfig),
    )
    .await);
    // helm prints the stored manifest and a newline.
    assert_eq!(manifest, format!("{}\n", ours[1].manifest));
    assert!(manifest.contains("replicas: 3"), "{manifest}");

    // helm upgrades it again on top of ours (revision 3): its three-way
    // patch starts from our manifest. (Without new values helm would reuse
    // the user-supplied values we stored, replicas=3 and extra=false.)
    ok(&run_args(
        helm.clone(),
        args(
            &["upgrade", "web", &c, "-n", "apps", "--set", "replicas=2"],
            &s.kubeconfig,
        ),
    )
    .await);
    let h = release::history(&cluster, "web", "apps").await.unwrap();
    let st: Vec<Status> = h.iter().map(|r| r.status()).collect();
    assert_eq!(
        st,
        [Status::Superseded, Status::Superseded, Status::Deployed]
    );
    let d = s
        .fake
        .get("apps/v1/deployments", Some("apps"), "web")
        .unwrap();
    assert_eq!(d["spec"]["replicas"], 2);
    assert!(
        s.fake
            .get("v1/configmaps", Some("apps"), "web-extra")
            .is_some()
    );

    // And helm uninstalls it: release records and objects go, the
    // `helm.sh/resource-policy: keep` ConfigMap stays.
    let out = ok(&run_args(
        helm,
        args(&["uninstall", "web", "-n", "apps"], &s.kubeconfig),
    )
    .await);
    assert_eq!(
        out.trim(),
        "These resources were kept due to the resource policy:\n[ConfigMap] web-kept\n\nrelease \"web\" uninstalled"
    );
    let left: Vec<String> = s
        .fake
        .list("v1/secrets")
        .iter()
        .filter_map(|o| o["metadata"]["name"].as_str().map(str::to_string))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    assert!(
        s.fake
            .get("apps/v1/deployments", Some("apps"), "web")
            .is_none()
    );
    assert!(
        s.fake
            .get("v1/configmaps", Some("apps"), "web-kept")
            .is_some()
    );
    assert!(
        release::history(&cluster, "web", "apps")
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn process_killed_between_writes_is_completed_by_the_next_apply_against_fake_apiserver() {
    let s = serve().await;
    let dir = tempfile::tempdir().unwrap();
    let chart = app_chart(dir.path());
    let c = chart.display().to_string();
    // Slow down the writes of Services (dry run and real) so the child is
    // caught after the pending record and some objects are written.
    s.fake
        .inject(Fault::delay("patch", "services", Duration::from_secs(2)).times(2));
    let bin = antiopa();
    let a = args(
        &["apply", "web", &c, "-n", "apps", "--create-namespace"],
        &s.kubeconfig,
    );
    let mut child = Command::new(&bin)
        .args(&a)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut killed = false;
    for _ in 0..200 {
        tokio::time::sleep(Duration::from_millis(25)).await;
        let pending = s
            .fake
            .get("v1/secrets", Some("apps"), "sh.helm.release.v1.web.v1")
            .and_then(|sec| sec.pointer("/metadata/labels/status").cloned());
        let cm = s.fake.get("v1/configmaps", Some("apps"), "web-config");
        if pending.as_ref().and_then(|p| p.as_str()) == Some("pending-install") && cm.is_some() {
            child.kill().unwrap();
            killed = true;
            break;
        }
    }
    let _ = child.wait();
    assert!(killed, "the child finished before it could be killed");
    assert!(
        s.fake
            .get("apps/v1/deployments", Some("apps"), "web")
            .is_none()
    );

    let out = run_args(bin, a).await;
    let stdout = ok(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("recovering release \"web\": revision 1 was left pending-install"),
        "{stderr}"
    );
    assert!(stdout.contains("revision 2 deployed"), "{stdout}");
    assert!(
        s.fake
            .get("apps/v1/deployments", Some("apps"), "web")
            .is_some()
    );
}

/// With the fake standing in for the Job controller, helm's own hook wait
/// ends: `helm install` of a chart with a post-install hook Job succeeds,
/// and so does `antiopa apply` of the same chart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hook_jobs_complete_for_helm_and_antiopa_against_fake_apiserver() {
    let Some(helm) = helm() else { return };
    let s = serve().await;
    s.fake.set_complete_jobs(true);
    let dir = tempfile::tempdir().unwrap();
    let chart = write_chart(
        dir.path(),
        "hooked",
        "",
        &[
            (
                "cm.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  a: \"1\"\n",
            ),
            (
                "job.yaml",
                "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {{ .Release.Name }}-migrate\n  annotations:\n    helm.sh/hook: post-install,post-upgrade\n    helm.sh/hook-delete-policy: before-hook-creation\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers:\n      - name: m\n        image: busybox\n",
            ),
        ],
    );
    let c = chart.display().to_string();
    ok(&run_args(
        helm.clone(),
        args(
            &[
                "install",
                "by-helm",
                &c,
                "-n",
                "apps",
                "--create-namespace",
                "--timeout",
                "20s",
            ],
            &s.kubeconfig,
        ),
    )
    .await);
    let out = ok(&run_args(
        antiopa(),
        args(
            &["apply", "by-antiopa", &c, "-n", "apps", "--timeout", "20s"],
            &s.kubeconfig,
        ),
    )
    .await);
    assert!(out.contains("revision 1 deployed"), "{out}");
    for name in ["by-helm-migrate", "by-antiopa-migrate"] {
        let job = s.fake.get("batch/v1/jobs", Some("apps"), name).unwrap();
        assert_eq!(job["status"]["succeeded"], 1, "{name}");
    }
}

//! Ownership against fake apiserver, with the `antiopa` binary, the real
//! kubectl and the real helm v3.17.3 as the other actors: an object another
//! release owns is never touched (not even with `--take-ownership`), one
//! kubectl made is refused with Helm's text unless `--take-ownership`, and
//! prune and uninstall leave alone what another release has claimed since.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::cluster_support::*;

const KUBECTL: &str = "/usr/bin/kubectl";

/// A chart with one ConfigMap per name in `names`, each holding `value`.
fn cm_chart(dir: &Path, chart: &str, names: &[&str], value: &str) -> PathBuf {
    let templates: Vec<(String, String)> = names
        .iter()
        .map(|n| {
            (
                format!("{n}.yaml"),
                format!(
                    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {n}\ndata:\n  owner: {value}\n"
                ),
            )
        })
        .collect();
    let refs: Vec<(&str, &str)> = templates
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    write_chart(&dir.join(chart), chart, "", &refs)
}

async fn antiopa_run(list: &[&str], kubeconfig: &Path) -> Output {
    run_args(antiopa(), args(list, kubeconfig)).await
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// kubectl against the served fake, off the runtime's threads.
async fn kubectl(list: &[&str], kubeconfig: &Path) -> String {
    let a = args(list, kubeconfig);
    let out = tokio::task::spawn_blocking(move || {
        Command::new(KUBECTL)
            .args(&a)
            .env("HOME", std::env::temp_dir())
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    ok(&out)
}

fn cm_owner(s: &Served, ns: &str, name: &str) -> Option<String> {
    let cm = s.fake.get("v1/configmaps", Some(ns), name)?;
    cm["data"]["owner"].as_str().map(String::from)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_releases_object_is_never_touched_against_fake_apiserver() {
    let Some(helm) = helm() else { return };
    let s = serve().await;
    let dir = tempfile::tempdir().unwrap();
    let other = cm_chart(dir.path(), "other", &["shared"], "other");
    let mine = cm_chart(dir.path(), "mine", &["shared", "mine-only"], "mine");
    ok(&run_args(
        helm.clone(),
        args(
            &[
                "install",
                "other",
                &other.display().to_string(),
                "-n",
                "apps",
                "--create-namespace",
            ],
            &s.kubeconfig,
        ),
    )
    .await);

    let m = mine.display().to_string();
    for extra in [None, Some("--take-ownership")] {
        let mut a = vec!["apply", "mine", &m, "-n", "apps"];
        a.extend(extra);
        let out = antiopa_run(&a, &s.kubeconfig).await;
        assert!(!out.status.success(), "{extra:?} must fail");
        let err = stderr(&out);
        assert!(
            err.contains(
                "Unable to continue with install: ConfigMap \"shared\" in namespace \"apps\" exists and is not this release's: it belongs to release \"other\" in namespace \"apps\""
            ),
            "{err}"
        );
        // Nothing half-applied: the other release's object is as it was,
        // the object of ours that is free was not created, no record.
        assert_eq!(cm_owner(&s, "apps", "shared").as_deref(), Some("other"));
        assert_eq!(cm_owner(&s, "apps", "mine-only"), None);
    }
    let list = ok(&run_args(
        helm.clone(),
        args(&["list", "-n", "apps", "-q"], &s.kubeconfig),
    )
    .await);
    assert_eq!(list.trim(), "other");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_made_object_needs_take_ownership_against_fake_apiserver() {
    let s = serve().await;
    let dir = tempfile::tempdir().unwrap();
    let mine = cm_chart(dir.path(), "mine", &["shared"], "mine");
    kubectl(&["create", "namespace", "apps"], &s.kubeconfig).await;
    kubectl(
        &[
            "create",
            "configmap",
            "shared",
            "-n",
            "apps",
            "--from-literal=owner=kubectl",
        ],
        &s.kubeconfig,
    )
    .await;

    let m = mine.display().to_string();
    let out = antiopa_run(&["apply", "mine", &m, "-n", "apps"], &s.kubeconfig).await;
    assert!(!out.status.success());
    let err = stderr(&out);
    // Helm v3.17.3's text, word for word.
    assert!(
        err.contains(
            "Error: Unable to continue with install: ConfigMap \"shared\" in namespace \"apps\" exists and cannot be imported into the current release: invalid ownership metadata; label validation error: missing key \"app.kubernetes.io/managed-by\": must be set to \"Helm\"; annotation validation error: missing key \"meta.helm.sh/release-name\": must be set to \"mine\"; annotation validation error: missing key \"meta.helm.sh/release-namespace\": must be set to \"apps\"\n"
        ),
        "{err}"
    );
    assert!(err.contains("--take-ownership"), "{err}");
    assert_eq!(cm_owner(&s, "apps", "shared").as_deref(), Some("kubectl"));

    // Adopted: the object now carries the release's metadata, as helm's.
    let out = ok(&antiopa_run(
        &["apply", "mine", &m, "-n", "apps", "--take-ownership"],
        &s.kubeconfig,
    )
    .await);
    assert!(out.contains("revision 1 deployed"), "{out}");
    let cm = s.fake.get("v1/configmaps", Some("apps"), "shared").unwrap();
    assert_eq!(cm["data"]["owner"], "mine");
    assert_eq!(
        cm["metadata"]["labels"]["app.kubernetes.io/managed-by"],
        "Helm"
    );
    assert_eq!(
        cm["metadata"]["annotations"]["meta.helm.sh/release-name"],
        "mine"
    );
    assert_eq!(
        cm["metadata"]["annotations"]["meta.helm.sh/release-namespace"],
        "apps"
    );
    // Ours now: the next apply needs no flag.
    ok(&antiopa_run(
        &["apply", "mine", &m, "-n", "apps", "--set", "x=1"],
        &s.kubeconfig,
    )
    .await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prune_and_uninstall_leave_another_releases_object_against_fake_apiserver() {
    let s = serve().await;
    let dir = tempfile::tempdir().unwrap();
    let three = cm_chart(
        dir.path(),
        "mine",
        &["kept-a", "taken-b", "plain-c"],
        "mine",
    );
    let one = cm_chart(dir.path(), "fewer", &["kept-a"], "mine");
    let (three, one) = (three.display().to_string(), one.display().to_string());
    for ns in ["prune", "uninstall"] {
        ok(&antiopa_run(
            &["apply", "mine", &three, "-n", ns, "--create-namespace"],
            &s.kubeconfig,
        )
        .await);
        // Another release claims taken-b (as `helm install
        // --take-ownership` of another chart would leave it).
        kubectl(
            &[
                "annotate",
                "configmap",
                "taken-b",
                "-n",
                ns,
                "--overwrite",
                "meta.helm.sh/release-name=other",
            ],
            &s.kubeconfig,
        )
        .await;
    }

    // A render without taken-b and plain-c: plain-c is pruned, taken-b is
    // left, with a warning.
    let out = antiopa_run(&["apply", "mine", &one, "-n", "prune"], &s.kubeconfig).await;
    let text = ok(&out);
    assert!(text.contains("pruned 1"), "{text}");
    assert!(
        stderr(&out)
            .contains("ConfigMap prune/taken-b not pruned: it belongs to release \"other\""),
        "{}",
        stderr(&out)
    );
    assert!(cm_owner(&s, "prune", "taken-b").is_some());
    assert!(cm_owner(&s, "prune", "plain-c").is_none());

    // Uninstall: the release's own objects go, taken-b stays.
    let out = antiopa_run(&["uninstall", "mine", "-n", "uninstall"], &s.kubeconfig).await;
    let text = ok(&out);
    assert!(text.contains("uninstalled (2 objects deleted)"), "{text}");
    assert!(
        stderr(&out)
            .contains("ConfigMap uninstall/taken-b left in place: it belongs to release \"other\""),
        "{}",
        stderr(&out)
    );
    assert!(cm_owner(&s, "uninstall", "taken-b").is_some());
    assert!(cm_owner(&s, "uninstall", "kept-a").is_none());
}

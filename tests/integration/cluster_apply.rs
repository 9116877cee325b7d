//! Install, re-apply, upgrade, prune, conflicts and uninstall of releases,
//! against fake apiserver (tests/fake-apiserver) — or a real cluster when
//! `ANTIOPA_TEST_KUBECONFIG` is set (tests that need the fake's request
//! counts or fault injection then skip).

use crate::cluster_support::*;
use antiopa::apply::{self, Outcome};
use antiopa::release::{self, InstallOutcome, Status};
use kube::api::{Api, Patch, PatchParams};

fn deployed(o: &InstallOutcome) -> &apply::ApplyReport {
    match o {
        InstallOutcome::Deployed { report, .. } => report,
        other => panic!("expected a deployment, got {other:?}"),
    }
}

#[tokio::test]
async fn install_then_unchanged_reapply_writes_nothing_against_fake_apiserver() {
    let env = env().await;
    let ns = test_ns("apps");
    let dir = tempfile::tempdir().unwrap();
    let chart = app_chart(dir.path());
    let req = request("web", &ns, render("web", &chart, &ns, &[], &[]));
    let (r, _) = install(&env, &req).await;
    let r = r.unwrap();
    let rep = deployed(&r);
    assert_eq!(rep.created.len(), 6, "{rep:?}"); // namespace + 5 objects
    assert!(
        get(&env, "v1", "ConfigMap", Some(&ns), "web-config")
            .await
            .is_some()
    );
    assert!(
        get(&env, "apps/v1", "Deployment", Some(&ns), "web")
            .await
            .is_some()
    );

    let hist = release::history(&env.cluster, "web", &ns).await.unwrap();
    assert_eq!(hist.len(), 1);
    assert_eq!(hist[0].status(), Status::Deployed);
    assert_eq!(hist[0].version, 1);

    // Same render again: nothing written, the release is not touched.
    let fake = fake_only!(env);
    let rv_before = fake.resource_version();
    fake.reset_stats();
    let (r2, _) = install(&env, &req).await;
    assert_eq!(r2.unwrap(), InstallOutcome::Unchanged { version: 1 });
    assert_eq!(
        fake.resource_version(),
        rv_before,
        "an unchanged re-apply wrote something"
    );
    let s = fake.stats();
    assert_eq!(s.create + s.update + s.patch + s.delete, 0, "{s:?}");
    assert!(s.api_requests() <= 2, "{s:?}");
}

#[tokio::test]
async fn reapply_without_checksum_skip_makes_no_writes_against_fake_apiserver() {
    // Force the object-level path: a different release label makes the
    // checksum differ, objects stay identical, so the dry run finds every
    // object unchanged and only the release record is written.
    let env = env().await;
    let _fake = fake_only!(env);
    let dir = tempfile::tempdir().unwrap();
    let chart = app_chart(dir.path());
    let mut req = request("web", "apps", render("web", &chart, "apps", &[], &[]));
    install(&env, &req).await.0.unwrap();
    let cm_rv = rv(&env, "v1", "ConfigMap", Some("apps"), "web-config").await;
    let dep_rv = rv(&env, "apps/v1", "Deployment", Some("apps"), "web").await;
    // A different render checksum (hooks part) with the same objects.
    req.rendered.hooks.push(apply::Doc {
        source: "app/templates/nothing.yaml".into(),
        content: "# no object".into(),
    });
    let (r, _) = install(&env, &req).await;
    let rep = deployed(&r.unwrap()).clone();
    assert_eq!(rep.unchanged.len(), 6, "{rep:?}");
    assert!(rep.created.is_empty() && rep.configured.is_empty() && rep.pruned.is_empty());
    assert_eq!(
        rv(&env, "v1", "ConfigMap", Some("apps"), "web-config").await,
        cm_rv
    );
    assert_eq!(
        rv(&env, "apps/v1", "Deployment", Some("apps"), "web").await,
        dep_rv
    );
}

#[tokio::test]
async fn values_change_touches_only_changed_objects_against_fake_apiserver() {
    let env = env().await;
    let ns = test_ns("apps");
    let dir = tempfile::tempdir().unwrap();
    let chart = app_chart(dir.path());
    install(
        &env,
        &request("web", &ns, render("web", &chart, &ns, &[], &[])),
    )
    .await
    .0
    .unwrap();
    let cm_rv = rv(&env, "v1", "ConfigMap", Some(&ns), "web-config").await;
    let svc_rv = rv(&env, "v1", "Service", Some(&ns), "web").await;
    let dep_rv = rv(&env, "apps/v1", "Deployment", Some(&ns), "web").await;

    let req = request("web", &ns, render("web", &chart, &ns, &["replicas=3"], &[]));
    let (r, _) = install(&env, &req).await;
    let r = r.unwrap();
    let rep = deployed(&r);
    let configured: Vec<String> = rep.configured.iter().map(|k| k.to_string()).collect();
    assert_eq!(configured, [format!("Deployment.apps {ns}/web")]);
    assert_eq!(rep.unchanged.len(), 5);
    assert_eq!(
        rv(&env, "v1", "ConfigMap", Some(&ns), "web-config").await,
        cm_rv
    );
    assert_eq!(rv(&env, "v1", "Service", Some(&ns), "web").await, svc_rv);
    assert_ne!(
        rv(&env, "apps/v1", "Deployment", Some(&ns), "web").await,
        dep_rv
    );
    let d = get(&env, "apps/v1", "Deployment", Some(&ns), "web")
        .await
        .unwrap();
    assert_eq!(d["spec"]["replicas"], 3);

    let hist = release::history(&env.cluster, "web", &ns).await.unwrap();
    let st: Vec<(i64, Status)> = hist.iter().map(|r| (r.version, r.status())).collect();
    assert_eq!(st, [(1, Status::Superseded), (2, Status::Deployed)]);
}

#[tokio::test]
async fn removed_template_is_pruned_but_keep_policy_stays_against_fake_apiserver() {
    let env = env().await;
    let ns = test_ns("apps");
    let dir = tempfile::tempdir().unwrap();
    let chart = app_chart(dir.path());
    install(
        &env,
        &request("web", &ns, render("web", &chart, &ns, &[], &[])),
    )
    .await
    .0
    .unwrap();
    assert!(
        get(&env, "v1", "ConfigMap", Some(&ns), "web-extra")
            .await
            .is_some()
    );

    let req = request(
        "web",
        &ns,
        render("web", &chart, &ns, &["extra=false", "kept=false"], &[]),
    );
    let (r, _) = install(&env, &req).await;
    let r = r.unwrap();
    let rep = deployed(&r);
    let pruned: Vec<String> = rep.pruned.iter().map(|k| k.to_string()).collect();
    assert_eq!(pruned, [format!("ConfigMap {ns}/web-extra")]);
    assert_eq!(rep.kept.len(), 1);
    assert!(
        get(&env, "v1", "ConfigMap", Some(&ns), "web-extra")
            .await
            .is_none()
    );
    assert!(
        get(&env, "v1", "ConfigMap", Some(&ns), "web-kept")
            .await
            .is_some()
    );
}

#[tokio::test]
async fn prune_of_an_already_deleted_object_succeeds_against_fake_apiserver() {
    let env = env().await;
    let fake = fake_only!(env);
    let dir = tempfile::tempdir().unwrap();
    let chart = app_chart(dir.path());
    install(
        &env,
        &request("web", "apps", render("web", &chart, "apps", &[], &[])),
    )
    .await
    .0
    .unwrap();
    // Someone deletes the object right before our DELETE: 404 = gone.
    fake.inject(Fault::delete_before("delete", "configmaps", "web-extra"));
    let req = request(
        "web",
        "apps",
        render("web", &chart, "apps", &["extra=false"], &[]),
    );
    let (r, _) = install(&env, &req).await;
    assert_eq!(deployed(&r.unwrap()).pruned.len(), 1);
}

#[tokio::test]
async fn conflict_names_field_and_manager_and_changes_nothing_against_fake_apiserver() {
    let env = env().await;
    let ns = test_ns("apps");
    let dir = tempfile::tempdir().unwrap();
    let chart = app_chart(dir.path());
    install(
        &env,
        &request("web", &ns, render("web", &chart, &ns, &[], &[])),
    )
    .await
    .0
    .unwrap();
    // kubectl edit: a merge patch by another manager takes .data.a.
    let cms: Api<k8s_openapi::api::core::v1::ConfigMap> =
        Api::namespaced(env.cluster.client().clone(), &ns);
    let pp = PatchParams {
        field_manager: Some("kubectl-edit".into()),
        ..Default::default()
    };
    cms.patch(
        "web-config",
        &pp,
        &Patch::Merge(serde_json::json!({"data": {"a": "edited"}})),
    )
    .await
    .unwrap();
    let dep_rv = rv(&env, "apps/v1", "Deployment", Some(&ns), "web").await;

    // Our next apply changes .data.a and .spec.replicas: the conflict stops
    // it before the Deployment (earlier in the dry run or not) is written.
    let req = request(
        "web",
        &ns,
        render("web", &chart, &ns, &["greeting=bye", "replicas=2"], &[]),
    );
    let (r, _) = install(&env, &req).await;
    let e = r.unwrap_err().to_string();
    // An Update manager is named with its API version and time, as
    // apimachinery's conflict printer does.
    let prefix = format!("ConfigMap {ns}/web-config: conflict with \"kubectl-edit\" using v1 at ");
    let line = e
        .lines()
        .find(|l| l.trim_start().starts_with(&prefix))
        .unwrap_or_default();
    assert!(line.ends_with(": .data.a"), "{e}");
    assert!(e.contains("Apply failed with 1 conflict"), "{e}");
    assert_eq!(
        rv(&env, "apps/v1", "Deployment", Some(&ns), "web").await,
        dep_rv
    );
    let cm = get(&env, "v1", "ConfigMap", Some(&ns), "web-config")
        .await
        .unwrap();
    assert_eq!(cm["data"]["a"], "edited");
    // No release revision was written for the refused apply.
    let hist = release::history(&env.cluster, "web", &ns).await.unwrap();
    assert_eq!(hist.len(), 1);

    // --force-conflicts takes the field over.
    let mut req = req;
    req.apply.force_conflicts = true;
    let (r, _) = install(&env, &req).await;
    r.unwrap();
    let cm = get(&env, "v1", "ConfigMap", Some(&ns), "web-config")
        .await
        .unwrap();
    assert_eq!(cm["data"]["a"], "bye");
    let managers: Vec<&str> = cm["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m.pointer("/fieldsV1/f:data/f:a").is_some())
        .filter_map(|m| m["manager"].as_str())
        .collect();
    assert_eq!(managers, ["antiopa"]);
}

#[tokio::test]
async fn server_errors_leave_a_release_the_next_apply_completes_against_fake_apiserver() {
    let env = env().await;
    let fake = fake_only!(env);
    let dir = tempfile::tempdir().unwrap();
    let chart = app_chart(dir.path());
    let req = request("web", "apps", render("web", &chart, "apps", &[], &[]));
    // A 500 on the real write of the Service (after the dry-run pass).
    let mut failed_once = false;
    let f2 = fake.clone();
    let mut progress = move |p: apply::Progress<'_>| {
        if let apply::Progress::Applied { key, .. } = p
            && key.kind == "ConfigMap"
            && !failed_once
        {
            failed_once = true;
            f2.inject(Fault::fail("patch", "services", 500));
        }
    };
    let mut log = |_: &str| {};
    let r = release::upgrade_install(&env.cluster, &req, &mut progress, &mut log).await;
    let e = r.unwrap_err().to_string();
    assert!(e.contains("Service apps/web"), "{e}");
    let hist = release::history(&env.cluster, "web", "apps").await.unwrap();
    assert_eq!(hist.last().unwrap().status(), Status::Failed);

    // A 409 in the middle of the next run (someone else wrote meanwhile).
    let mut failed_once = false;
    let f3 = fake.clone();
    let mut progress = move |p: apply::Progress<'_>| {
        if let apply::Progress::Applied { key, .. } = p
            && key.kind == "ConfigMap"
            && !failed_once
        {
            failed_once = true;
            f3.inject(Fault::fail("patch", "services", 409));
        }
    };
    let r = release::upgrade_install(&env.cluster, &req, &mut progress, &mut log).await;
    assert!(r.is_err());

    // Then a clean run completes the release.
    let (r, _) = install(&env, &req).await;
    r.unwrap();
    assert!(
        get(&env, "v1", "Service", Some("apps"), "web")
            .await
            .is_some()
    );
    let hist = release::history(&env.cluster, "web", "apps").await.unwrap();
    let st: Vec<Status> = hist.iter().map(|r| r.status()).collect();
    assert_eq!(st, [Status::Failed, Status::Failed, Status::Deployed]);
    // As helm's upgrade --install: a release with history is upgraded, even
    // when no revision of it ever deployed.
    assert_eq!(
        hist.last().unwrap().info.as_ref().unwrap().description,
        "Upgrade complete"
    );
}

/// (version, status) of every revision, oldest first.
async fn statuses(env: &Env, name: &str, ns: &str) -> Vec<(i64, Status)> {
    release::history(&env.cluster, name, ns)
        .await
        .unwrap()
        .iter()
        .map(|r| (r.version, r.status()))
        .collect()
}

fn description(rel: &release::Release) -> String {
    rel.info.as_ref().unwrap().description.clone()
}

#[tokio::test]
async fn timed_out_write_mid_apply_fails_the_revision_and_the_next_apply_completes_it_against_fake_apiserver()
 {
    let env = env().await;
    let fake = fake_only!(env);
    let dir = tempfile::tempdir().unwrap();
    let chart = app_chart(dir.path());
    install(
        &env,
        &request("web", "apps", render("web", &chart, "apps", &[], &[])),
    )
    .await
    .0
    .unwrap();

    // An upgrade with a 300 ms request timeout whose real write of the
    // Deployment hangs (its dry run answers at once): the ConfigMap before
    // it in install order is applied, then the Deployment's PATCH times out.
    let cluster = env
        .cluster
        .clone()
        .with_request_timeout(Some(std::time::Duration::from_millis(300)));
    fake.inject(Fault::delay(
        "patch",
        "deployments",
        std::time::Duration::ZERO,
    ));
    fake.inject(Fault::delay(
        "patch",
        "deployments",
        std::time::Duration::from_secs(5),
    ));
    let req = request(
        "web",
        "apps",
        render("web", &chart, "apps", &["replicas=3", "greeting=bye"], &[]),
    );
    let mut progress = |_: apply::Progress<'_>| {};
    let mut log = |_: &str| {};
    let started = std::time::Instant::now();
    let e = release::upgrade_install(&cluster, &req, &mut progress, &mut log)
        .await
        .unwrap_err()
        .to_string();
    assert!(started.elapsed() < std::time::Duration::from_secs(4));
    let timed_out = "apply Deployment.apps apps/web: request timed out after 300ms (--request-timeout); the server may still carry it out";
    assert_eq!(e, timed_out);
    // helm's failRelease: the revision is recorded failed, with the error.
    let hist = release::history(&env.cluster, "web", "apps").await.unwrap();
    assert_eq!(
        statuses(&env, "web", "apps").await,
        [(1, Status::Deployed), (2, Status::Failed)]
    );
    assert_eq!(
        description(&hist[1]),
        format!("Upgrade \"web\" failed: {timed_out}")
    );
    let cm = get(&env, "v1", "ConfigMap", Some("apps"), "web-config")
        .await
        .unwrap();
    assert_eq!(cm["data"]["a"], "bye");
    let d = get(&env, "apps/v1", "Deployment", Some("apps"), "web")
        .await
        .unwrap();
    assert_eq!(d["spec"]["replicas"], 1, "the abandoned write landed");

    // The next apply (same process, same timeout, no fault) completes it.
    let (r, _) = {
        let mut lines = Vec::new();
        let mut log = |l: &str| lines.push(l.to_string());
        let r = release::upgrade_install(&cluster, &req, &mut progress, &mut log).await;
        (r, lines)
    };
    let rep = deployed(&r.unwrap()).clone();
    let configured: Vec<String> = rep.configured.iter().map(|k| k.to_string()).collect();
    assert_eq!(configured, ["Deployment.apps apps/web"]);
    let d = get(&env, "apps/v1", "Deployment", Some("apps"), "web")
        .await
        .unwrap();
    assert_eq!(d["spec"]["replicas"], 3);
    assert_eq!(
        statuses(&env, "web", "apps").await,
        [
            (1, Status::Superseded),
            (2, Status::Failed),
            (3, Status::Deployed)
        ]
    );
}

#[tokio::test]
async fn timed_out_release_record_writes_keep_history_and_the_next_apply_completes_it_against_fake_apiserver()
 {
    let env = env().await;
    let fake = fake_only!(env);
    let dir = tempfile::tempdir().unwrap();
    let chart = app_chart(dir.path());
    let cluster = env
        .cluster
        .clone()
        .with_request_timeout(Some(std::time::Duration::from_millis(300)));
    let run = |req: release::InstallRequest| {
        let cluster = cluster.clone();
        async move {
            let mut lines = Vec::new();
            let mut progress = |_: apply::Progress<'_>| {};
            let r = {
                let mut log = |l: &str| lines.push(l.to_string());
                release::upgrade_install(&cluster, &req, &mut progress, &mut log).await
            };
            (r.map_err(|e| e.to_string()), lines)
        }
    };
    let slow = std::time::Duration::from_secs(5);
    let req = |replicas: &str| {
        request(
            "web",
            "apps",
            render("web", &chart, "apps", &[replicas], &[]),
        )
    };
    run(req("replicas=1")).await.0.unwrap();

    // 1. The write marking revision 2 deployed times out, after every
    // object was applied: revision 2 is marked failed instead.
    fake.inject(Fault::delay("update", "secrets", slow).name("sh.helm.release.v1.web.v2"));
    let (r, _) = run(req("replicas=2")).await;
    assert_eq!(
        r.unwrap_err(),
        "update release secret \"sh.helm.release.v1.web.v2\": request timed out after 300ms (--request-timeout); the server may still carry it out"
    );
    assert_eq!(
        statuses(&env, "web", "apps").await,
        [(1, Status::Superseded), (2, Status::Failed)]
    );
    let d = get(&env, "apps/v1", "Deployment", Some("apps"), "web")
        .await
        .unwrap();
    assert_eq!(d["spec"]["replicas"], 2);
    // The next apply finds every object as wanted and deploys revision 3.
    let (r, _) = run(req("replicas=2")).await;
    assert_eq!(deployed(&r.unwrap()).unchanged.len(), 6);

    // 2. Both that write and the one marking the revision failed time out:
    // revision 4 is left pending-upgrade. This process no longer works on
    // it, so the next apply (same process) recovers it at once.
    fake.inject(
        Fault::delay("update", "secrets", slow)
            .name("sh.helm.release.v1.web.v4")
            .times(2),
    );
    let (r, log) = run(req("replicas=4")).await;
    assert!(r.unwrap_err().contains("request timed out after 300ms"));
    assert!(
        log.iter()
            .any(|l| l.starts_with("warning: could not mark revision 4 failed")),
        "{log:?}"
    );
    assert_eq!(
        statuses(&env, "web", "apps").await.last(),
        Some(&(4, Status::PendingUpgrade))
    );
    let (r, log) = run(req("replicas=4")).await;
    r.unwrap();
    assert!(
        log.iter().any(|l| l
            .starts_with("recovering release \"web\": revision 4 was left pending-upgrade by ")
            && l.contains("(this process), whose operation ended; marking it failed")),
        "{log:?}"
    );

    // 3. The create of the pending record times out: nothing is applied.
    fake.inject(Fault::delay("create", "secrets", slow));
    let (r, _) = run(req("replicas=6")).await;
    assert_eq!(
        r.unwrap_err(),
        "create release secret \"sh.helm.release.v1.web.v6\": request timed out after 300ms (--request-timeout); the server may still carry it out"
    );
    let d = get(&env, "apps/v1", "Deployment", Some("apps"), "web")
        .await
        .unwrap();
    assert_eq!(d["spec"]["replicas"], 4);

    // 4. The history read times out: nothing is written at all.
    let rv = fake.resource_version();
    fake.inject(Fault::delay("list", "secrets", slow));
    let (r, _) = run(req("replicas=6")).await;
    assert!(
        r.unwrap_err()
            .starts_with("list release secret \"owner=helm,name=web\": request timed out"),
    );
    assert_eq!(fake.resource_version(), rv);

    // Then a clean run; no revision was lost on the way.
    let (r, _) = run(req("replicas=6")).await;
    assert!(matches!(
        r.unwrap(),
        InstallOutcome::Deployed { version: 6, .. }
    ));
    assert_eq!(
        statuses(&env, "web", "apps").await,
        [
            (1, Status::Superseded),
            (2, Status::Failed),
            (3, Status::Superseded),
            (4, Status::Failed),
            (5, Status::Superseded),
            (6, Status::Deployed)
        ]
    );
}

#[tokio::test]
async fn abandoned_pending_record_is_recovered_against_fake_apiserver() {
    let env = env().await;
    let dir = tempfile::tempdir().unwrap();
    let chart = app_chart(dir.path());
    let req = request("web", "apps", render("web", &chart, "apps", &[], &[]));
    install(&env, &req).await.0.unwrap();
    // A revision left pending-upgrade by a process of this host that died.
    let store = release::Store::new(&env.cluster, "apps");
    let mut rel = release::history(&env.cluster, "web", "apps").await.unwrap()[0].clone();
    rel.version = 2;
    rel.info.as_mut().unwrap().status = Status::PendingUpgrade;
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    store
        .create(&rel, Some(&format!("{}/{}", host.trim(), 1 << 23)))
        .await
        .unwrap();

    let req2 = request(
        "web",
        "apps",
        render("web", &chart, "apps", &["replicas=2"], &[]),
    );
    let (r, log) = install(&env, &req2).await;
    r.unwrap();
    assert!(
        log.iter()
            .any(|l| l.contains("recovering release \"web\": revision 2 was left pending-upgrade")),
        "{log:?}"
    );
    let hist = release::history(&env.cluster, "web", "apps").await.unwrap();
    let st: Vec<(i64, Status)> = hist.iter().map(|r| (r.version, r.status())).collect();
    assert_eq!(
        st,
        [
            (1, Status::Superseded),
            (2, Status::Failed),
            (3, Status::Deployed)
        ]
    );

    // A fresh pending record of a live process (another one) is respected.
    let mut other = std::process::Command::new("sleep")
        .arg("60")
        .spawn()
        .unwrap();
    rel.version = 4;
    store
        .create(&rel, Some(&format!("{}/{}", host.trim(), other.id())))
        .await
        .unwrap();
    let (r, _) = install(&env, &req).await;
    let _ = other.kill();
    let _ = other.wait();
    let e = r.unwrap_err().to_string();
    assert!(
        e.starts_with("another operation (install/upgrade/rollback) is in progress"),
        "{e}"
    );
}

#[tokio::test]
async fn release_over_one_mebibyte_is_refused_before_any_write_against_fake_apiserver() {
    let env = env().await;
    let dir = tempfile::tempdir().unwrap();
    // ~2 MiB of incompressible data across ConfigMaps.
    // Hex of a sha256 chain: half the entropy of the text survives gzip.
    use sha2::Digest;
    let mut h = sha2::Sha256::digest(b"seed").to_vec();
    let mut templates = Vec::new();
    for i in 0..4 {
        let mut data = String::new();
        while data.len() < 800_000 {
            h = sha2::Sha256::digest(&h).to_vec();
            data.push_str(&hex::encode(&h));
        }
        templates.push((
            format!("cm{i}.yaml"),
            format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big{i}\ndata:\n  d: {data}\n"
            ),
        ));
    }
    let t: Vec<(&str, &str)> = templates
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    let chart = write_chart(dir.path(), "big", "", &t);
    let req = request("big", "apps", render("big", &chart, "apps", &[], &[]));
    let (r, _) = install(&env, &req).await;
    let e = r.unwrap_err().to_string();
    assert!(e.contains("over the 1048576-byte limit of a Secret"), "{e}");
    assert!(
        get(&env, "v1", "ConfigMap", Some("apps"), "big0")
            .await
            .is_none()
    );
}

#[tokio::test]
async fn uninstall_deletes_objects_and_records_keeps_policy_against_fake_apiserver() {
    let env = env().await;
    let ns = test_ns("apps");
    let dir = tempfile::tempdir().unwrap();
    let chart = app_chart(dir.path());
    install(
        &env,
        &request("web", &ns, render("web", &chart, &ns, &[], &[])),
    )
    .await
    .0
    .unwrap();
    let mut log = |_: &str| {};
    let rep = release::uninstall(&env.cluster, "web", &ns, &Default::default(), &mut log)
        .await
        .unwrap();
    assert_eq!(rep.deleted.len(), 4, "{rep:?}");
    assert_eq!(rep.kept.len(), 1);
    assert!(
        get(&env, "apps/v1", "Deployment", Some(&ns), "web")
            .await
            .is_none()
    );
    assert!(
        get(&env, "v1", "ConfigMap", Some(&ns), "web-kept")
            .await
            .is_some()
    );
    assert!(
        release::history(&env.cluster, "web", &ns)
            .await
            .unwrap()
            .is_empty()
    );
    let e = release::uninstall(&env.cluster, "web", &ns, &Default::default(), &mut log)
        .await
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "uninstall: Release not loaded: web: release: not found"
    );
}

#[tokio::test]
async fn live_diff_shows_live_and_would_be_against_fake_apiserver() {
    let env = env().await;
    let ns = test_ns("apps");
    let dir = tempfile::tempdir().unwrap();
    let chart = app_chart(dir.path());
    let r1 = render("web", &chart, &ns, &[], &[]);
    install(&env, &request("web", &ns, r1.clone()))
        .await
        .0
        .unwrap();
    let r2 = render("web", &chart, &ns, &["greeting=bye", "extra=false"], &[]);
    // As the release applies them: with its ownership metadata.
    let owner = apply::Owner::new("web", &ns);
    let desired = release::owned_objects(&r2, &owner).unwrap();
    let previous = apply::decode(&r1.manifests).unwrap();
    let rv_before = env.fake.as_ref().map(|f| f.resource_version());
    let mut opts = apply::ApplyOptions::new(&ns);
    opts.owner = Some(owner);
    let changes = apply::live_diff(&env.cluster, desired, previous, &opts)
        .await
        .unwrap();
    let keys: Vec<String> = changes.iter().map(|c| c.key.to_string()).collect();
    assert_eq!(
        keys,
        [
            format!("ConfigMap {ns}/web-config"),
            format!("ConfigMap {ns}/web-extra")
        ]
    );
    let live = &apply::run::display_yaml(changes[0].live.as_ref().unwrap());
    let would = &apply::run::display_yaml(changes[0].would_be.as_ref().unwrap());
    assert!(
        live.contains("a: hello") && would.contains("a: bye"),
        "{live}\n{would}"
    );
    assert!(!would.contains("managedFields") && !would.contains("resourceVersion"));
    assert!(changes[1].would_be.is_none());
    // A dry run writes nothing.
    assert_eq!(env.fake.as_ref().map(|f| f.resource_version()), rv_before);
    let _ = Outcome::Unchanged;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hooks_run_in_order_and_are_recorded_against_fake_apiserver() {
    let env = env().await;
    let fake = fake_only!(env);
    let dir = tempfile::tempdir().unwrap();
    let chart = write_chart(
        dir.path(),
        "hooked",
        "",
        &[
            (
                "cm.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: main\ndata:\n  a: \"1\"\n",
            ),
            (
                "pre.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: pre\n  annotations:\n    helm.sh/hook: pre-install\n    helm.sh/hook-delete-policy: hook-succeeded\ndata:\n  a: \"1\"\n",
            ),
            (
                "job.yaml",
                "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: migrate\n  annotations:\n    helm.sh/hook: post-install\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers:\n      - name: m\n        image: busybox\n",
            ),
        ],
    );
    // Play the kubelet: complete the Job once it exists.
    let client = env.cluster.client().clone();
    let f2 = fake.clone();
    let kubelet = tokio::spawn(async move {
        let jobs: Api<k8s_openapi::api::batch::v1::Job> = Api::namespaced(client, "apps");
        for _ in 0..400 {
            if f2.get("batch/v1/jobs", Some("apps"), "migrate").is_some() {
                let st = serde_json::json!({"status": {"conditions": [{"type": "Complete", "status": "True"}]}});
                jobs.patch_status("migrate", &PatchParams::default(), &Patch::Merge(st))
                    .await
                    .unwrap();
                return true;
            }
            tokio::time::sleep(std::time::Duration::from_millis(25)).await;
        }
        false
    });
    let req = request("hooked", "apps", render("hooked", &chart, "apps", &[], &[]));
    let (r, _) = install(&env, &req).await;
    r.unwrap();
    assert!(kubelet.await.unwrap());
    // The hook-succeeded ConfigMap is gone, the Job (default policy) stays.
    assert!(fake.get("v1/configmaps", Some("apps"), "pre").is_none());
    assert!(fake.get("batch/v1/jobs", Some("apps"), "migrate").is_some());
    let rel = &release::history(&env.cluster, "hooked", "apps")
        .await
        .unwrap()[0];
    assert!(!rel.manifest.contains("migrate"));
    let phases: Vec<(&str, &str)> = rel
        .hooks
        .iter()
        .map(|h| (h.name.as_str(), h.last_run.phase.as_str()))
        .collect();
    assert_eq!(phases, [("pre", "Succeeded"), ("migrate", "Succeeded")]);
}

#[tokio::test]
async fn failing_hook_fails_the_release_against_fake_apiserver() {
    let env = env().await;
    let fake = fake_only!(env);
    let dir = tempfile::tempdir().unwrap();
    let chart = write_chart(
        dir.path(),
        "hooked",
        "",
        &[(
            "pod.yaml",
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: check\n  annotations:\n    helm.sh/hook: pre-install\nspec:\n  containers:\n  - name: c\n    image: busybox\n",
        )],
    );
    let mut req = request("hooked", "apps", render("hooked", &chart, "apps", &[], &[]));
    req.hook_timeout = std::time::Duration::from_millis(600);
    let (r, _) = install(&env, &req).await;
    let e = r.unwrap_err().to_string();
    assert_eq!(
        e,
        "pre-install hook Pod check: timed out waiting for the condition"
    );
    let rel = &release::history(&env.cluster, "hooked", "apps")
        .await
        .unwrap()[0];
    assert_eq!(rel.status(), Status::Failed);
    assert!(fake.get("v1/pods", Some("apps"), "check").is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hook_waits_retry_server_errors_but_report_other_failures_against_fake_apiserver() {
    let env = env().await;
    let fake = fake_only!(env);
    let dir = tempfile::tempdir().unwrap();
    let chart = write_chart(
        dir.path(),
        "hooked",
        "",
        &[(
            "pod.yaml",
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: check\n  annotations:\n    helm.sh/hook: pre-install,pre-upgrade\nspec:\n  containers:\n  - name: c\n    image: busybox\n",
        )],
    );
    // Play the kubelet: the Pod succeeds once it exists.
    let client = env.cluster.client().clone();
    let f2 = fake.clone();
    let kubelet = tokio::spawn(async move {
        let pods: Api<k8s_openapi::api::core::v1::Pod> = Api::namespaced(client, "apps");
        for _ in 0..400 {
            if f2.get("v1/pods", Some("apps"), "check").is_some() {
                let st = serde_json::json!({"status": {"phase": "Succeeded"}});
                pods.patch_status("check", &PatchParams::default(), &Patch::Merge(st))
                    .await
                    .unwrap();
                return true;
            }
            tokio::time::sleep(std::time::Duration::from_millis(25)).await;
        }
        false
    });
    let mut req = request("hooked", "apps", render("hooked", &chart, "apps", &[], &[]));
    req.hook_timeout = std::time::Duration::from_secs(10);
    // Reads of the Pod answered 503 twice: the waits ask again.
    fake.inject(Fault::fail("get", "pods", 503).times(2));
    let (r, _) = install(&env, &req).await;
    r.unwrap();
    assert!(kubelet.await.unwrap());

    // A 403 is not worth waiting for: the hook fails at once, with it.
    fake.inject(Fault::fail("get", "pods", 403));
    let started = std::time::Instant::now();
    req.rendered.hooks[0].content.push_str("\n# changed\n");
    let (r, _) = install(&env, &req).await;
    let e = r.unwrap_err().to_string();
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    assert_eq!(
        e,
        "get Pod apps/check: injected fault: get pods failed with 403 (403 Forbidden)"
    );
}

/// metrics-server's chart registers an `APIService`; the fake serves every
/// stable built-in kind of the version it reports (from k8s-openapi).
#[tokio::test]
async fn api_service_and_other_builtin_kinds_apply_against_fake_apiserver() {
    let env = env().await;
    let ns = test_ns("metrics");
    let dir = tempfile::tempdir().unwrap();
    let chart = write_chart(
        dir.path(),
        "metrics",
        "",
        &[
            (
                "apiservice.yaml",
                "apiVersion: apiregistration.k8s.io/v1\nkind: APIService\nmetadata:\n  name: v1beta1.metrics.k8s.io\nspec:\n  group: metrics.k8s.io\n  version: v1beta1\n  groupPriorityMinimum: 100\n  versionPriority: 100\n  insecureSkipTLSVerify: true\n  service:\n    name: metrics-server\n    namespace: {{ .Release.Namespace }}\n",
            ),
            (
                "runtimeclass.yaml",
                "apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata:\n  name: gvisor\nhandler: runsc\n",
            ),
        ],
    );
    let req = request("metrics", &ns, render("metrics", &chart, &ns, &[], &[]));
    let (r, _) = install(&env, &req).await;
    assert_eq!(deployed(&r.unwrap()).created.len(), 3); // namespace + 2
    let svc = get(
        &env,
        "apiregistration.k8s.io/v1",
        "APIService",
        None,
        "v1beta1.metrics.k8s.io",
    )
    .await
    .unwrap();
    assert_eq!(svc["spec"]["service"]["namespace"], ns.as_str());
}

//! kube-prometheus-stack from the corpus (CRDs included) installed and
//! re-applied, against fake apiserver (or `ANTIOPA_TEST_KUBECONFIG`).
//! Skipped with a printed reason when the corpus is absent, except in CI.

mod cluster_support;

use antiopa::apply;
use antiopa::release::{InstallOutcome, Status};
use cluster_support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_creates_every_kps_object_and_reapply_is_free_against_fake_apiserver() {
    let Some(corpus) = corpus() else { return };
    let env = env().await;
    let ns = test_ns("monitoring");
    let chart = corpus.join("charts/kube-prometheus-stack");
    let rendered = render("kube-prometheus-stack", &chart, &ns, &[], &[]);
    let mut objects = apply::decode(&rendered.crds).unwrap();
    objects.extend(apply::decode(&rendered.manifests).unwrap());
    assert!(objects.len() > 100, "kps renders {} objects", objects.len());

    let mut req = request("kube-prometheus-stack", &ns, rendered);
    // Its admission-webhook hook Jobs never complete without a kubelet.
    req.no_hooks = true;
    let (r, _) = install(&env, &req).await;
    match r.unwrap() {
        InstallOutcome::Deployed { report, .. } => {
            assert_eq!(
                report.created.len(),
                objects.len() + 1,
                "{}",
                report.summary()
            )
        }
        other => panic!("{other:?}"),
    }
    for o in &objects {
        let ns_arg = o.namespace.as_deref().or(Some(ns.as_str()));
        assert!(
            get(&env, &o.api_version, &o.kind, ns_arg, &o.name)
                .await
                .is_some(),
            "{} missing after apply",
            o.key()
        );
    }
    let hist = antiopa::release::history(&env.cluster, "kube-prometheus-stack", &ns)
        .await
        .unwrap();
    assert_eq!(hist.last().unwrap().status(), Status::Deployed);

    let Some(fake) = &env.fake else { return };
    let rv = fake.resource_version();
    fake.reset_stats();
    let (r, _) = install(&env, &req).await;
    assert!(matches!(r.unwrap(), InstallOutcome::Unchanged { .. }));
    let s = fake.stats();
    println!(
        "unchanged kps re-apply: {} API requests for {} objects",
        s.api_requests(),
        objects.len()
    );
    assert_eq!(fake.resource_version(), rv);
    assert!((s.api_requests() as usize) < objects.len() * 2, "{s:?}");
}

//! kube-prometheus-stack from the corpus (CRDs included) installed,
//! upgraded and re-applied the way `antiopa apply` does it (each render for
//! the revision about to be written), against fake apiserver (or
//! `ANTIOPA_TEST_KUBECONFIG`). Skipped with a printed reason when the
//! corpus is absent, except in CI.

use std::path::Path;

use crate::cluster_support::*;
use antiopa::apply::{self, Rendered};
use antiopa::chart::template::{self, TemplateSettings};
use antiopa::release::{self, InstallOutcome, Status};

/// Render as `antiopa apply` does: for the next revision of the release.
/// The admission webhooks' `failurePolicy` is `IgnoreOnInstallOnly`
/// (`.Release.IsInstall | ternary "Ignore" "Fail"`).
async fn render_next(env: &Env, chart: &Path, ns: &str) -> Rendered {
    let hist = release::history(&env.cluster, "kube-prometheus-stack", ns)
        .await
        .unwrap();
    let next = release::next_revision(&hist);
    let mut e = antiopa::engine::Env::new();
    e.seed(7);
    let settings = TemplateSettings {
        args: vec!["kube-prometheus-stack".into(), chart.display().to_string()],
        namespace: ns.to_string(),
        values: antiopa::chart::strvals::ValueOptions {
            set: vec![
                "prometheusOperator.admissionWebhooks.failurePolicy=IgnoreOnInstallOnly".into(),
            ],
            ..Default::default()
        },
        include_crds: true,
        skip_tests: true,
        is_upgrade: next.is_upgrade,
        revision: next.version,
        env: e,
        ..Default::default()
    };
    let mut out = Vec::new();
    template::run(settings, &mut out, &mut std::io::sink()).expect("render kps");
    apply::split_rendered(&String::from_utf8(out).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_creates_every_kps_object_and_reapply_is_free_against_fake_apiserver() {
    let Some(corpus) = corpus() else { return };
    let env = env().await;
    let ns = test_ns("monitoring");
    let chart = corpus.join("charts/kube-prometheus-stack");
    let rendered = render_next(&env, &chart, &ns).await;
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
    let hist = release::history(&env.cluster, "kube-prometheus-stack", &ns)
        .await
        .unwrap();
    assert_eq!(hist.last().unwrap().status(), Status::Deployed);
    let webhook = |name: &str| {
        let env = &env;
        let name = name.to_string();
        async move {
            get(
                env,
                "admissionregistration.k8s.io/v1",
                "ValidatingWebhookConfiguration",
                None,
                &name,
            )
            .await
            .unwrap()["webhooks"][0]["failurePolicy"]
                .clone()
        }
    };
    let name = "kube-prometheus-stack-admission";
    assert_eq!(webhook(name).await, "Ignore");

    // The first upgrade, same values: rendered with IsUpgrade, only the
    // two webhook configurations change.
    req.rendered = render_next(&env, &chart, &ns).await;
    let (r, _) = install(&env, &req).await;
    match r.unwrap() {
        InstallOutcome::Deployed { version, report } => {
            assert_eq!(version, 2);
            let mut kinds: Vec<&str> = report.configured.iter().map(|k| k.kind.as_str()).collect();
            kinds.sort();
            assert_eq!(
                kinds,
                [
                    "MutatingWebhookConfiguration",
                    "ValidatingWebhookConfiguration"
                ],
                "{}",
                report.summary()
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(webhook(name).await, "Fail");

    // Then an unchanged re-apply costs almost nothing.
    let rendered = render_next(&env, &chart, &ns).await;
    assert_eq!(rendered.manifests, req.rendered.manifests);
    let Some(fake) = &env.fake else { return };
    let rv = fake.resource_version();
    fake.reset_stats();
    let (r, _) = install(&env, &req).await;
    assert!(matches!(
        r.unwrap(),
        InstallOutcome::Unchanged { version: 2 }
    ));
    let s = fake.stats();
    println!(
        "unchanged kps re-apply: {} API requests for {} objects",
        s.api_requests(),
        objects.len()
    );
    assert_eq!(fake.resource_version(), rv);
    assert!((s.api_requests() as usize) < objects.len() * 2, "{s:?}");
}

//! Malformed manifests through `antiopa apply` against fake apiserver: each
//! is a clear error naming the template, and nothing is half-applied (no
//! object, no release record written).

use crate::cluster_support::*;

/// A chart whose `good.yaml` is fine and whose `bad.yaml` is `bad`.
fn chart_with(dir: &std::path::Path, bad: &str) -> std::path::PathBuf {
    write_chart(
        dir,
        "bad",
        "",
        &[
            (
                "good.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: good\ndata:\n  a: \"1\"\n",
            ),
            ("bad.yaml", bad),
        ],
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_manifests_fail_before_any_write_against_fake_apiserver() {
    let s = serve().await;
    let cases: &[(&str, &str, &str)] = &[
        (
            "object without a name",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  labels: {a: b}\n",
            "bad/templates/bad.yaml: object has no metadata.name",
        ),
        (
            "object without a kind",
            "apiVersion: v1\nmetadata:\n  name: x\n",
            "bad/templates/bad.yaml: object has no kind",
        ),
        (
            "kind the server does not serve",
            "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n",
            "resource mapping not found for name: \"w\" namespace: \"\" from \"bad/templates/bad.yaml\": no matches for kind \"Widget\" in version \"example.com/v1\"\nensure CRDs are installed first",
        ),
        (
            "rendered text that is not YAML",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: [x\n",
            "YAML parse error on bad/templates/bad.yaml:",
        ),
    ];
    for (what, bad, want) in cases {
        let dir = tempfile::tempdir().unwrap();
        let chart = chart_with(dir.path(), bad);
        let out = run_args(
            antiopa(),
            args(
                &[
                    "apply",
                    "web",
                    &chart.display().to_string(),
                    "-n",
                    "apps",
                    "--create-namespace",
                ],
                &s.kubeconfig,
            ),
        )
        .await;
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{what}: {err}");
        assert!(err.contains(want), "{what}: {err}");
        assert!(
            s.fake.get("v1/configmaps", Some("apps"), "good").is_none(),
            "{what}: half-applied"
        );
        let records = s.fake.list("v1/secrets");
        assert!(records.is_empty(), "{what}: a release record was written");
    }
}

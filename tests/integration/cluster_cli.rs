//! The `antiopa` binary over HTTP against fake apiserver (served on
//! 127.0.0.1 with a kubeconfig): `.Release.Revision`/`IsInstall`/
//! `IsUpgrade` rendered for the revision written, NOTES.txt printed and
//! recorded (read back by the real helm's `get notes` when it is there),
//! and `--request-timeout` failing a hung write that the next apply
//! completes.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use crate::cluster_support::*;
use antiopa::cluster::{Cluster, RateLimit};
use antiopa::release::{self, Status};

/// Run a binary with `--kubeconfig` appended.
async fn run(bin: PathBuf, list: &[&str], kubeconfig: &Path) -> Output {
    run_args(bin, args(list, kubeconfig)).await
}

/// A chart whose ConfigMap and NOTES show the release fields.
fn release_chart(dir: &Path) -> PathBuf {
    write_chart(
        dir,
        "rev",
        "greeting: hello\n",
        &[
            (
                "cm.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-release\ndata:\n  revision: {{ .Release.Revision | quote }}\n  install: {{ .Release.IsInstall | quote }}\n  upgrade: {{ .Release.IsUpgrade | quote }}\n  greeting: {{ .Values.greeting | quote }}\n",
            ),
            (
                "NOTES.txt",
                "{{ .Release.Name }} is at revision {{ .Release.Revision }}{{ if .Release.IsUpgrade }} (upgrade){{ end }}.\nSay {{ .Values.greeting }}.\n",
            ),
        ],
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn release_revision_and_notes_follow_the_revision_written_against_fake_apiserver() {
    let s = serve().await;
    let dir = tempfile::tempdir().unwrap();
    let chart = release_chart(dir.path());
    let c = chart.display().to_string();
    let apply = ["apply", "web", &c, "-n", "apps", "--create-namespace"];

    let out = ok(&run(antiopa(), &apply, &s.kubeconfig).await);
    assert!(out.contains("release \"web\" revision 1 deployed"), "{out}");
    assert!(
        out.ends_with("NOTES:\nweb is at revision 1.\nSay hello.\n"),
        "{out}"
    );
    let cm = s
        .fake
        .get("v1/configmaps", Some("apps"), "web-release")
        .unwrap();
    assert_eq!(cm["data"]["revision"], "1");
    assert_eq!(cm["data"]["install"], "true");
    assert_eq!(cm["data"]["upgrade"], "false");

    let mut again = apply.to_vec();
    again.extend(["--set", "greeting=bye"]);
    let out = ok(&run(antiopa(), &again, &s.kubeconfig).await);
    assert!(out.contains("release \"web\" revision 2 deployed"), "{out}");
    assert!(
        out.ends_with("NOTES:\nweb is at revision 2 (upgrade).\nSay bye.\n"),
        "{out}"
    );
    let cm = s
        .fake
        .get("v1/configmaps", Some("apps"), "web-release")
        .unwrap();
    assert_eq!(cm["data"]["revision"], "2");
    assert_eq!(cm["data"]["install"], "false");
    assert_eq!(cm["data"]["upgrade"], "true");

    // The notes are in the record (`info.notes`), revision by revision.
    let cluster = Cluster::from_client(s.fake.client(), RateLimit { qps: 0.0, burst: 1 });
    let hist = release::history(&cluster, "web", "apps").await.unwrap();
    let notes: Vec<&str> = hist
        .iter()
        .map(|r| r.info.as_ref().unwrap().notes.as_str())
        .collect();
    assert_eq!(
        notes,
        [
            "web is at revision 1.\nSay hello.\n",
            "web is at revision 2 (upgrade).\nSay bye.\n"
        ]
    );

    // A chart that prints its revision renders differently for every
    // revision, so even the same values make a new one (as every helm
    // upgrade does); only that ConfigMap changes.
    let out = ok(&run(antiopa(), &again, &s.kubeconfig).await);
    assert!(
        out.contains("release \"web\" revision 3 deployed: created 0, configured 1, unchanged 1"),
        "{out}"
    );

    // The real helm reads them (`helm get notes` prints them untrimmed).
    let Some(helm) = helm() else { return };
    let out = ok(&run(helm, &["get", "notes", "web", "-n", "apps"], &s.kubeconfig).await);
    assert_eq!(out, "NOTES:\nweb is at revision 3 (upgrade).\nSay bye.\n\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_timeout_fails_a_hung_write_and_the_next_apply_completes_it_against_fake_apiserver()
{
    let s = serve().await;
    let dir = tempfile::tempdir().unwrap();
    let chart = app_chart(dir.path());
    let c = chart.display().to_string();
    let base = ["apply", "web", &c, "-n", "apps", "--create-namespace"];
    ok(&run(antiopa(), &base, &s.kubeconfig).await);

    // The Deployment's dry run answers; its real write hangs for 3 s.
    s.fake
        .inject(Fault::delay("patch", "deployments", Duration::ZERO));
    s.fake
        .inject(Fault::delay("patch", "deployments", Duration::from_secs(3)));
    let mut upgrade = base.to_vec();
    upgrade.extend(["--set", "replicas=2", "--request-timeout", "500ms"]);
    let out = run(antiopa(), &upgrade, &s.kubeconfig).await;
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            "apply Deployment.apps apps/web: request timed out after 500ms (--request-timeout); the server may still carry it out"
        ),
        "{err}"
    );
    let cluster = Cluster::from_client(s.fake.client(), RateLimit { qps: 0.0, burst: 1 });
    let hist = release::history(&cluster, "web", "apps").await.unwrap();
    let st: Vec<(i64, Status)> = hist.iter().map(|r| (r.version, r.status())).collect();
    assert_eq!(st, [(1, Status::Deployed), (2, Status::Failed)]);

    // The next apply completes the release, whether or not the server got
    // round to the abandoned write meanwhile.
    let out = ok(&run(antiopa(), &upgrade, &s.kubeconfig).await);
    assert!(out.contains("release \"web\" revision 3 deployed"), "{out}");
    let d = s
        .fake
        .get("apps/v1/deployments", Some("apps"), "web")
        .unwrap();
    assert_eq!(d["spec"]["replicas"], 2);
    let out = ok(&run(antiopa(), &["history", "web", "-n", "apps"], &s.kubeconfig).await);
    let rows: Vec<&str> = out.lines().skip(1).collect();
    assert_eq!(rows.len(), 3, "{out}");
    assert!(rows[0].contains("superseded"), "{out}");
    assert!(
        rows[1].contains("failed") && rows[1].contains("request timed out after 500ms"),
        "{out}"
    );
    assert!(rows[2].contains("deployed"), "{out}");

    // Durations as helm and kubectl spell them; a bad one is refused.
    let out = run(
        antiopa(),
        &["history", "web", "-n", "apps", "--request-timeout", "2x"],
        &s.kubeconfig,
    )
    .await;
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("invalid timeout value"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_errors_are_retried_a_bounded_number_of_times_against_fake_apiserver() {
    let s = serve().await;
    let dir = tempfile::tempdir().unwrap();
    let chart = app_chart(dir.path());
    let c = chart.display().to_string();
    ok(&run(
        antiopa(),
        &["apply", "web", &c, "-n", "apps", "--create-namespace"],
        &s.kubeconfig,
    )
    .await);
    let history = ["history", "web", "-n", "apps"];

    // Two 503s on the history LIST: the client asks again, and succeeds.
    s.fake.inject(Fault::fail("list", "secrets", 503).times(2));
    let out = ok(&run(antiopa(), &history, &s.kubeconfig).await);
    assert!(out.contains("deployed"), "{out}");

    // A server that keeps failing is reported after 3 retries, not hidden
    // behind minutes of backoff.
    s.fake.inject(Fault::fail("list", "secrets", 503).times(10));
    s.fake.reset_stats();
    let started = std::time::Instant::now();
    let out = run(antiopa(), &history, &s.kubeconfig).await;
    assert!(!out.status.success());
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(s.fake.stats().list, 4);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            "list release secret \"owner=helm,name=web\": injected fault: list secrets failed with 503 (503 ServiceUnavailable)"
        ),
        "{err}"
    );

    // A 500 is not retried (client-go does not either without Retry-After).
    s.fake.clear_faults();
    s.fake.inject(Fault::fail("list", "secrets", 500));
    s.fake.reset_stats();
    let out = run(antiopa(), &history, &s.kubeconfig).await;
    assert!(!out.status.success());
    assert_eq!(s.fake.stats().list, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_diff_masks_secret_values_against_fake_apiserver() {
    let s = serve().await;
    let dir = tempfile::tempdir().unwrap();
    let chart = write_chart(
        dir.path(),
        "sec",
        "password: hunter2\n",
        &[(
            "secret.yaml",
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\ndata:\n  password: {{ .Values.password | b64enc }}\n  user: {{ \"admin\" | b64enc }}\n",
        )],
    );
    let c = chart.display().to_string();
    ok(&run(
        antiopa(),
        &["apply", "web", &c, "-n", "apps", "--create-namespace"],
        &s.kubeconfig,
    )
    .await);
    let live = [
        "diff",
        "--live",
        "web",
        &c,
        "-n",
        "apps",
        "--set",
        "password=correct-horse",
    ];
    let out = run(antiopa(), &live, &s.kubeconfig).await;
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    // base64 of hunter2, correct-horse and admin.
    for secret in ["aHVudGVyMg==", "Y29ycmVjdC1ob3JzZQ==", "YWRtaW4="] {
        assert!(!text.contains(secret), "{text}");
    }
    assert!(
        text.contains("-  password: '*** (before)'") && text.contains("+  password: '*** (after)'"),
        "{text}"
    );
    assert!(text.contains("   user: '***'"), "{text}");

    let mut shown = live.to_vec();
    shown.push("--show-secrets");
    let out = run(antiopa(), &shown, &s.kubeconfig).await;
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Y29ycmVjdC1ob3JzZQ=="), "{text}");
}

/// `lookup` reads the cluster when antiopa applies (get one, list in a
/// namespace, a cluster-scoped kind, absent and unknown kinds empty), and
/// stays empty offline as in `helm template`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lookup_reads_the_cluster_on_apply_against_fake_apiserver() {
    let s = serve().await;
    let dir = tempfile::tempdir().unwrap();
    let chart = write_chart(
        dir.path(),
        "look",
        "",
        &[(
            "cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: looked\ndata:\n  one: {{ dig \"data\" \"key\" \"none\" (lookup \"v1\" \"ConfigMap\" .Release.Namespace \"existing\") | quote }}\n  count: {{ (lookup \"v1\" \"ConfigMap\" .Release.Namespace \"\").items | default list | len | quote }}\n  kinds: {{ range (lookup \"v1\" \"ConfigMap\" .Release.Namespace \"\").items }}{{ .kind }}/{{ .metadata.name }},{{ end }}\n  absent: {{ if not (lookup \"v1\" \"Secret\" .Release.Namespace \"nope\") }}\"yes\"{{ else }}\"no\"{{ end }}\n  unknown: {{ if not (lookup \"example.com/v1\" \"Widget\" \"\" \"\") }}\"empty\"{{ end }}\n  ns: {{ dig \"metadata\" \"name\" \"none\" (lookup \"v1\" \"Namespace\" \"\" .Release.Namespace) | quote }}\n",
        )],
    );
    let c = chart.display().to_string();
    s.fake
        .seed(
            "v1/namespaces",
            serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "apps"}}),
        )
        .unwrap();
    s.fake
        .seed(
            "v1/configmaps",
            serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "existing", "namespace": "apps"}, "data": {"key": "from-cluster"}}),
        )
        .unwrap();
    ok(&run(
        antiopa(),
        &["apply", "web", &c, "-n", "apps"],
        &s.kubeconfig,
    )
    .await);
    let cm = s.fake.get("v1/configmaps", Some("apps"), "looked").unwrap();
    assert_eq!(cm["data"]["one"], "from-cluster");
    assert_eq!(cm["data"]["count"], "1");
    assert_eq!(cm["data"]["kinds"], "ConfigMap/existing,");
    assert_eq!(cm["data"]["absent"], "yes");
    assert_eq!(cm["data"]["unknown"], "empty");
    assert_eq!(cm["data"]["ns"], "apps");

    // Offline, as `helm template`: every lookup is empty.
    let template = ["template", "web", &c, "-n", "apps"]
        .map(String::from)
        .to_vec();
    let out = ok(&run_args(antiopa(), template).await);
    assert!(
        out.contains("one: \"none\"") && out.contains("count: \"0\""),
        "{out}"
    );
}

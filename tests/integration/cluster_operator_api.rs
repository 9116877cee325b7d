//! `antiopa run`'s HTTP server and debug socket, the real binary against
//! fake apiserver with real kubectl editing its ConfigMap: `/healthz`
//! answers at once, `/readyz` says 503 until the first converge is done
//! (a slow global hook holds it) and 200 after; `/metrics` carries
//! addon-operator's metric names and labels, and its module-run figures
//! move when a ConfigMap edit runs the module again; `/metrics/hooks`
//! carries what a hook wrote to `METRICS_PATH`, its group's old series
//! gone when the hook writes the group again; `antiopa module values`,
//! `module render` (Secret values masked), `module list`, `module status`
//! and `queue list` ask the running operator through its socket.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::cluster_operator::{Operator, eventually, executable, patch_config, prepare};
use crate::cluster_support::*;

/// Module `web`: a beforeHelm hook exporting metrics (group `inventory`:
/// pod and svc while the greeting is "hello", pod alone after), a chart
/// with a ConfigMap and a Secret; a global onStartup hook that sleeps, so
/// the first converge takes a few seconds.
fn tree(dir: &Path) -> (PathBuf, PathBuf) {
    let modules = dir.join("modules");
    let global = dir.join("global-hooks");
    let web = modules.join("010-web");
    std::fs::create_dir_all(web.join("templates")).unwrap();
    std::fs::create_dir_all(web.join("hooks")).unwrap();
    std::fs::create_dir_all(&global).unwrap();
    std::fs::write(modules.join("values.yaml"), "webEnabled: true\n").unwrap();
    std::fs::write(
        web.join("Chart.yaml"),
        "apiVersion: v2\nname: web\nversion: 0.1.0\n",
    )
    .unwrap();
    std::fs::write(web.join("values.yaml"), "web:\n  greeting: none\n").unwrap();
    std::fs::write(
        web.join("templates/objects.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-config\ndata:\n  greeting: {{ .Values.web.greeting | quote }}\n---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: web-secret\ndata:\n  password: {{ \"s3cr3t-value\" | b64enc }}\nstringData:\n  token: plain-token-value\n",
    )
    .unwrap();
    executable(
        &web.join("hooks/metrics.sh"),
        r#"#!/bin/sh
if [ "$1" = "--config" ]; then echo '{"configVersion":"v1","beforeHelm":1}'; exit 0; fi
if grep -q '"greeting":"hello"' "$VALUES_PATH"; then
  echo '{"group":"inventory","name":"web_items","set":1,"labels":{"kind":"pod"}}' >> "$METRICS_PATH"
  echo '{"group":"inventory","name":"web_items","set":5,"labels":{"kind":"svc"}}' >> "$METRICS_PATH"
else
  echo '{"group":"inventory","name":"web_items","set":2,"labels":{"kind":"pod"}}' >> "$METRICS_PATH"
fi
echo 'hook says hi' >&2
"#,
    );
    executable(
        &global.join("startup.sh"),
        "#!/bin/sh\nif [ \"$1\" = \"--config\" ]; then echo '{\"configVersion\":\"v1\",\"onStartup\":1}'; exit 0; fi\nsleep 4\n",
    );
    (modules, global)
}

/// The value of the sample `name{…}` whose labels include all of `labels`.
fn sample(text: &str, name: &str, labels: &[&str]) -> Option<f64> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter(|l| l.starts_with(&format!("{name}{{")) || l.starts_with(&format!("{name} ")))
        .find(|l| labels.iter().all(|x| l.contains(x)))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

/// `antiopa ARGS --debug-socket SOCKET`: (exit code, stdout, stderr).
async fn ctl(socket: &Path, args: &[&str]) -> (i32, String, String) {
    let mut all: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    all.push("--debug-socket".into());
    all.push(socket.display().to_string());
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(antiopa())
            .args(&all)
            .env_remove("DEBUG_UNIX_SOCKET")
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operator_serves_metrics_health_and_its_debug_socket_against_fake_apiserver() {
    let s = serve().await;
    let kc = &s.kubeconfig;
    let dir = tempfile::tempdir().unwrap();
    let (modules, global) = tree(dir.path());
    prepare(kc, Some("web=greeting: hello")).await;
    let log = dir.path().join("op.log");
    let socket = log.with_extension("sock");
    let op = Operator::start(kc, &modules, &global, &log, &[]);

    // The port it chose (the test asks for port 0), from its log.
    let mut addr = String::new();
    eventually(Duration::from_secs(30), "HTTP server listening", || {
        addr = op
            .log()
            .lines()
            .find(|l| l.contains("HTTP server (metrics, health) listening"))
            .and_then(|l| l.split("address=").nth(1))
            .map(|a| a.split_whitespace().next().unwrap_or("").to_string())
            .unwrap_or_default();
        let found = !addr.is_empty();
        async move { found }
    })
    .await;
    let a = addr.clone();
    let (health, _) = tokio::task::spawn_blocking(move || http_get(&a, "/healthz"))
        .await
        .unwrap();
    assert_eq!(health, 200);
    let a = addr.clone();
    let (ready, text) = tokio::task::spawn_blocking(move || http_get(&a, "/readyz"))
        .await
        .unwrap();
    assert_eq!(
        ready,
        503,
        "not ready while the startup hook sleeps: {text}\n{}",
        op.log()
    );

    eventually(
        Duration::from_secs(60),
        "ready after the first converge",
        || {
            let a = addr.clone();
            async move {
                tokio::task::spawn_blocking(move || http_get(&a, "/readyz").0)
                    .await
                    .unwrap()
                    == 200
            }
        },
    )
    .await;

    let get = |path: &'static str| {
        let a = addr.clone();
        async move {
            tokio::task::spawn_blocking(move || http_get(&a, path))
                .await
                .unwrap()
        }
    };
    let (code, m) = get("/metrics").await;
    assert_eq!(code, 200);
    let startup = "activation=\"OperatorStartup\"";
    let web = "module=\"web\"";
    for (name, labels) in [
        (
            "addon_operator_module_run_seconds_count",
            vec![web, startup],
        ),
        (
            "addon_operator_module_hook_run_seconds_count",
            vec![
                web,
                startup,
                "binding=\"beforeHelm\"",
                "queue=\"main\"",
                "hook=\"",
            ],
        ),
        (
            "addon_operator_module_hook_success_total",
            vec![web, "binding=\"beforeHelm\""],
        ),
        (
            "addon_operator_global_hook_run_seconds_count",
            vec!["binding=\"onStartup\"", "hook=\"startup.sh\"", startup],
        ),
        (
            "addon_operator_global_hook_success_total",
            vec!["hook=\"startup.sh\""],
        ),
        ("addon_operator_convergence_total", vec![startup]),
        ("addon_operator_mm_module_enabled", vec![web]),
        (
            "addon_operator_helm_operation_seconds_count",
            vec![web, "operation=\"upgrade\""],
        ),
    ] {
        assert_eq!(
            sample(&m, name, &labels),
            Some(1.0),
            "{name}{labels:?} in\n{m}"
        );
    }
    for name in [
        "addon_operator_live_ticks",
        "addon_operator_tasks_queue_length",
        "addon_operator_config_values_errors_total",
        "addon_operator_modules_discover_errors_total",
        "addon_operator_convergence_seconds",
    ] {
        assert!(sample(&m, name, &[]).is_some(), "{name} in\n{m}");
    }
    let (_, hooks) = get("/metrics/hooks").await;
    let pod = ["kind=\"pod\"", web, "hook=\""];
    assert_eq!(sample(&hooks, "web_items", &pod), Some(1.0), "{hooks}");
    assert_eq!(
        sample(&hooks, "web_items", &["kind=\"svc\"", web]),
        Some(5.0),
        "{hooks}"
    );

    // The debug socket.
    let (rc, out, err) = ctl(&socket, &["module", "values", "web"]).await;
    assert_eq!(rc, 0, "{err}");
    assert!(out.contains("greeting: hello"), "{out}");
    let (rc, out, err) = ctl(&socket, &["module", "render", "web"]).await;
    assert_eq!(rc, 0, "{err}");
    assert!(
        out.contains("kind: Secret") && out.contains("name: web-config"),
        "{out}"
    );
    assert!(out.contains("***"), "{out}");
    for secret in ["czNjcjN0LXZhbHVl", "plain-token-value"] {
        assert!(!out.contains(secret), "secret shown: {out}");
    }
    let (_, out, _) = ctl(&socket, &["module", "render", "web", "--show-secrets"]).await;
    assert!(out.contains("czNjcjN0LXZhbHVl"), "{out}");
    let (rc, out, err) = ctl(&socket, &["module", "list"]).await;
    assert_eq!(rc, 0, "{err}");
    let row = out.lines().find(|l| l.contains(" web ")).unwrap_or("");
    assert!(row.contains("enabled") && row.contains("Ready"), "{out}");
    let (rc, out, _) = ctl(&socket, &["module", "status", "web", "-o", "json"]).await;
    assert_eq!(rc, 0);
    let st: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(st["phase"], "Ready");
    assert_eq!(st["revision"], 1);
    let (rc, out, _) = ctl(&socket, &["queue", "list"]).await;
    assert_eq!(rc, 0);
    assert!(out.starts_with("Queue 'main': length "), "{out}");
    let (rc, _, err) = ctl(&socket, &["module", "values", "nope"]).await;
    assert_eq!(rc, 1);
    assert!(err.contains("404"), "{err}");

    // A ConfigMap edit runs the module again: its figures move, its
    // values are the new ones, the hook's group loses svc and pod moves.
    let runs = |m: &str| {
        sample(
            m,
            "addon_operator_module_run_seconds_count",
            &[web, "activation=\"\""],
        )
    };
    assert_eq!(runs(&m), None, "no run after startup yet");
    patch_config(kc, r#"{"data":{"web":"greeting: changed"}}"#).await;
    eventually(Duration::from_secs(30), "the module ran again", || {
        let a = addr.clone();
        async move {
            let (_, m) = tokio::task::spawn_blocking(move || http_get(&a, "/metrics"))
                .await
                .unwrap();
            sample(
                &m,
                "addon_operator_module_run_seconds_count",
                &[web, "activation=\"\""],
            )
            .is_some_and(|n| n >= 1.0)
        }
    })
    .await;
    let (_, m) = get("/metrics").await;
    assert!(
        sample(
            &m,
            "addon_operator_helm_operation_seconds_count",
            &[web, "operation=\"upgrade\"", "activation=\"\""]
        ) == Some(1.0),
        "{m}"
    );
    let (_, out, _) = ctl(&socket, &["module", "values", "web", "-o", "json"]).await;
    assert!(out.contains("\"greeting\": \"changed\""), "{out}");
    let (_, hooks) = get("/metrics/hooks").await;
    assert_eq!(sample(&hooks, "web_items", &pod), Some(2.0), "{hooks}");
    assert!(
        !hooks.contains("kind=\"svc\""),
        "svc expired with its group: {hooks}"
    );

    // One log line per hook run and module run; hook stderr with its name.
    let log = op.log();
    assert!(
        log.lines().any(|l| l.contains("hook run")
            && l.contains("module=web")
            && l.contains("binding=\"beforeHelm\"")
            && l.contains("outcome=\"ok\"")),
        "{log}"
    );
    assert!(log.contains("metrics.sh: hook says hi"), "{log}");
    assert!(!log.contains("s3cr3t-value") && !log.contains("plain-token-value"));
}

//! What `antiopa run` exports of its state, the real binary against fake
//! apiserver with real kubectl as the other actor: the kubernetes
//! bindings' watch health on `/metrics` (`antiopa_watches{state}`, the
//! restarts counter moving when the fake kills every watch) and in
//! `antiopa watch list`; drift counters and restore latency moving when
//! kubectl deletes a released object, and the module's drift in `antiopa
//! module status`; a module waiting for a disabled requirement in `module
//! status` and `module list` (WAITING FOR); the release's lifecycle state
//! in `module status` and `history -o json`; with `--leader-elect`, the
//! leader gauge, `/leader`, and `/readyz` 200 for a standby.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::cluster_operator::{NS, Operator, eventually, executable, kubectl, prepare};
use crate::cluster_support::*;

/// Module `web` (a ConfigMap `web-a`), module `api` requiring the disabled
/// module `db`, and a global hook bound to ConfigMaps labelled `watch: me`.
fn tree(dir: &Path) -> (PathBuf, PathBuf) {
    let modules = dir.join("modules");
    let global = dir.join("global-hooks");
    std::fs::create_dir_all(&global).unwrap();
    for (name, weight, requires, template) in [
        (
            "web",
            10,
            "{}",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-a\ndata:\n  k: v\n",
        ),
        (
            "db",
            20,
            "{}",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: db\ndata: {}\n",
        ),
        (
            "api",
            30,
            "{db: '>= 1.0.0'}",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: api\ndata: {}\n",
        ),
    ] {
        let d = modules.join(name);
        std::fs::create_dir_all(d.join("templates")).unwrap();
        std::fs::write(
            d.join("Chart.yaml"),
            format!("apiVersion: v2\nname: {name}\nversion: 1.2.3\n"),
        )
        .unwrap();
        std::fs::write(
            d.join("module.yaml"),
            format!("name: {name}\nweight: {weight}\nrequirements:\n  modules: {requires}\n"),
        )
        .unwrap();
        std::fs::write(d.join("templates/cm.yaml"), template).unwrap();
    }
    std::fs::write(
        modules.join("values.yaml"),
        "webEnabled: true\ndbEnabled: false\napiEnabled: true\n",
    )
    .unwrap();
    executable(
        &global.join("watch.sh"),
        r#"#!/bin/sh
if [ "$1" = "--config" ]; then echo '{"configVersion":"v1","kubernetes":[{"name":"watched","apiVersion":"v1","kind":"ConfigMap","labelSelector":{"matchLabels":{"watch":"me"}},"jqFilter":".data"}]}'; exit 0; fi
"#,
    );
    (modules, global)
}

async fn get(addr: &str, path: &'static str) -> (u16, String) {
    let a = addr.to_string();
    tokio::task::spawn_blocking(move || http_get(&a, path))
        .await
        .unwrap()
}

/// The address the operator's HTTP server listens on, from its log.
async fn listening(log: impl Fn() -> String) -> String {
    let mut addr = String::new();
    eventually(Duration::from_secs(30), "HTTP server listening", || {
        addr = log()
            .lines()
            .find(|l| l.contains("HTTP server (metrics, health) listening"))
            .and_then(|l| l.split("address=").nth(1))
            .map(|a| a.split_whitespace().next().unwrap_or("").to_string())
            .unwrap_or_default();
        let found = !addr.is_empty();
        async move { found }
    })
    .await;
    addr
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

/// `antiopa ARGS`: (exit code, stdout, stderr).
async fn antiopa_cmd(args: Vec<String>) -> (i32, String, String) {
    let out = tokio::task::spawn_blocking(move || {
        Command::new(antiopa())
            .args(&args)
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

/// `antiopa ARGS --debug-socket SOCKET`, which must succeed: its stdout.
async fn ctl(socket: &Path, args: &[&str]) -> String {
    let mut all: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    all.push("--debug-socket".into());
    all.push(socket.display().to_string());
    let (code, out, err) = antiopa_cmd(all).await;
    assert_eq!(code, 0, "antiopa {args:?}: {err}");
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_health_drift_waiting_and_release_state_are_exported_against_fake_apiserver() {
    let s = serve().await;
    let kc = &s.kubeconfig;
    let dir = tempfile::tempdir().unwrap();
    let (modules, global) = tree(dir.path());
    prepare(kc, None).await;
    kubectl(
        kc,
        &[
            "-n",
            NS,
            "create",
            "configmap",
            "watched-one",
            "--from-literal=k=v",
        ],
    )
    .await;
    kubectl(
        kc,
        &["-n", NS, "label", "configmap", "watched-one", "watch=me"],
    )
    .await;
    let log = dir.path().join("op.log");
    let socket = log.with_extension("sock");
    let op = Operator::start(kc, &modules, &global, &log, &[]);
    let addr = listening(|| op.log()).await;
    eventually(Duration::from_secs(60), "ready", || async {
        get(&addr, "/readyz").await.0 == 200
    })
    .await;

    // Watch health: the binding's watch synced, holding the one object.
    eventually(Duration::from_secs(20), "the watch synced", || async {
        let m = get(&addr, "/metrics").await.1;
        sample(&m, "antiopa_watches", &["state=\"synced\""]).is_some_and(|n| n >= 1.0)
    })
    .await;
    let m = get(&addr, "/metrics").await.1;
    assert_eq!(
        sample(&m, "antiopa_watch_objects", &["kind=\"v1 ConfigMap\""]),
        Some(1.0),
        "{m}"
    );
    assert_eq!(sample(&m, "antiopa_watches_dead", &[]), Some(0.0), "{m}");
    assert_eq!(sample(&m, "antiopa_leader", &[]), None, "no election: {m}");
    let restarts = sample(&m, "antiopa_watch_restarts_total", &[]).expect("restarts counter");
    let relists = sample(&m, "antiopa_watch_relists_total", &[]).expect("relists counter");

    assert!(s.fake.kill_watches() > 0);
    eventually(Duration::from_secs(30), "restarts counted", || async {
        let m = get(&addr, "/metrics").await.1;
        sample(&m, "antiopa_watch_restarts_total", &[]).is_some_and(|n| n > restarts)
            && sample(&m, "antiopa_watch_relists_total", &[]).is_some_and(|n| n > relists)
            && sample(&m, "antiopa_watches", &["state=\"synced\""]).is_some_and(|n| n >= 1.0)
    })
    .await;
    let m = get(&addr, "/metrics").await.1;
    println!(
        "restarts {restarts} -> {:?}, relists {relists} -> {:?}",
        sample(&m, "antiopa_watch_restarts_total", &[]),
        sample(&m, "antiopa_watch_relists_total", &[])
    );
    let table = ctl(&socket, &["watch", "list"]).await;
    assert!(table.starts_with("KIND"), "{table}");
    let row = table
        .lines()
        .find(|l| l.starts_with("v1 ConfigMap"))
        .unwrap_or_else(|| panic!("{table}"));
    assert!(row.contains("Synced"), "{table}");
    assert!(table.contains("0 dead"), "{table}");
    let json: serde_json::Value =
        serde_json::from_str(&ctl(&socket, &["watch", "list", "-o", "json"]).await).unwrap();
    assert!(json["restartsTotal"].as_u64().unwrap() >= 1, "{json}");
    assert_eq!(json["watches"][0]["objects"], 1, "{json}");

    // Drift: kubectl deletes web's ConfigMap; restored, and counted.
    let uid = s.fake.get("v1/configmaps", Some(NS), "web-a").unwrap()["metadata"]["uid"].clone();
    eventually(Duration::from_secs(20), "drift watching web", || async {
        let st = ctl(&socket, &["module", "status", "web", "-o", "json"]).await;
        let v: serde_json::Value = serde_json::from_str(&st).unwrap();
        v["drift"]["objects"].as_u64().is_some_and(|n| n >= 1)
    })
    .await;
    let before = sample(&m, "antiopa_drift_restored_total", &["module=\"web\""]).unwrap_or(0.0);
    kubectl(kc, &["-n", NS, "delete", "configmap", "web-a"]).await;
    eventually(Duration::from_secs(30), "web-a restored", || async {
        s.fake
            .get("v1/configmaps", Some(NS), "web-a")
            .is_some_and(|o| o["metadata"]["uid"] != uid)
    })
    .await;
    eventually(Duration::from_secs(10), "drift counted", || async {
        let m = get(&addr, "/metrics").await.1;
        sample(
            &m,
            "antiopa_drift_restored_total",
            &["module=\"web\"", "kind=\"ConfigMap\""],
        )
        .is_some_and(|n| n > before)
    })
    .await;
    let m = get(&addr, "/metrics").await.1;
    assert!(
        sample(
            &m,
            "antiopa_drift_detected_total",
            &["module=\"web\"", "kind=\"ConfigMap\""]
        )
        .is_some_and(|n| n >= 1.0),
        "{m}"
    );
    let count = sample(&m, "antiopa_drift_restore_seconds_count", &[]).unwrap_or(0.0);
    let sum = sample(&m, "antiopa_drift_restore_seconds_sum", &[]).unwrap_or(0.0);
    assert!(count >= 1.0, "{m}");
    println!("drift restore: {count} restores, mean {:.3}s", sum / count);
    let status = ctl(&socket, &["module", "status", "web"]).await;
    assert!(status.contains("RELEASE:       running"), "{status}");
    let drift = status
        .lines()
        .find(|l| l.starts_with("DRIFT:"))
        .unwrap_or_else(|| panic!("{status}"));
    assert!(
        drift.contains("1 detected") && drift.contains("1 restored"),
        "{status}"
    );

    // Waiting: api requires the disabled db.
    let status = ctl(&socket, &["module", "status", "api"]).await;
    assert!(status.contains("PHASE:         Waiting"), "{status}");
    let waiting = status
        .lines()
        .find(|l| l.starts_with("WAITING FOR:"))
        .unwrap_or_else(|| panic!("{status}"));
    assert!(waiting.contains("db"), "{status}");
    assert!(
        status.contains("RELEASE:       -"),
        "never released: {status}"
    );
    let list = ctl(&socket, &["module", "list"]).await;
    assert!(
        list.lines().next().unwrap().contains("WAITING FOR"),
        "{list}"
    );
    let api = list
        .lines()
        .find(|l| l.contains(" api "))
        .unwrap_or_else(|| panic!("{list}"));
    assert!(api.contains("Waiting") && api.contains("db"), "{list}");

    // History: helm's table, and the state in JSON.
    let hist = |o: &str| {
        let mut a: Vec<String> = ["history", "web", "-n", NS, "--kubeconfig"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        a.push(kc.display().to_string());
        if !o.is_empty() {
            a.extend(["-o".to_string(), o.to_string()]);
        }
        antiopa_cmd(a)
    };
    let (code, json, err) = hist("json").await;
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v[0]["status"], "deployed", "{json}");
    assert_eq!(v[0]["state"], "running", "{json}");
    let (_, table, _) = hist("").await;
    assert!(
        !table.contains("running"),
        "the table stays helm's: {table}"
    );
}

/// `antiopa run --leader-elect` as pod `name`, killed on drop.
struct Replica {
    child: Child,
    log: PathBuf,
}

impl Replica {
    fn start(kc: &Path, modules: &Path, global: &Path, dir: &Path, name: &str) -> Replica {
        let log = dir.join(format!("{name}.log"));
        let child = Command::new(antiopa())
            .args(["run", "--leader-elect"])
            .env("ADDON_OPERATOR_NAMESPACE", NS)
            .env("POD_NAME", name)
            .env("MODULES_DIR", modules)
            .env("GLOBAL_HOOKS_DIR", global)
            .env("KUBECONFIG", kc)
            .env("HOME", std::env::temp_dir())
            .env("LOG_LEVEL", "info")
            .env("ADDON_OPERATOR_LISTEN_ADDRESS", "127.0.0.1")
            .env("ADDON_OPERATOR_LISTEN_PORT", "0")
            .env("DEBUG_UNIX_SOCKET", log.with_extension("sock"))
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        Replica { child, log }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leadership_is_exported_and_a_standby_is_ready_against_fake_apiserver() {
    let s = serve().await;
    let kc = &s.kubeconfig;
    let dir = tempfile::tempdir().unwrap();
    let (modules, global) = tree(dir.path());
    prepare(kc, None).await;
    let a = Replica::start(kc, &modules, &global, dir.path(), "pod-a");
    let addr_a = listening(|| a.log()).await;
    eventually(
        Duration::from_secs(60),
        "pod-a leads and is ready",
        || async {
            let m = get(&addr_a, "/metrics").await.1;
            sample(&m, "antiopa_leader", &["identity=\"pod-a\""]) == Some(1.0)
                && get(&addr_a, "/readyz").await.0 == 200
        },
    )
    .await;
    let b = Replica::start(kc, &modules, &global, dir.path(), "pod-b");
    let addr_b = listening(|| b.log()).await;
    // The standby: ready (a rollout with maxUnavailable 0 goes on), its
    // gauge 0, and `/leader` says so.
    eventually(
        Duration::from_secs(30),
        "pod-b stands by, ready",
        || async {
            let m = get(&addr_b, "/metrics").await.1;
            sample(&m, "antiopa_leader", &["identity=\"pod-b\""]) == Some(0.0)
                && get(&addr_b, "/readyz").await.0 == 200
        },
    )
    .await;
    let socket_b = b.log.with_extension("sock");
    let list = ctl(&socket_b, &["module", "list"]).await;
    assert!(
        list.contains("This replica (pod-b) is the standby."),
        "{list}"
    );
    let (code, body) = {
        let sock = socket_b.clone();
        tokio::task::spawn_blocking(move || {
            let mut st = std::os::unix::net::UnixStream::connect(sock).unwrap();
            write!(
                st,
                "GET /leader.json HTTP/1.1\r\nHost: antiopa\r\nConnection: close\r\n\r\n"
            )
            .unwrap();
            let mut raw = String::new();
            st.read_to_string(&mut raw).unwrap();
            let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
            (head.contains(" 200 "), body.to_string())
        })
        .await
        .unwrap()
    };
    assert!(code, "{body}");
    assert!(
        body.contains("\"identity\": \"pod-b\"") && body.contains("\"leading\": false"),
        "{body}"
    );
    // The leader still leads.
    let m = get(&addr_a, "/metrics").await.1;
    assert_eq!(
        sample(&m, "antiopa_leader", &["identity=\"pod-a\""]),
        Some(1.0),
        "{m}"
    );
}

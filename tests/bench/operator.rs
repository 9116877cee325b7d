//! `cargo bench --bench operator`: `antiopa run --once` (the release binary)
//! converging 100 generated modules (ten orders of ten modules, four objects
//! each: ConfigMap, Secret, Service, Deployment) from an empty cluster, the
//! fake apiserver in-process; then the same tree again, which must write
//! nothing. Prints wall time, API requests and writes of each run and the
//! operator's peak RSS, beside issue 27's goals (≤ 10 s on 2 cores, zero
//! writes unchanged, ≤ 64 MiB). Then issue 28's memory figure: `antiopa run`
//! watching 10,000 ConfigMaps through 3 kubernetes bindings with jqFilters
//! (keepFullObjectsInMemory false), its RSS once converged beside the same
//! operator with no bindings (goal ≤ 8 MiB per 1,000 objects above idle),
//! and again after the fake forced every watch to list again (`410
//! Expired`): a relist must not double it.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use fake_apiserver::FakeApiServer;
use nix::sys::resource::{UsageWho, getrusage};

const MODULES: usize = 100;
const NS: &str = "addons";

fn generate(dir: &Path) {
    let modules = dir.join("modules");
    std::fs::create_dir_all(dir.join("global-hooks")).unwrap();
    let mut enabled = String::new();
    for i in 0..MODULES {
        let name = format!("mod{i}");
        let d = modules.join(format!("{:03}-{name}", 10 * (i / 10 + 1)));
        std::fs::create_dir_all(d.join("templates")).unwrap();
        std::fs::write(
            d.join("Chart.yaml"),
            format!("apiVersion: v2\nname: {name}\nversion: 0.1.0\n"),
        )
        .unwrap();
        std::fs::write(
            d.join("values.yaml"),
            format!("{name}:\n  replicas: 1\n  greeting: hello\n"),
        )
        .unwrap();
        let t = format!(
            r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: {name}
data:
  greeting: {{{{ .Values.{name}.greeting | quote }}}}
---
apiVersion: v1
kind: Secret
metadata:
  name: {name}
stringData:
  token: {{{{ printf "%s-%s" .Release.Name "token" | b64enc | quote }}}}
---
apiVersion: v1
kind: Service
metadata:
  name: {name}
spec:
  selector:
    app: {name}
  ports:
  - port: 80
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
spec:
  replicas: {{{{ .Values.{name}.replicas }}}}
  selector:
    matchLabels:
      app: {name}
  template:
    metadata:
      labels:
        app: {name}
    spec:
      containers:
      - name: app
        image: nginx:1.27
"#
        );
        std::fs::write(d.join("templates/all.yaml"), t).unwrap();
        enabled.push_str(&format!("{name}Enabled: true\n"));
    }
    std::fs::write(modules.join("values.yaml"), enabled).unwrap();
}

/// Runs `antiopa run --once`; returns (seconds, peak RSS in MiB: the
/// largest of this process's waited-for children so far, which are only
/// these runs).
fn converge(dir: &Path, kubeconfig: &Path) -> (f64, f64) {
    let t = Instant::now();
    let status = Command::new(env!("CARGO_BIN_EXE_antiopa"))
        .args(["run", "--once", "--log-level", "warn"])
        .env("ADDON_OPERATOR_NAMESPACE", NS)
        .env("MODULES_DIR", dir.join("modules"))
        .env("GLOBAL_HOOKS_DIR", dir.join("global-hooks"))
        .env("KUBECONFIG", kubeconfig)
        .env("KUBE_CLIENT_QPS", "0")
        .status()
        .unwrap();
    let secs = t.elapsed().as_secs_f64();
    assert!(status.success(), "antiopa run --once failed ({status})");
    let usage = getrusage(UsageWho::RUSAGE_CHILDREN).unwrap();
    (secs, usage.max_rss() as f64 / 1024.0)
}

/// A tree of one module whose hook watches labelled ConfigMaps through
/// three bindings with jqFilters (or none when `bindings` is false).
fn watching_tree(dir: &Path, bindings: bool) {
    let d = dir.join("modules/010-watcher");
    std::fs::create_dir_all(d.join("templates")).unwrap();
    std::fs::create_dir_all(d.join("hooks")).unwrap();
    std::fs::create_dir_all(dir.join("global-hooks")).unwrap();
    std::fs::write(
        d.join("Chart.yaml"),
        "apiVersion: v2\nname: watcher\nversion: 0.1.0\n",
    )
    .unwrap();
    std::fs::write(dir.join("modules/values.yaml"), "watcherEnabled: true\n").unwrap();
    std::fs::write(
        d.join("templates/cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: watcher\ndata:\n  a: b\n",
    )
    .unwrap();
    let binding = |name: &str, filter: &str| {
        format!(
            r#"{{"name":"{name}","apiVersion":"v1","kind":"ConfigMap","namespace":{{"nameSelector":{{"matchNames":["data"]}}}},"labelSelector":{{"matchLabels":{{"watch":"me"}}}},"jqFilter":"{filter}","keepFullObjectsInMemory":false,"executeHookOnSynchronization":false}}"#
        )
    };
    let config = if bindings {
        format!(
            r#"{{"configVersion":"v1","kubernetes":[{},{},{}]}}"#,
            binding("names", ".metadata.name"),
            binding("data", ".data.k"),
            binding("labels", ".metadata.labels")
        )
    } else {
        r#"{"configVersion":"v1","beforeHelm":1}"#.to_string()
    };
    let hook = d.join("hooks/watch.sh");
    std::fs::write(
        &hook,
        format!("#!/bin/sh\nif [ \"$1\" = \"--config\" ]; then echo '{config}'; exit 0; fi\n"),
    )
    .unwrap();
    std::process::Command::new("chmod")
        .arg("755")
        .arg(&hook)
        .status()
        .unwrap();
}

/// The resident memory of process `pid`, in MiB.
fn rss(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kb / 1024.0
}

/// Runs `antiopa run` on `dir` until it has converged and settled, then
/// returns its resident memory (MiB) and stops it. With `relist`, also
/// its memory after that fake forced every watch to list again (`410
/// Expired`) and it settled again.
fn settled_rss(dir: &Path, kubeconfig: &Path, relist: Option<&FakeApiServer>) -> (f64, f64) {
    let log = dir.join("op.log");
    let mut child = Command::new(env!("CARGO_BIN_EXE_antiopa"))
        .args(["run", "--rescan-interval", "0"])
        // Not the first part's namespace: its 100 releases would be purged.
        .env("ADDON_OPERATOR_NAMESPACE", "watchers")
        .env("MODULES_DIR", dir.join("modules"))
        .env("GLOBAL_HOOKS_DIR", dir.join("global-hooks"))
        .env("KUBECONFIG", kubeconfig)
        .env("KUBE_CLIENT_QPS", "0")
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let end = Instant::now() + Duration::from_secs(120);
    while !std::fs::read_to_string(&log)
        .unwrap_or_default()
        .contains("converged")
    {
        assert!(
            Instant::now() < end,
            "no converge: {}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_secs(3));
    let settled = rss(child.id());
    let mut after = settled;
    if let Some(fake) = relist {
        let lists = || {
            std::fs::read_to_string(&log)
                .unwrap_or_default()
                .matches("kubernetes bindings: watching v1 configmaps")
                .count()
        };
        let before = lists();
        fake.expire_watches();
        let end = Instant::now() + Duration::from_secs(120);
        while lists() == before {
            assert!(Instant::now() < end, "no relist after 410");
            std::thread::sleep(Duration::from_millis(100));
        }
        std::thread::sleep(Duration::from_secs(3));
        after = rss(child.id());
    }
    let _ = child.kill();
    let _ = child.wait();
    (settled, after)
}

fn watch_memory(fake: &FakeApiServer, kubeconfig: &Path) {
    const OBJECTS: usize = 10_000;
    fake.seed(
        "v1/namespaces",
        serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "watchers"}}),
    )
    .unwrap();
    fake.seed(
        "v1/namespaces",
        serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "data"}}),
    )
    .unwrap();
    for i in 0..OBJECTS {
        fake.seed(
            "v1/configmaps",
            serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": format!("cm-{i}"), "namespace": "data", "labels": {"watch": "me", "n": format!("{i}")}},
                "data": {"k": format!("value-{i}"), "other": "x".repeat(200)}}),
        )
        .unwrap();
    }
    let idle_dir = tempfile::tempdir().unwrap();
    watching_tree(idle_dir.path(), false);
    let (idle, _) = settled_rss(idle_dir.path(), kubeconfig, None);
    let dir = tempfile::tempdir().unwrap();
    watching_tree(dir.path(), true);
    let (watching, relisted) = settled_rss(dir.path(), kubeconfig, Some(fake));
    println!(
        "watches: {OBJECTS} ConfigMaps × 3 bindings with jqFilters, keepFullObjectsInMemory false"
    );
    println!(
        "  RSS idle {idle:5.1} MiB, watching {watching:5.1} MiB: {:4.2} MiB per 1,000 objects above idle   (goal: ≤ 8)",
        (watching - idle) / (OBJECTS as f64 / 1000.0)
    );
    println!(
        "  after a forced relist (410 Expired): {relisted:5.1} MiB, {:4.2} MiB per 1,000 objects above idle   (goal: a relist does not double it)",
        (relisted - idle) / (OBJECTS as f64 / 1000.0)
    );
}

fn main() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let fake = FakeApiServer::new();
    let (addr, _task) = rt.block_on(fake.serve("127.0.0.1:0")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    fake.write_kubeconfig(addr, &kubeconfig).unwrap();
    fake.seed(
        "v1/namespaces",
        serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}),
    )
    .unwrap();
    generate(dir.path());

    println!("operator: {MODULES} modules × 4 objects, `antiopa run --once`, fake apiserver");
    fake.reset_stats();
    let (secs, rss) = converge(dir.path(), &kubeconfig);
    let s = fake.stats();
    println!(
        "  from empty:  {secs:6.2} s   {:5} requests, {:4} writes   peak RSS {rss:5.1} MiB   (goals: ≤ 10 s, ≤ 64 MiB)",
        s.api_requests(),
        s.create + s.update + s.patch + s.delete
    );
    fake.reset_stats();
    let (secs, rss) = converge(dir.path(), &kubeconfig);
    let s = fake.stats();
    let writes = s.create + s.update + s.patch + s.delete;
    println!(
        "  unchanged:   {secs:6.2} s   {:5} requests, {writes:4} writes   peak RSS {rss:5.1} MiB   (goal: 0 writes)",
        s.api_requests()
    );
    watch_memory(&fake, &kubeconfig);
}

//! `cargo bench --bench drift` (or `cargo test --bench drift` for the debug
//! build): issue 29's figures for drift repair, `antiopa run` (the real
//! binary) against the fake apiserver over HTTP, deletions by real kubectl.
//!
//! 1. Restore latency: 20 different ConfigMaps of a running module deleted
//!    one after another with `kubectl delete`; for each, the time from the
//!    DELETED event to the ADDED event of the new object (a new uid) on a
//!    watch of the fake's ConfigMaps (kubectl itself returns only once the
//!    object is gone, after antiopa restored it). Prints p50 and max (goals ≤ 0.5 s, ≤ 2 s), the applies and
//!    Events written per restore and the release revisions (goal: one
//!    write each, no revision).
//! 2. Memory: one module releasing 10,000 ConfigMaps (installed by a first
//!    run), the operator's RSS once its objects are listed by drift's
//!    watches, beside the same operator with `driftMode: disabled`, both
//!    finding the release unchanged (goal ≤ 2 MiB per 1,000 objects).

use std::path::Path;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use fake_apiserver::FakeApiServer;

fn module(dir: &Path, name: &str, values: &str, template: &str) {
    let d = dir.join(format!("modules/010-{name}"));
    std::fs::create_dir_all(d.join("templates")).unwrap();
    std::fs::create_dir_all(dir.join("global-hooks")).unwrap();
    std::fs::write(
        d.join("Chart.yaml"),
        format!("apiVersion: v2\nname: {name}\nversion: 0.1.0\n"),
    )
    .unwrap();
    std::fs::write(d.join("values.yaml"), values).unwrap();
    std::fs::write(d.join("templates/all.yaml"), template).unwrap();
    std::fs::write(
        dir.join("modules/values.yaml"),
        format!("{name}Enabled: true\n"),
    )
    .unwrap();
}

/// `antiopa run` on `dir` in namespace `ns`, until `ready` is in its log.
fn start(dir: &Path, kubeconfig: &Path, ns: &str, ready: &str) -> Child {
    let log = dir.join("op.log");
    let child = Command::new(env!("CARGO_BIN_EXE_antiopa"))
        .args(["run", "--rescan-interval", "0"])
        .env("ADDON_OPERATOR_NAMESPACE", ns)
        .env("MODULES_DIR", dir.join("modules"))
        .env("GLOBAL_HOOKS_DIR", dir.join("global-hooks"))
        .env("KUBECONFIG", kubeconfig)
        .env("KUBE_CLIENT_QPS", "0")
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let end = Instant::now() + Duration::from_secs(600);
    while !std::fs::read_to_string(&log)
        .unwrap_or_default()
        .contains(ready)
    {
        assert!(
            Instant::now() < end,
            "no {ready:?}: {}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    child
}

fn rss_mib(child: &Child) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap();
    let kb: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kb / 1024.0
}

fn namespace(fake: &FakeApiServer, ns: &str) {
    fake.seed(
        "v1/namespaces",
        serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
    )
    .unwrap();
}

fn kubectl(kubeconfig: &Path, args: &[&str]) {
    let out = Command::new("kubectl")
        .args(args)
        .arg(format!("--kubeconfig={}", kubeconfig.display()))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// (DELETED or ADDED, name, uid, when) of every ConfigMap event in `ns`.
type Seen = std::sync::Arc<std::sync::Mutex<Vec<(String, String, String, Instant)>>>;

fn record_events(rt: &tokio::runtime::Runtime, fake: &FakeApiServer, ns: &str) -> Seen {
    use futures::StreamExt;
    let seen: Seen = Default::default();
    let api: kube::Api<k8s_openapi::api::core::v1::ConfigMap> =
        rt.block_on(async { kube::Api::namespaced(fake.client(), ns) });
    let out = seen.clone();
    rt.spawn(async move {
        let mut stream = api
            .watch(&kube::api::WatchParams::default(), "0")
            .await
            .unwrap()
            .boxed();
        while let Some(Ok(ev)) = stream.next().await {
            let (kind, o) = match ev {
                kube::api::WatchEvent::Added(o) => ("ADDED", o),
                kube::api::WatchEvent::Deleted(o) => ("DELETED", o),
                _ => continue,
            };
            out.lock().unwrap().push((
                kind.to_string(),
                o.metadata.name.unwrap_or_default(),
                o.metadata.uid.unwrap_or_default(),
                Instant::now(),
            ));
        }
    });
    seen
}

fn restore_latency(rt: &tokio::runtime::Runtime, fake: &FakeApiServer, kubeconfig: &Path) {
    const NS: &str = "drift";
    namespace(fake, NS);
    let dir = tempfile::tempdir().unwrap();
    module(
        dir.path(),
        "web",
        "web: {}\n",
        "{{ range $i := until 30 }}---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-{{ $i }}\ndata:\n  k: v{{ $i }}\n{{ end }}",
    );
    let mut op = start(dir.path(), kubeconfig, NS, "drift: released objects listed");
    let seen = record_events(rt, fake, NS);
    std::thread::sleep(Duration::from_secs(1));
    fake.reset_stats();
    let mut took = Vec::new();
    for i in 0..20 {
        let name = format!("cm-{i}");
        let uid = fake.get("v1/configmaps", Some(NS), &name).unwrap()["metadata"]["uid"].clone();
        kubectl(kubeconfig, &["-n", NS, "delete", "configmap", &name]);
        let t = Instant::now();
        while !fake
            .get("v1/configmaps", Some(NS), &name)
            .is_some_and(|o| o["metadata"]["uid"] != uid)
        {
            assert!(
                t.elapsed() < Duration::from_secs(30),
                "{name} never restored"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        // The watch may deliver the ADDED a moment after the fake has it.
        std::thread::sleep(Duration::from_millis(50));
        let ev = seen.lock().unwrap();
        let deleted = ev
            .iter()
            .find(|e| e.0 == "DELETED" && e.1 == name)
            .map(|e| e.3)
            .expect("DELETED seen");
        let added = ev
            .iter()
            .find(|e| e.0 == "ADDED" && e.1 == name && uid != e.2.as_str())
            .map(|e| e.3)
            .expect("ADDED of the new object seen");
        took.push(added.duration_since(deleted).as_secs_f64());
    }
    std::thread::sleep(Duration::from_secs(1));
    let s = fake.stats();
    let revisions = fake
        .list("v1/secrets")
        .iter()
        .filter(|o| o["metadata"]["namespace"] == NS && o["type"] == "helm.sh/release.v1")
        .count();
    let _ = op.kill();
    let _ = op.wait();
    took.sort_by(f64::total_cmp);
    println!("drift: 20 ConfigMaps of a running module deleted by kubectl, one after another");
    println!(
        "  restore latency p50 {:.3} s, max {:.3} s   (goals: ≤ 0.5 s, ≤ 2 s)",
        took[took.len() / 2],
        took[took.len() - 1]
    );
    println!(
        "  writes: {} applies (PATCH), {} Events and deletes by kubectl {}; release revisions {revisions}   (goal: one apply each, 1 revision)",
        s.patch, s.create, s.delete
    );
}

fn memory(fake: &FakeApiServer, kubeconfig: &Path) {
    const OBJECTS: usize = 10_000;
    let template = format!(
        "{{{{ range $i := until {OBJECTS} }}}}---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-{{{{ $i }}}}\ndata:\n  k: v{{{{ $i }}}}\n{{{{ end }}}}"
    );
    let mut rss = Vec::new();
    namespace(fake, "big");
    // The first run installs the release; the measured ones find it unchanged.
    for (ns, mode) in [("big", "disabled"), ("big", "disabled"), ("big", "enabled")] {
        let dir = tempfile::tempdir().unwrap();
        module(
            dir.path(),
            "big",
            &format!("big:\n  driftMode: {mode}\n"),
            &template,
        );
        let ready = if mode == "enabled" {
            "drift: released objects listed"
        } else {
            "converged"
        };
        let t = Instant::now();
        let mut op = start(dir.path(), kubeconfig, ns, ready);
        let ready_after = t.elapsed();
        std::thread::sleep(Duration::from_secs(3));
        rss.push((mode, rss_mib(&op), ready_after));
        let _ = op.kill();
        let _ = op.wait();
    }
    println!("drift: one module releasing {OBJECTS} ConfigMaps");
    let (_, install_mib, install_took) = rss.remove(0);
    println!(
        "  install run (not compared): RSS {install_mib:6.1} MiB, converged after {:.1} s",
        install_took.as_secs_f64()
    );
    for (mode, mib, after) in &rss {
        println!(
            "  driftMode {mode:8}: RSS {mib:6.1} MiB (ready after {:.1} s)",
            after.as_secs_f64()
        );
    }
    println!(
        "  watched: {:.2} MiB per 1,000 objects above driftMode disabled   (goal: ≤ 2)",
        (rss[1].1 - rss[0].1) / (OBJECTS as f64 / 1000.0)
    );
}

fn main() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let fake = FakeApiServer::new();
    let (addr, _task) = rt.block_on(fake.serve("127.0.0.1:0")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    fake.write_kubeconfig(addr, &kubeconfig).unwrap();
    restore_latency(&rt, &fake, &kubeconfig);
    if std::env::args().any(|a| a == "--latency-only") {
        return;
    }
    memory(&fake, &kubeconfig);
}

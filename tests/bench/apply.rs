//! `cargo bench --bench apply`: kube-prometheus-stack (CRDs included) from
//! the corpus applied to the fake apiserver (in-process) the way `antiopa
//! apply` does it — each render made for the revision about to be written
//! (`.Release.IsInstall` on the install, `.Release.IsUpgrade` after, which
//! kps's admission webhooks' `failurePolicy` depends on) —: the install,
//! the first upgrade with the same values, an unchanged re-apply, the same
//! objects under a changed release checksum (every object dry-run), and a
//! one-value change. Prints wall time, API requests by verb and writes per
//! step, then the bar: an unchanged re-apply needs fewer requests
//! than objects × 2.

use std::path::Path;
use std::time::{Duration, Instant};

use antiopa::apply::{ApplyOptions, Progress, split_rendered};
use antiopa::chart::strvals::ValueOptions;
use antiopa::chart::template::{self, TemplateSettings};
use antiopa::cluster::{Cluster, RateLimit};
use antiopa::release::{self, InstallOutcome, InstallRequest};
use fake_apiserver::FakeApiServer;

fn render(chart: &Path, set: &[&str], next: release::Next) -> antiopa::apply::Rendered {
    let mut env = antiopa::engine::Env::new();
    env.seed(7);
    let settings = TemplateSettings {
        args: vec!["kube-prometheus-stack".into(), chart.display().to_string()],
        namespace: "monitoring".into(),
        values: ValueOptions {
            set: set.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        },
        include_crds: true,
        skip_tests: true,
        is_upgrade: next.is_upgrade,
        revision: next.version,
        env,
        ..Default::default()
    };
    let mut out = Vec::new();
    template::run(settings, &mut out, &mut std::io::sink()).expect("render kps");
    split_rendered(&String::from_utf8_lossy(&out))
}

fn request(rendered: antiopa::apply::Rendered) -> InstallRequest {
    InstallRequest {
        name: "kube-prometheus-stack".into(),
        namespace: "monitoring".into(),
        chart: serde_json::json!({"metadata": {"name": "kube-prometheus-stack"}}),
        config: serde_json::Map::new(),
        rendered,
        notes: String::new(),
        labels: Default::default(),
        apply: ApplyOptions::new("monitoring"),
        history_max: 10,
        skip_crds: false,
        create_namespace: true,
        no_hooks: true, // its admission-webhook Jobs never complete on the fake
        hook_timeout: Duration::from_secs(60),
        lock_timeout: Duration::from_secs(600),
        take_ownership: false,
    }
}

/// One step's request counts.
struct Step {
    requests: u64,
}

async fn step(
    fake: &FakeApiServer,
    cluster: &Cluster,
    what: &str,
    chart: &Path,
    set: &[&str],
    tweak: impl FnOnce(&mut antiopa::apply::Rendered),
) -> Step {
    let hist = release::history(cluster, "kube-prometheus-stack", "monitoring")
        .await
        .expect("history");
    let mut rendered = render(chart, set, release::next_revision(&hist));
    tweak(&mut rendered);
    let mut progress = |_: Progress<'_>| {};
    let mut log = |l: &str| eprintln!("{l}");
    fake.reset_stats();
    let rv = fake.resource_version();
    let t = Instant::now();
    let out = release::upgrade_install(cluster, &request(rendered), &mut progress, &mut log)
        .await
        .expect("apply");
    let elapsed = t.elapsed();
    let s = fake.stats();
    let summary = match out {
        InstallOutcome::Deployed { version, report } => {
            format!("revision {version}: {}", report.summary())
        }
        InstallOutcome::Unchanged { version } => {
            format!("revision {version} unchanged (checksum)")
        }
        InstallOutcome::DryRun { report } => report.summary(),
    };
    println!(
        "{what:<34} {:>8.1} ms  {:>4} API requests (+{} discovery): {} list, {} get, {} patch, {} create/update, {} delete; {} writes  [{summary}]",
        elapsed.as_secs_f64() * 1e3,
        s.api_requests(),
        s.discovery,
        s.list,
        s.get,
        s.patch,
        s.create + s.update,
        s.delete,
        fake.resource_version() - rv,
    );
    Step {
        requests: s.api_requests() + s.discovery,
    }
}

fn main() {
    let chart =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus/charts/kube-prometheus-stack");
    if !chart.exists() {
        println!("apply bench skipped: {} not found", chart.display());
        return;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let fake = FakeApiServer::new();
        let cluster = Cluster::from_client(fake.client(), RateLimit { qps: 0.0, burst: 1 });
        let first = render(
            &chart,
            &[],
            release::Next {
                version: 1,
                is_upgrade: false,
            },
        );
        let mut objects = antiopa::apply::decode(&first.crds).expect("decode").len();
        objects += antiopa::apply::decode(&first.manifests).expect("decode").len();
        let crds = antiopa::apply::decode(&first.crds).expect("decode").len();
        // + the release namespace (--create-namespace).
        let applied = objects + 1;
        println!(
            "kube-prometheus-stack: {objects} objects ({crds} CRDs) + the release namespace = {applied} applied objects; fake apiserver in-process"
        );
        let install = step(&fake, &cluster, "install", &chart, &[], |_| {}).await;
        step(&fake, &cluster, "first upgrade, same values", &chart, &[], |_| {}).await;
        let unchanged = step(&fake, &cluster, "unchanged re-apply", &chart, &[], |_| {}).await;
        // The same objects under another render checksum (a hook-less
        // document added to the hooks part): the object-level path, every
        // object dry-run and found unchanged.
        let no_skip = step(
            &fake,
            &cluster,
            "same objects, checksum differs",
            &chart,
            &[],
            |r| {
                r.hooks.push(antiopa::apply::Doc {
                    source: "kube-prometheus-stack/templates/bench-nothing.yaml".into(),
                    content: "# no object".into(),
                })
            },
        )
        .await;
        step(
            &fake,
            &cluster,
            "re-apply, one value changed",
            &chart,
            &["prometheus.prometheusSpec.replicas=2"],
            |_| {},
        )
        .await;
        let bar = 2 * applied as u64;
        println!(
            "requests (discovery included) / (objects x 2 = {bar}): install {} ({:.2}), unchanged re-apply {} ({:.3}), same objects without the checksum shortcut {} ({:.2}); bar: unchanged re-apply < {bar}: {}",
            install.requests,
            install.requests as f64 / bar as f64,
            unchanged.requests,
            unchanged.requests as f64 / bar as f64,
            no_skip.requests,
            no_skip.requests as f64 / bar as f64,
            if unchanged.requests < bar && no_skip.requests < bar {
                "met"
            } else {
                "NOT met"
            }
        );
    });
}

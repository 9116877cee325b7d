//! `cargo bench --bench apply`: kube-prometheus-stack (CRDs included) from
//! the corpus installed into the fake apiserver, then re-applied unchanged
//! and with one value changed; prints wall time and API request counts of
//! each step. The bar: an unchanged re-apply needs fewer requests
//! than objects × 2 (it needs one: the release history LIST).

use std::path::Path;
use std::time::{Duration, Instant};

use antiopa::apply::{ApplyOptions, Progress, split_rendered};
use antiopa::chart::strvals::ValueOptions;
use antiopa::chart::template::{self, TemplateSettings};
use antiopa::cluster::{Cluster, RateLimit};
use antiopa::release::{self, InstallOutcome, InstallRequest};
use fake_apiserver::FakeApiServer;

fn render(chart: &Path, set: &[&str]) -> antiopa::apply::Rendered {
    use rand::SeedableRng;
    let mut env = antiopa::engine::Env::new();
    env.rng = std::cell::RefCell::new(rand_chacha::ChaCha20Rng::seed_from_u64(7));
    let settings = TemplateSettings {
        args: vec!["kube-prometheus-stack".into(), chart.display().to_string()],
        namespace: "monitoring".into(),
        values: ValueOptions {
            set: set.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        },
        include_crds: true,
        skip_tests: true,
        env,
        ..Default::default()
    };
    let mut out = Vec::new();
    template::run(&settings, &mut out, &mut std::io::sink()).expect("render kps");
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
        let r1 = render(&chart, &[]);
        let objects = r1.crds.len() + r1.manifests.len();
        let mut progress = |_: Progress<'_>| {};
        let mut log = |l: &str| eprintln!("{l}");
        let steps: [(&str, antiopa::apply::Rendered); 3] = [
            ("install", r1.clone()),
            ("unchanged re-apply", r1),
            (
                "re-apply, one value changed",
                render(&chart, &["prometheus.prometheusSpec.replicas=2"]),
            ),
        ];
        println!("kube-prometheus-stack: {objects} documents (CRDs included), fake apiserver in-process");
        for (what, rendered) in steps {
            fake.reset_stats();
            let rv = fake.resource_version();
            let t = Instant::now();
            let out = release::upgrade_install(&cluster, &request(rendered), &mut progress, &mut log)
                .await
                .expect("apply");
            let s = fake.stats();
            let summary = match out {
                InstallOutcome::Deployed { report, .. } => report.summary(),
                InstallOutcome::Unchanged { .. } => "unchanged (checksum)".into(),
                InstallOutcome::DryRun { report } => report.summary(),
            };
            println!(
                "{what:<28} {:>8.1} ms  {:>4} API requests ({} discovery, {} list, {} patch, {} create/update, {} delete), {} writes  [{summary}]",
                t.elapsed().as_secs_f64() * 1e3,
                s.api_requests(),
                s.discovery,
                s.list,
                s.patch,
                s.create + s.update,
                s.delete,
                fake.resource_version() - rv,
            );
        }
    });
}

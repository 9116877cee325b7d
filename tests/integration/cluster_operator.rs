//! `antiopa run`, the real binary, against fake apiserver, with real
//! kubectl editing its ConfigMap and the real helm listing its releases:
//! healthy modules deploy while a failing one is retried with backoff; an
//! idle operator writes nothing; one module's config section re-runs that
//! module alone; a bad edit changes nothing; `<module>Enabled: "false"`
//! uninstalls it and re-renders the modules that read
//! `global.enabledModules`; SIGTERM stops it with exit 0; `--once`
//! converges and reports failures by its exit code; kill -9 in the middle
//! of a converge leaves nothing a restart cannot finish.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::cluster_support::*;
use antiopa::cluster::{Cluster, ClusterOptions};
use antiopa::release::{self, Release, Status};

pub(crate) const NS: &str = "addons";

/// A modules tree: `alpha` (order 10), `beta` and `gamma` (order 20),
/// `broken` (its beforeHelm hook always fails), `off` (its `enabled`
/// script says false), and a global onStartup hook. Each chart writes a
/// ConfigMap with its greeting and the enabled modules.
fn tree(dir: &Path) -> (PathBuf, PathBuf) {
    let modules = dir.join("modules");
    let global = dir.join("global-hooks");
    std::fs::create_dir_all(&global).unwrap();
    std::fs::create_dir_all(&modules).unwrap();
    std::fs::write(
        modules.join("values.yaml"),
        "alphaEnabled: true\nbetaEnabled: true\ngammaEnabled: true\nbrokenEnabled: true\noffEnabled: true\n",
    )
    .unwrap();
    for (dir_name, name) in [
        ("010-alpha", "alpha"),
        ("020-beta", "beta"),
        ("020-gamma", "gamma"),
        ("030-broken", "broken"),
        ("040-off", "off"),
    ] {
        let d = modules.join(dir_name);
        std::fs::create_dir_all(d.join("templates")).unwrap();
        std::fs::write(
            d.join("Chart.yaml"),
            format!("apiVersion: v2\nname: {name}\nversion: 0.1.0\n"),
        )
        .unwrap();
        std::fs::write(
            d.join("values.yaml"),
            format!("{name}:\n  greeting: hello\n"),
        )
        .unwrap();
        std::fs::write(
            d.join("templates/cm.yaml"),
            format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}-config\ndata:\n  greeting: {{{{ .Values.{name}.greeting | quote }}}}\n  enabled: {{{{ .Values.global.enabledModules | join \",\" | quote }}}}\n"
            ),
        )
        .unwrap();
    }
    // alpha's config section must hold a string greeting.
    std::fs::create_dir_all(modules.join("010-alpha/openapi")).unwrap();
    std::fs::write(
        modules.join("010-alpha/openapi/config-values.yaml"),
        "type: object\nproperties:\n  greeting:\n    type: string\n",
    )
    .unwrap();
    executable(
        &modules.join("040-off/enabled"),
        "#!/bin/sh\necho false > \"$MODULE_ENABLED_RESULT\"\n",
    );
    std::fs::create_dir_all(modules.join("030-broken/hooks")).unwrap();
    executable(
        &modules.join("030-broken/hooks/fail.sh"),
        "#!/bin/sh\nif [ \"$1\" = \"--config\" ]; then echo '{\"configVersion\":\"v1\",\"beforeHelm\":1}'; exit 0; fi\necho 'broken on purpose' >&2\nexit 1\n",
    );
    executable(
        &global.join("startup.sh"),
        "#!/bin/sh\nif [ \"$1\" = \"--config\" ]; then echo '{\"configVersion\":\"v1\",\"onStartup\":1}'; exit 0; fi\necho '[{\"op\":\"add\",\"path\":\"/global/started\",\"value\":true}]' > \"$VALUES_JSON_PATCH_PATH\"\n",
    );
    (modules, global)
}

pub(crate) fn executable(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A running `antiopa run`, killed when dropped; its log goes to a file.
pub(crate) struct Operator {
    child: Child,
    log: PathBuf,
}

impl Operator {
    pub(crate) fn start(
        kubeconfig: &Path,
        modules: &Path,
        global: &Path,
        log: &Path,
        extra: &[&str],
    ) -> Operator {
        let child = Command::new(antiopa())
            .arg("run")
            .args(extra)
            .env("ADDON_OPERATOR_NAMESPACE", NS)
            .env("MODULES_DIR", modules)
            .env("GLOBAL_HOOKS_DIR", global)
            .env("KUBECONFIG", kubeconfig)
            .env("HOME", std::env::temp_dir())
            .env("LOG_LEVEL", "info")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(log).unwrap())
            .spawn()
            .unwrap();
        Operator {
            child,
            log: log.to_path_buf(),
        }
    }

    /// `antiopa run --once`, waited for: its exit status and log.
    async fn once(
        kubeconfig: &Path,
        modules: &Path,
        global: &Path,
        log: &Path,
    ) -> (std::process::ExitStatus, String) {
        let mut op = Operator::start(kubeconfig, modules, global, log, &["--once"]);
        let st = op
            .wait(Duration::from_secs(60))
            .await
            .expect("--once exits");
        (st, op.log())
    }

    pub(crate) fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn signal(&self, sig: nix::sys::signal::Signal) {
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.child.id() as i32), sig).unwrap();
    }

    /// Waits for the process to exit, at most `limit`.
    async fn wait(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        let end = Instant::now() + limit;
        while Instant::now() < end {
            if let Some(st) = self.child.try_wait().unwrap() {
                return Some(st);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        None
    }
}

impl Drop for Operator {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) async fn kubectl(kubeconfig: &Path, args: &[&str]) -> String {
    let mut all: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    all.push(format!("--kubeconfig={}", kubeconfig.display()));
    let out =
        tokio::task::spawn_blocking(move || Command::new("kubectl").args(&all).output().unwrap())
            .await
            .unwrap();
    assert!(
        out.status.success(),
        "kubectl failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A merge patch of the operator's ConfigMap, as a user edits it.
async fn patch_config(kubeconfig: &Path, patch: &str) {
    kubectl(
        kubeconfig,
        &[
            "-n",
            NS,
            "patch",
            "configmap",
            "addon-operator",
            "--type=merge",
            "-p",
            patch,
        ],
    )
    .await;
}

/// The operator's namespace, and its ConfigMap with one `key=value`.
async fn prepare(kubeconfig: &Path, config: Option<&str>) {
    kubectl(kubeconfig, &["create", "namespace", NS]).await;
    if let Some(kv) = config {
        let literal = format!("--from-literal={kv}");
        kubectl(
            kubeconfig,
            &["-n", NS, "create", "configmap", "addon-operator", &literal],
        )
        .await;
    }
}

async fn cluster(kubeconfig: &Path) -> Cluster {
    Cluster::connect(&ClusterOptions {
        kubeconfig: Some(kubeconfig.to_path_buf()),
        ..Default::default()
    })
    .await
    .unwrap()
}

/// The last revision of release `name` (`None`: no release).
async fn last(c: &Cluster, name: &str) -> Option<Release> {
    release::history(c, name, NS)
        .await
        .unwrap()
        .into_iter()
        .last()
}

/// Revision numbers of the deployed releases, by name.
async fn deployed(c: &Cluster, names: &[&str]) -> Vec<(String, Option<i64>)> {
    let mut out = Vec::new();
    for n in names {
        let v = last(c, n)
            .await
            .filter(|r| r.status() == Status::Deployed)
            .map(|r| r.version);
        out.push((n.to_string(), v));
    }
    out
}

/// Polls `check` every 100 ms until it holds, at most `limit`.
pub(crate) async fn eventually<F, Fut>(limit: Duration, what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let end = Instant::now() + limit;
    while Instant::now() < end {
        if check().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("not within {limit:?}: {what}");
}

fn writes(s: &fake_apiserver::Stats) -> u64 {
    s.create + s.update + s.patch + s.delete
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operator_converges_isolates_a_failing_module_and_follows_its_configmap_against_fake_apiserver()
 {
    let s = serve().await;
    let kc = &s.kubeconfig;
    let dir = tempfile::tempdir().unwrap();
    let (modules, global) = tree(dir.path());
    prepare(kc, Some("beta=greeting: from-config")).await;
    let mut op = Operator::start(kc, &modules, &global, &dir.path().join("op.log"), &[]);
    let c = cluster(kc).await;

    // Every healthy module deployed; `off` and `broken` not.
    eventually(
        Duration::from_secs(30),
        "healthy modules deployed",
        || async {
            deployed(&c, &["alpha", "beta", "gamma"])
                .await
                .iter()
                .all(|(_, v)| *v == Some(1))
        },
    )
    .await;
    assert!(last(&c, "off").await.is_none());
    assert!(last(&c, "broken").await.is_none());
    let beta = s
        .fake
        .get("v1/configmaps", Some(NS), "beta-config")
        .unwrap();
    assert_eq!(
        beta["data"]["greeting"], "from-config",
        "ConfigMap section used"
    );
    assert_eq!(beta["data"]["enabled"], "alpha,beta,broken,gamma");
    if let Some(helm) = helm() {
        let out = std::process::Command::new(helm)
            .args(["list", "-n", NS, "--kubeconfig"])
            .arg(kc)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        for m in ["alpha", "beta", "gamma"] {
            assert!(
                text.lines()
                    .any(|l| l.starts_with(m) && l.contains("deployed")),
                "helm list:\n{text}"
            );
        }
    }

    // The failing module is retried with backoff (5 s, then ~6 s).
    eventually(Duration::from_secs(20), "broken retried", || async {
        op.log().contains("attempt=2")
    })
    .await;
    let log = op.log();
    assert!(log.contains("broken on purpose"), "{log}");
    // The first retry waits 5 s plus up to 1 s of jitter.
    let first: f64 = log
        .split("retrying in ")
        .nth(1)
        .and_then(|t| t.split('s').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no retry delay logged:\n{log}"));
    assert!((5.0..=6.0).contains(&first), "{first}\n{log}");

    // Idle: nothing written for 10 s (the failing module's retries read only).
    s.fake.reset_stats();
    tokio::time::sleep(Duration::from_secs(10)).await;
    let idle = s.fake.stats();
    assert_eq!(writes(&idle), 0, "an idle operator wrote: {idle:?}");

    // One module's section: that module alone runs again.
    patch_config(kc, r#"{"data":{"alpha":"greeting: changed"}}"#).await;
    eventually(Duration::from_secs(10), "alpha at revision 2", || async {
        last(&c, "alpha").await.map(|r| r.version) == Some(2)
    })
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        deployed(&c, &["alpha", "beta", "gamma"]).await,
        [
            ("alpha".into(), Some(2)),
            ("beta".into(), Some(1)),
            ("gamma".into(), Some(1))
        ]
    );
    let alpha = s
        .fake
        .get("v1/configmaps", Some(NS), "alpha-config")
        .unwrap();
    assert_eq!(alpha["data"]["greeting"], "changed");

    // A bad edit (YAML that does not parse, a schema violation, a bad
    // *Enabled value): refused, nothing changes, the operator stays up.
    s.fake.reset_stats();
    for bad in [
        r#"{"data":{"alpha":"greeting: [unclosed"}}"#,
        r#"{"data":{"alpha":"greeting: 5"}}"#,
        r#"{"data":{"alpha":"greeting: changed","gammaEnabled":"maybe"}}"#,
    ] {
        patch_config(kc, bad).await;
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    let log = op.log();
    assert!(
        log.contains("config refused, keeping the last good config"),
        "{log}"
    );
    assert!(log.contains("bad yaml at key 'alpha'"), "{log}");
    assert!(log.contains("gammaEnabled"), "{log}");
    assert_eq!(log.matches("config refused").count(), 3, "{log}");
    let schema = log
        .lines()
        .find(|l| l.contains("config refused") && l.contains("greeting") && !l.contains("unclosed"))
        .unwrap_or_else(|| panic!("no schema refusal naming the field:\n{log}"));
    assert!(schema.contains("alpha"), "{schema}");
    assert!(
        op.child.try_wait().unwrap().is_none(),
        "the operator stopped"
    );
    // Only the ConfigMap patches themselves were writes.
    assert_eq!(writes(&s.fake.stats()), 3, "{:?}", s.fake.stats());

    // gammaEnabled: "false" → gamma uninstalled; alpha and beta read
    // global.enabledModules, so they render anew.
    patch_config(kc, r#"{"data":{"gammaEnabled":"false"}}"#).await;
    eventually(Duration::from_secs(10), "gamma uninstalled", || async {
        last(&c, "gamma").await.is_none()
    })
    .await;
    eventually(
        Duration::from_secs(10),
        "alpha and beta re-rendered",
        || async {
            deployed(&c, &["alpha", "beta"]).await
                == [("alpha".into(), Some(3)), ("beta".into(), Some(2))]
        },
    )
    .await;
    assert!(
        s.fake
            .get("v1/configmaps", Some(NS), "gamma-config")
            .is_none()
    );
    let beta = s
        .fake
        .get("v1/configmaps", Some(NS), "beta-config")
        .unwrap();
    assert_eq!(beta["data"]["enabled"], "alpha,beta,broken");

    // SIGTERM: a clean stop.
    op.signal(nix::sys::signal::Signal::SIGTERM);
    let st = op
        .wait(Duration::from_secs(10))
        .await
        .expect("stopped on SIGTERM");
    assert!(st.success(), "{st:?}\n{}", op.log());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operator_once_converges_and_fails_on_a_failing_module_against_fake_apiserver() {
    let s = serve().await;
    let kc = &s.kubeconfig;
    let dir = tempfile::tempdir().unwrap();
    let (modules, global) = tree(dir.path());
    prepare(kc, None).await;
    // No ConfigMap: an empty config.
    let (st, log) = Operator::once(kc, &modules, &global, &dir.path().join("op.log")).await;
    assert_eq!(st.code(), Some(1), "{log}");
    assert!(log.contains("module 'broken'"), "{log}");
    let c = cluster(kc).await;
    assert_eq!(
        deployed(&c, &["alpha", "beta", "gamma"]).await,
        [
            ("alpha".into(), Some(1)),
            ("beta".into(), Some(1)),
            ("gamma".into(), Some(1))
        ]
    );

    // Disable the failing module: a second --once converges cleanly and
    // writes nothing new.
    kubectl(
        kc,
        &[
            "-n",
            NS,
            "create",
            "configmap",
            "addon-operator",
            "--from-literal=brokenEnabled=false",
        ],
    )
    .await;
    s.fake.reset_stats();
    let (st, log) = Operator::once(kc, &modules, &global, &dir.path().join("op2.log")).await;
    assert!(st.success(), "{log}");
    // alpha, beta, gamma render the same enabledModules? No: broken is
    // gone from it, so each writes one revision.
    assert_eq!(
        deployed(&c, &["alpha", "beta", "gamma"]).await,
        [
            ("alpha".into(), Some(2)),
            ("beta".into(), Some(2)),
            ("gamma".into(), Some(2))
        ]
    );
    // And a third run has nothing to do.
    s.fake.reset_stats();
    let (st, log) = Operator::once(kc, &modules, &global, &dir.path().join("op3.log")).await;
    assert!(st.success(), "{log}");
    assert_eq!(writes(&s.fake.stats()), 0, "{:?}", s.fake.stats());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operator_killed_mid_converge_leaves_nothing_pending_after_a_restart_against_fake_apiserver()
 {
    let s = serve().await;
    let kc = &s.kubeconfig;
    let dir = tempfile::tempdir().unwrap();
    let (modules, global) = tree(dir.path());
    prepare(kc, Some("brokenEnabled=false")).await;
    // Every apply of a module's ConfigMap hangs for 3 s: kill -9 lands
    // while releases are pending.
    s.fake
        .inject(Fault::delay("patch", "configmaps", Duration::from_secs(3)).times(100));
    let mut op = Operator::start(kc, &modules, &global, &dir.path().join("op.log"), &[]);
    let c = cluster(kc).await;
    eventually(Duration::from_secs(30), "a release pending", || async {
        last(&c, "alpha")
            .await
            .is_some_and(|r| r.status().is_pending())
    })
    .await;
    op.signal(nix::sys::signal::Signal::SIGKILL);
    op.wait(Duration::from_secs(5)).await.expect("killed");
    s.fake.clear_faults();

    let op = Operator::start(kc, &modules, &global, &dir.path().join("op2.log"), &[]);
    eventually(
        Duration::from_secs(30),
        "every module deployed after the restart",
        || async {
            deployed(&c, &["alpha", "beta", "gamma"])
                .await
                .iter()
                .all(|(_, v)| v.is_some())
        },
    )
    .await;
    for m in ["alpha", "beta", "gamma"] {
        let hist = release::history(&c, m, NS).await.unwrap();
        assert!(
            hist.iter().all(|r| !r.status().is_pending()),
            "{m}: {:?}\n{}",
            hist.iter()
                .map(|r| (r.version, r.status()))
                .collect::<Vec<_>>(),
            op.log()
        );
        // The interrupted revision stays in the history, marked failed.
        let last = hist.last().unwrap();
        assert_eq!(last.status(), Status::Deployed);
    }
    let alpha = release::history(&c, "alpha", NS).await.unwrap();
    assert_eq!(
        alpha
            .iter()
            .map(|r| (r.version, r.status()))
            .collect::<Vec<_>>(),
        [(1, Status::Failed), (2, Status::Deployed)],
        "{}",
        op.log()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operator_picks_up_new_module_dirs_and_remembers_initial_values_against_fake_apiserver() {
    let s = serve().await;
    let kc = &s.kubeconfig;
    let dir = tempfile::tempdir().unwrap();
    let (modules, global) = tree(dir.path());
    prepare(kc, Some("brokenEnabled=false")).await;
    let mut op = Operator::start(
        kc,
        &modules,
        &global,
        &dir.path().join("op.log"),
        &["--rescan-interval", "1s"],
    );
    let c = cluster(kc).await;
    eventually(Duration::from_secs(30), "alpha deployed", || async {
        last(&c, "alpha").await.is_some()
    })
    .await;

    // A module in the original antiopa layout appears on disk (an image
    // update, a git-sync flip): its `initial_values` generates a password
    // once, which the operator keeps in the ConfigMap.
    let legacy = dir.path().join("staging/050-vault");
    std::fs::create_dir_all(legacy.join("templates")).unwrap();
    std::fs::create_dir_all(legacy.join("hooks/before-helm")).unwrap();
    std::fs::write(
        legacy.join("Chart.yaml"),
        "apiVersion: v2\nname: vault\nversion: 0.1.0\n",
    )
    .unwrap();
    executable(
        &legacy.join("initial_values"),
        "#!/bin/sh\necho \"password: generated-$$-$(date +%N)\"\n",
    );
    std::fs::write(
        legacy.join("templates/secret.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: vault-password\ndata:\n  password: {{ .Values.password | quote }}\n",
    )
    .unwrap();
    std::fs::rename(&legacy, modules.join("050-vault")).unwrap();
    eventually(
        Duration::from_secs(15),
        "the new module deployed",
        || async {
            last(&c, "vault")
                .await
                .is_some_and(|r| r.status() == Status::Deployed)
        },
    )
    .await;
    let password = s
        .fake
        .get("v1/configmaps", Some(NS), "vault-password")
        .unwrap()["data"]["password"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(password.starts_with("generated-"), "{password}");
    eventually(
        Duration::from_secs(10),
        "the password remembered",
        || async {
            s.fake
                .get("v1/configmaps", Some(NS), "addon-operator")
                .is_some_and(|cm| {
                    cm["data"]["vault-values"]
                        .as_str()
                        .is_some_and(|v| v.contains(&password))
                })
        },
    )
    .await;

    // Restarted, the operator renders the same password: nothing to write.
    op.signal(nix::sys::signal::Signal::SIGTERM);
    assert!(
        op.wait(Duration::from_secs(10))
            .await
            .expect("stopped")
            .success()
    );
    let (st, log) = Operator::once(kc, &modules, &global, &dir.path().join("op2.log")).await;
    assert!(st.success(), "{log}");
    assert_eq!(last(&c, "vault").await.unwrap().version, 1, "{log}");
    let again = s
        .fake
        .get("v1/configmaps", Some(NS), "vault-password")
        .unwrap();
    assert_eq!(again["data"]["password"], password.as_str());
}

/// A module `counter` whose hook has a six-field schedule firing every
/// second: each run adds one to `counter.count` in the module's values
/// (so the module renders again, a new release revision) and writes a
/// `CreateOrUpdate` of ConfigMap `tick` with the count; and a module
/// `patcher` whose `beforeHelm` hook creates a ConfigMap, merge-patches,
/// JSON-patches and jq-patches one kubectl made, and deletes another.
fn bindings_tree(dir: &Path) -> (PathBuf, PathBuf) {
    let modules = dir.join("modules");
    let global = dir.join("global-hooks");
    std::fs::create_dir_all(&global).unwrap();
    for (dir_name, name) in [("010-counter", "counter"), ("020-patcher", "patcher")] {
        let d = modules.join(dir_name);
        std::fs::create_dir_all(d.join("templates")).unwrap();
        std::fs::create_dir_all(d.join("hooks")).unwrap();
        std::fs::write(
            d.join("Chart.yaml"),
            format!("apiVersion: v2\nname: {name}\nversion: 0.1.0\n"),
        )
        .unwrap();
        std::fs::write(d.join("values.yaml"), format!("{name}:\n  count: 0\n")).unwrap();
        std::fs::write(
            d.join("templates/cm.yaml"),
            format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}-config\ndata:\n  count: {{{{ .Values.{name}.count | quote }}}}\n  scheduled: {{{{ .Values.global.scheduled | default false | quote }}}}\n"
            ),
        )
        .unwrap();
    }
    std::fs::write(
        modules.join("values.yaml"),
        "counterEnabled: true\npatcherEnabled: true\n",
    )
    .unwrap();
    let state = dir.join("ticks");
    executable(
        &modules.join("010-counter/hooks/tick.sh"),
        &format!(
            r#"#!/bin/sh
if [ "$1" = "--config" ]; then echo '{{"configVersion":"v1","schedule":[{{"name":"every-second","crontab":"*/1 * * * * *"}}]}}'; exit 0; fi
n=$(cat {state} 2>/dev/null || echo 0); n=$((n+1)); echo $n > {state}
cp "$BINDING_CONTEXT_PATH" {state}.context
echo "[{{\"op\":\"add\",\"path\":\"/counter/count\",\"value\":$n}}]" > "$VALUES_JSON_PATCH_PATH"
echo "{{\"operation\":\"CreateOrUpdate\",\"object\":{{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{{\"name\":\"tick\",\"namespace\":\"{NS}\"}},\"data\":{{\"n\":\"$n\"}}}}}}" > "$KUBERNETES_PATCH_PATH"
"#,
            state = state.display()
        ),
    );
    executable(
        &modules.join("020-patcher/hooks/ops.sh"),
        &format!(
            r#"#!/bin/sh
if [ "$1" = "--config" ]; then echo '{{"configVersion":"v1","beforeHelm":1}}'; exit 0; fi
cat > "$KUBERNETES_PATCH_PATH" <<'OPS'
{{"operation":"CreateOrUpdate","object":{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"made-by-hook","namespace":"{NS}"}},"data":{{"a":"1"}}}}}}
{{"operation":"CreateIfNotExists","object":{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"made-by-hook","namespace":"{NS}"}},"data":{{"a":"never"}}}}}}
{{"operation":"MergePatch","apiVersion":"v1","kind":"ConfigMap","namespace":"{NS}","name":"target","mergePatch":{{"data":{{"merged":"yes"}}}}}}
{{"operation":"JSONPatch","kind":"ConfigMap","namespace":"{NS}","name":"target","jsonPatch":[{{"op":"add","path":"/data/json","value":"yes"}}]}}
{{"operation":"JQPatch","kind":"ConfigMap","namespace":"{NS}","name":"target","jqFilter":".data.jq = (.data.x + \"-jq\")"}}
{{"operation":"MergePatch","kind":"ConfigMap","namespace":"{NS}","name":"absent","mergePatch":{{"data":{{"a":"b"}}}},"ignoreMissingObject":true}}
{{"operation":"DeleteInBackground","kind":"ConfigMap","namespace":"{NS}","name":"doomed"}}
{{"operation":"Delete","kind":"ConfigMap","namespace":"{NS}","name":"never-was"}}
OPS
"#
        ),
    );
    executable(
        &global.join("later.sh"),
        r#"#!/bin/sh
if [ "$1" = "--config" ]; then echo '{"configVersion":"v1","schedule":[{"name":"soon","crontab":"@every 2s","allowFailure":true}]}'; exit 0; fi
echo '[{"op":"add","path":"/global/scheduled","value":true}]' > "$VALUES_JSON_PATCH_PATH"
"#,
    );
    (modules, global)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operator_runs_schedule_bindings_and_executes_hook_kubernetes_operations_against_fake_apiserver()
 {
    let s = serve().await;
    let kc = &s.kubeconfig;
    let dir = tempfile::tempdir().unwrap();
    let (modules, global) = bindings_tree(dir.path());
    kubectl(kc, &["create", "namespace", NS]).await;
    kubectl(kc, &["-n", NS, "create", "configmap", "addon-operator"]).await;
    kubectl(
        kc,
        &[
            "-n",
            NS,
            "create",
            "configmap",
            "target",
            "--from-literal=x=1",
        ],
    )
    .await;
    kubectl(kc, &["-n", NS, "create", "configmap", "doomed"]).await;
    let op = Operator::start(kc, &modules, &global, &dir.path().join("op.log"), &[]);
    let c = cluster(kc).await;

    // The hook's operations, executed after its beforeHelm run.
    eventually(Duration::from_secs(30), "patcher deployed", || async {
        last(&c, "patcher").await.is_some()
    })
    .await;
    let made = s
        .fake
        .get("v1/configmaps", Some(NS), "made-by-hook")
        .unwrap_or_else(|| panic!("made-by-hook created\n{}", op.log()));
    assert_eq!(made["data"]["a"], "1", "{}", op.log());
    let target = kubectl(kc, &["-n", NS, "get", "configmap", "target", "-o", "json"]).await;
    let target: serde_json::Value = serde_json::from_str(&target).unwrap();
    assert_eq!(
        target["data"],
        serde_json::json!({"x": "1", "merged": "yes", "json": "yes", "jq": "1-jq"}),
        "{}",
        op.log()
    );
    assert!(s.fake.get("v1/configmaps", Some(NS), "doomed").is_none());
    assert!(s.fake.get("v1/configmaps", Some(NS), "absent").is_none());

    // The schedule: every second, the values change and the module
    // renders again; its ConfigMap follows the count.
    let first = last(&c, "counter").await.map(|r| r.version).unwrap_or(0);
    eventually(
        Duration::from_secs(15),
        "counter re-rendered with its schedule's count 3",
        || async {
            let count = s
                .fake
                .get("v1/configmaps", Some(NS), "counter-config")
                .and_then(|cm| cm["data"]["count"].as_str()?.parse::<u64>().ok());
            count.is_some_and(|n| n >= 3)
                && last(&c, "counter")
                    .await
                    .is_some_and(|r| r.version >= first + 3)
        },
    )
    .await;
    let tick = s.fake.get("v1/configmaps", Some(NS), "tick").unwrap();
    assert!(
        tick["data"]["n"].as_str().unwrap().parse::<u64>().unwrap() >= 3,
        "{tick}"
    );
    let context = std::fs::read_to_string(dir.path().join("ticks.context")).unwrap();
    let context: serde_json::Value = serde_json::from_str(&context).unwrap();
    assert_eq!(
        context,
        serde_json::json!([{"binding": "every-second", "type": "Schedule"}])
    );
    assert!(!op.log().contains("schedule run failed"), "{}", op.log());

    // A global hook's schedule changed global values: every module
    // converges again and renders them.
    eventually(
        Duration::from_secs(10),
        "the global schedule's values rendered",
        || async {
            s.fake
                .get("v1/configmaps", Some(NS), "patcher-config")
                .is_some_and(|cm| cm["data"]["scheduled"] == "true")
        },
    )
    .await;

    // counter disabled: uninstalled, and its schedule stops.
    patch_config(kc, r#"{"data":{"counterEnabled":"false"}}"#).await;
    eventually(Duration::from_secs(10), "counter uninstalled", || async {
        s.fake
            .get("v1/configmaps", Some(NS), "counter-config")
            .is_none()
    })
    .await;
    let ticks = || std::fs::read_to_string(dir.path().join("ticks")).unwrap();
    let stopped = ticks();
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(ticks(), stopped, "{}", op.log());
}

/// A module `watched` whose hook binds ConfigMaps labelled `watch=me`
/// with jqFilter `.data` (and its own snapshot in every context): each run
/// writes the snapshot's filter results into `watched.items`, which the
/// chart renders; the first `Added` context is kept in a file.
fn kube_tree(dir: &Path) -> (PathBuf, PathBuf) {
    let modules = dir.join("modules");
    let global = dir.join("global-hooks");
    std::fs::create_dir_all(&global).unwrap();
    let d = modules.join("010-watched");
    std::fs::create_dir_all(d.join("templates")).unwrap();
    std::fs::create_dir_all(d.join("hooks")).unwrap();
    std::fs::write(modules.join("values.yaml"), "watchedEnabled: true\n").unwrap();
    std::fs::write(
        d.join("Chart.yaml"),
        "apiVersion: v2\nname: watched\nversion: 0.1.0\n",
    )
    .unwrap();
    std::fs::write(
        d.join("values.yaml"),
        "watched:\n  items: []\n  names: []\n",
    )
    .unwrap();
    std::fs::write(
        d.join("templates/cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: watched-config\ndata:\n  count: {{ len .Values.watched.items | quote }}\n  items: {{ .Values.watched.items | toJson | quote }}\n  names: {{ .Values.watched.names | toJson | quote }}\n  global: {{ .Values.global.watchedCount | default 0 | quote }}\n",
    )
    .unwrap();
    let added = dir.join("added.json");
    executable(
        &d.join("hooks/watch.sh"),
        &format!(
            r#"#!/bin/sh
if [ "$1" = "--config" ]; then echo '{{"configVersion":"v1","kubernetes":[{{"name":"cms","apiVersion":"v1","kind":"configmaps","labelSelector":{{"matchLabels":{{"watch":"me"}}}},"jqFilter":".data","includeSnapshotsFrom":["cms"]}}]}}'; exit 0; fi
if [ ! -e {added} ] && jq -e 'any(.[]; .watchEvent == "Added")' "$BINDING_CONTEXT_PATH" >/dev/null; then cp "$BINDING_CONTEXT_PATH" {added}; fi
items=$(jq -c '[.[-1].snapshots.cms[].filterResult]' "$BINDING_CONTEXT_PATH")
echo "[{{\"op\":\"add\",\"path\":\"/watched/items\",\"value\":$items}}]" > "$VALUES_JSON_PATCH_PATH"
"#,
            added = added.display()
        ),
    );
    // A global hook counting them into global values.
    executable(
        &global.join("gwatch.sh"),
        r#"#!/bin/sh
if [ "$1" = "--config" ]; then echo '{"configVersion":"v1","kubernetes":[{"name":"all","apiVersion":"v1","kind":"configmaps","labelSelector":{"matchLabels":{"watch":"me"}},"includeSnapshotsFrom":["all"],"keepFullObjectsInMemory":false}]}'; exit 0; fi
n=$(jq '.[-1].snapshots.all | length' "$BINDING_CONTEXT_PATH")
# keepFullObjectsInMemory: false drops the object from Event contexts too.
if [ "$(jq '[.[] | select(.type == "Event") | has("object")] | any' "$BINDING_CONTEXT_PATH")" = "true" ]; then n=-1; fi
echo "[{\"op\":\"add\",\"path\":\"/global/watchedCount\",\"value\":$n}]" > "$VALUES_JSON_PATCH_PATH"
"#,
    );
    // The same objects (one shared watch), snapshot only, read by beforeHelm.
    executable(
        &d.join("hooks/names.sh"),
        r#"#!/bin/sh
if [ "$1" = "--config" ]; then echo '{"configVersion":"v1","beforeHelm":1,"kubernetes":[{"name":"names","kind":"configmaps","labelSelector":{"matchLabels":{"watch":"me"}},"jqFilter":".metadata.name","executeHookOnEvent":[],"executeHookOnSynchronization":false,"keepFullObjectsInMemory":false}]}'; exit 0; fi
names=$(jq -c '[.[0].snapshots.names[].filterResult]' "$BINDING_CONTEXT_PATH")
echo "[{\"op\":\"add\",\"path\":\"/watched/names\",\"value\":$names}]" > "$VALUES_JSON_PATCH_PATH"
"#,
    );
    (modules, global)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operator_runs_kubernetes_bindings_on_watch_events_against_fake_apiserver() {
    let s = serve().await;
    let kc = &s.kubeconfig;
    let dir = tempfile::tempdir().unwrap();
    let (modules, global) = kube_tree(dir.path());
    kubectl(kc, &["create", "namespace", NS]).await;
    kubectl(kc, &["-n", NS, "create", "configmap", "addon-operator"]).await;
    // Listed at start: in the Synchronization run's snapshot.
    let before = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: early\n  namespace: addons\n  labels:\n    watch: me\ndata:\n  k: early\n";
    std::fs::write(dir.path().join("early.yaml"), before).unwrap();
    kubectl(
        kc,
        &[
            "apply",
            "-f",
            dir.path().join("early.yaml").to_str().unwrap(),
        ],
    )
    .await;
    // Not labelled: never seen.
    kubectl(kc, &["-n", NS, "create", "configmap", "other"]).await;
    let op = Operator::start(kc, &modules, &global, &dir.path().join("op.log"), &[]);
    let items = || {
        s.fake
            .get("v1/configmaps", Some(NS), "watched-config")
            .and_then(|cm| {
                let text = cm["data"]["items"].as_str()?.to_string();
                serde_json::from_str::<serde_json::Value>(&text).ok()
            })
    };
    eventually(
        Duration::from_secs(30),
        "watched rendered with the listed object",
        || async { items() == Some(serde_json::json!([{"k": "early"}])) },
    )
    .await;
    // The global hook's Synchronization at start saw it too.
    let cm = s
        .fake
        .get("v1/configmaps", Some(NS), "watched-config")
        .unwrap();
    assert_eq!(cm["data"]["global"], "1", "{}", op.log());

    // Added.
    let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: late\n  namespace: addons\n  labels:\n    watch: me\ndata:\n  k: v1\n";
    std::fs::write(dir.path().join("late.yaml"), cm).unwrap();
    kubectl(
        kc,
        &[
            "apply",
            "-f",
            dir.path().join("late.yaml").to_str().unwrap(),
        ],
    )
    .await;
    eventually(
        Duration::from_secs(5),
        "the added object rendered",
        || async { items() == Some(serde_json::json!([{"k": "early"}, {"k": "v1"}])) },
    )
    .await;
    let names = || {
        s.fake
            .get("v1/configmaps", Some(NS), "watched-config")
            .and_then(|cm| {
                let text = cm["data"]["names"].as_str()?.to_string();
                serde_json::from_str::<serde_json::Value>(&text).ok()
            })
    };
    // beforeHelm saw the other binding's live snapshot.
    assert_eq!(
        names(),
        Some(serde_json::json!(["early", "late"])),
        "{}",
        op.log()
    );
    // The three bindings share one watch.
    assert!(
        op.log()
            .contains("kubernetes bindings in force bindings=3 watches=1"),
        "{}",
        op.log()
    );
    // The global hook's event converged again.
    let global = || {
        s.fake
            .get("v1/configmaps", Some(NS), "watched-config")
            .and_then(|cm| cm["data"]["global"].as_str().map(str::to_string))
    };
    eventually(
        Duration::from_secs(5),
        "the global count rendered",
        || async { global().as_deref() == Some("2") },
    )
    .await;
    let ctx = std::fs::read_to_string(dir.path().join("added.json")).unwrap();
    let ctx: serde_json::Value = serde_json::from_str(&ctx).unwrap();
    let ctx = ctx
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["watchEvent"] == "Added")
        .unwrap()
        .clone();
    let keys: Vec<&String> = ctx.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "binding",
            "filterResult",
            "object",
            "snapshots",
            "type",
            "watchEvent"
        ],
        "{ctx}"
    );
    assert_eq!(ctx["binding"], "cms");
    assert_eq!(ctx["type"], "Event");
    assert_eq!(ctx["filterResult"], serde_json::json!({"k": "v1"}));
    assert_eq!(ctx["object"]["kind"], "ConfigMap");
    assert_eq!(ctx["object"]["apiVersion"], "v1");
    assert_eq!(ctx["object"]["metadata"]["name"], "late");
    assert!(ctx["object"]["metadata"].get("managedFields").is_none());
    assert_eq!(
        ctx["snapshots"]["cms"],
        serde_json::json!([
            {"filterResult": {"k": "early"}, "object": ctx["snapshots"]["cms"][0]["object"]},
            {"filterResult": {"k": "v1"}, "object": ctx["snapshots"]["cms"][1]["object"]},
        ])
    );

    // Modified.
    kubectl(
        kc,
        &[
            "-n",
            NS,
            "patch",
            "configmap",
            "late",
            "--type=merge",
            "-p",
            r#"{"data":{"k":"v2"}}"#,
        ],
    )
    .await;
    eventually(
        Duration::from_secs(5),
        "the modified object rendered",
        || async { items() == Some(serde_json::json!([{"k": "early"}, {"k": "v2"}])) },
    )
    .await;
    // A change the filter does not see runs nothing; without a jqFilter
    // (the global hook), any change of the object is Modified.
    let runs = || {
        op.log()
            .matches("hooks/watch.sh': kubernetes event run done")
            .count()
    };
    let global_runs = || {
        op.log()
            .matches("gwatch.sh': kubernetes event run done")
            .count()
    };
    let (n, g) = (runs(), global_runs());
    assert!(n >= 2, "{}", op.log());
    kubectl(
        kc,
        &["-n", NS, "label", "configmap", "late", "unrelated=yes"],
    )
    .await;
    eventually(
        Duration::from_secs(5),
        "the global hook's Modified run",
        || async { global_runs() > g },
    )
    .await;
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert_eq!(runs(), n, "{}", op.log());

    // Deleted.
    kubectl(kc, &["-n", NS, "delete", "configmap", "late"]).await;
    eventually(
        Duration::from_secs(5),
        "the deleted object gone from the render",
        || async { items() == Some(serde_json::json!([{"k": "early"}])) },
    )
    .await;
    assert_eq!(names(), Some(serde_json::json!(["early"])), "{}", op.log());
    assert!(!op.log().contains("run failed"), "{}", op.log());

    // The module disabled: uninstalled, and its bindings stop.
    patch_config(kc, r#"{"data":{"watchedEnabled":"false"}}"#).await;
    eventually(Duration::from_secs(10), "watched uninstalled", || async {
        s.fake
            .get("v1/configmaps", Some(NS), "watched-config")
            .is_none()
    })
    .await;
    // Only the global hook's binding is left (the first line is from the start).
    eventually(Duration::from_secs(5), "its bindings stopped", || async {
        op.log()
            .matches("kubernetes bindings in force bindings=1 watches=1")
            .count()
            == 2
    })
    .await;
    let n = runs();
    kubectl(
        kc,
        &[
            "apply",
            "-f",
            dir.path().join("late.yaml").to_str().unwrap(),
        ],
    )
    .await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(runs(), n, "{}", op.log());
}

//! Module dependencies (`module.yaml` `requirements.modules`), with the
//! real `antiopa run` against fake apiserver: six modules run as a DAG —
//! independent ones together (their hooks' timestamps overlap), each after
//! what it requires, whatever its weight — a module whose requirement is
//! failing or disabled waits (and says so) until that one is deployed;
//! a cycle and a missing module are each one clear error, from `antiopa
//! run` and from `antiopa module list`, which shows the graph.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::cluster_operator::{
    Operator, cluster, deployed, eventually, executable, patch_config, prepare,
};
use crate::cluster_support::*;

/// `name → (requirements.modules as YAML flow, weight)`.
const GRAPH: &[(&str, &str, u32)] = &[
    ("db", "{}", 10),
    ("cache", "{}", 10),
    ("metrics", "{}", 90),
    ("api", "{db: '>= 1.0.0', cache: '>= 1.2'}", 20),
    ("worker", "{db: '~1.2.0'}", 30),
    // A lower weight than what it requires: the graph wins.
    ("web", "{api: '>= 0.0.0', ghost: '>= 1.0.0 !optional'}", 5),
];

/// The modules tree: each module's beforeHelm hook appends `start`, then
/// (after a second) `end` — or `fail` for db while `fail-db` exists — with
/// the time to `runs.log`.
fn tree(dir: &Path) -> (PathBuf, PathBuf) {
    let modules = dir.join("modules");
    let global = dir.join("global-hooks");
    std::fs::create_dir_all(&global).unwrap();
    let log = dir.join("runs.log");
    let fail = dir.join("fail-db");
    let mut enabled = String::new();
    for (name, requires, weight) in GRAPH {
        let d = modules.join(name);
        std::fs::create_dir_all(d.join("templates")).unwrap();
        std::fs::create_dir_all(d.join("hooks")).unwrap();
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
        std::fs::write(
            d.join("templates/cm.yaml"),
            format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata: {{}}\n"),
        )
        .unwrap();
        let check = if *name == "db" {
            format!(
                "if [ -e {f} ]; then echo \"fail db $(date +%s.%N)\" >> {l}; echo 'db is down' >&2; exit 1; fi\n",
                f = fail.display(),
                l = log.display()
            )
        } else {
            String::new()
        };
        executable(
            &d.join("hooks/run.sh"),
            &format!(
                "#!/bin/sh\nif [ \"$1\" = \"--config\" ]; then echo '{{\"configVersion\":\"v1\",\"beforeHelm\":1}}'; exit 0; fi\n\
                 echo \"start {name} $(date +%s.%N)\" >> {l}\nsleep 1\n{check}echo \"end {name} $(date +%s.%N)\" >> {l}\n",
                l = log.display()
            ),
        );
        enabled.push_str(&format!(
            "{}Enabled: true\n",
            antiopa::values::names::values_key(name)
        ));
    }
    std::fs::write(modules.join("values.yaml"), enabled).unwrap();
    (modules, global)
}

/// The last `start`/`end`/`fail` time of each module in `runs.log`.
fn runs(dir: &Path) -> BTreeMap<(String, String), f64> {
    let text = std::fs::read_to_string(dir.join("runs.log")).unwrap_or_default();
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split(' ').collect();
        if let [what, name, t] = f[..] {
            out.insert((what.to_string(), name.to_string()), t.parse().unwrap());
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn modules_run_as_a_dependency_dag_and_wait_for_failing_or_disabled_requirements_against_fake_apiserver()
 {
    let s = serve().await;
    let kc = &s.kubeconfig;
    let dir = tempfile::tempdir().unwrap();
    let (modules, global) = tree(dir.path());
    std::fs::write(dir.path().join("fail-db"), "").unwrap();
    prepare(kc, Some("global={}")).await;
    let op = Operator::start(
        kc,
        &modules,
        &global,
        &dir.path().join("op.log"),
        &["--parallel", "3"],
    );
    let c = cluster(kc).await;

    // db fails: cache and metrics deploy; api and worker wait for db, web
    // for api, and say so.
    eventually(
        Duration::from_secs(30),
        "cache and metrics deployed",
        || async {
            deployed(&c, &["cache", "metrics"])
                .await
                .iter()
                .all(|(_, v)| v.is_some())
        },
    )
    .await;
    let waited = |log: &str| {
        log.contains("not run: waiting for 'db' (not ready)")
            && log.contains("not run: waiting for 'api' (not ready)")
    };
    let end = std::time::Instant::now() + Duration::from_secs(30);
    while !waited(&op.log()) {
        assert!(
            std::time::Instant::now() < end,
            "the waiting modules not logged within 30 s:\n{}",
            op.log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        deployed(&c, &["api", "worker", "web"]).await,
        [
            ("api".into(), None),
            ("worker".into(), None),
            ("web".into(), None)
        ],
        "{}",
        op.log()
    );
    let first = runs(dir.path());
    let t = |m: &BTreeMap<(String, String), f64>, what: &str, name: &str| {
        *m.get(&(what.to_string(), name.to_string()))
            .unwrap_or_else(|| panic!("no '{what} {name}' in the runs log: {m:?}"))
    };
    // Independent modules ran together, weights 10 and 90 alike.
    let latest_start = ["db", "cache", "metrics"]
        .iter()
        .map(|n| t(&first, "start", n))
        .fold(f64::MIN, f64::max);
    let earliest_end = t(&first, "fail", "db")
        .min(t(&first, "end", "cache"))
        .min(t(&first, "end", "metrics"));
    assert!(
        latest_start < earliest_end,
        "db, cache and metrics did not overlap: {first:?}"
    );

    // db recovers: its retry wakes api and worker (together), then web.
    std::fs::remove_file(dir.path().join("fail-db")).unwrap();
    eventually(Duration::from_secs(40), "every module deployed", || async {
        deployed(&c, &["db", "api", "worker", "web"])
            .await
            .iter()
            .all(|(_, v)| v.is_some())
    })
    .await;
    let r = runs(dir.path());
    assert!(t(&r, "start", "api") >= t(&r, "end", "db"), "{r:?}");
    assert!(t(&r, "start", "api") >= t(&r, "end", "cache"), "{r:?}");
    assert!(t(&r, "start", "worker") >= t(&r, "end", "db"), "{r:?}");
    assert!(t(&r, "start", "web") >= t(&r, "end", "api"), "{r:?}");
    assert!(
        t(&r, "start", "api").max(t(&r, "start", "worker"))
            < t(&r, "end", "api").min(t(&r, "end", "worker")),
        "api and worker did not run together: {r:?}"
    );
    println!(
        "dag: db ok at +{:.2}s, api/worker started +{:.2}/+{:.2}s after it, web +{:.2}s after api",
        t(&r, "end", "db") - t(&first, "start", "db"),
        t(&r, "start", "api") - t(&r, "end", "db"),
        t(&r, "start", "worker") - t(&r, "end", "db"),
        t(&r, "start", "web") - t(&r, "end", "api"),
    );

    // db disabled: what requires it waits (its release stays), and says why.
    patch_config(kc, r#"{"data":{"dbEnabled":"false"}}"#).await;
    eventually(
        Duration::from_secs(30),
        "api waits for the disabled db",
        || async { op.log().contains("waiting for 'db' (disabled)") },
    )
    .await;
    assert_eq!(deployed(&c, &["db"]).await, [("db".into(), None)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dependency_cycle_or_a_missing_module_is_one_clear_error_against_fake_apiserver() {
    let s = serve().await;
    let kc = &s.kubeconfig;
    prepare(kc, None).await;
    for (requires, error) in [
        (
            [
                ("a", "{b: '>= 0'}"),
                ("b", "{c: '>= 0'}"),
                ("c", "{a: '>= 0'}"),
            ],
            "module dependency cycle: a → b → c → a",
        ),
        (
            [
                ("a", "{}"),
                ("b", "{a: '>= 0'}"),
                ("c", "{nowhere: '>= 1.0'}"),
            ],
            "requirements.modules.nowhere: module 'nowhere' is not in any modules directory",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let modules = dir.path().join("modules");
        for (name, req) in requires {
            let d = modules.join(name);
            std::fs::create_dir_all(d.join("templates")).unwrap();
            std::fs::write(
                d.join("module.yaml"),
                format!("requirements:\n  modules: {req}\n"),
            )
            .unwrap();
        }
        let global = dir.path().join("global-hooks");
        std::fs::create_dir_all(&global).unwrap();
        let (st, log) = Operator::once(kc, &modules, &global, &dir.path().join("op.log")).await;
        assert!(!st.success(), "{log}");
        assert_eq!(log.matches(error).count(), 1, "{log}");

        let out = std::process::Command::new(antiopa())
            .args([
                "module",
                "list",
                "--global-hooks-dir",
                "none",
                "--modules-dir",
            ])
            .arg(&modules)
            .output()
            .unwrap();
        assert!(!out.status.success());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(error), "{stderr}");
    }

    // A good graph: `module list` shows what each module requires.
    let dir = tempfile::tempdir().unwrap();
    let (modules, _) = tree(dir.path());
    let out = std::process::Command::new(antiopa())
        .args([
            "module",
            "list",
            "--global-hooks-dir",
            "none",
            "--modules-dir",
        ])
        .arg(&modules)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    let row = |name: &str| {
        stdout
            .lines()
            .find(|l| l.split_whitespace().nth(1) == Some(name))
            .unwrap_or_else(|| panic!("no row for {name}: {stdout}"))
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert!(
        stdout.starts_with("ORDER  NAME     STATE    REQUIRES"),
        "{stdout}"
    );
    assert_eq!(
        row("api"),
        "20 api enabled cache, db values.yaml: apiEnabled: true"
    );
    assert_eq!(
        row("web"),
        "5 web enabled api values.yaml: webEnabled: true"
    );
    assert_eq!(row("db"), "10 db enabled - values.yaml: dbEnabled: true");
}

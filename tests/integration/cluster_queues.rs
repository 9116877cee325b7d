//! Hook run queues in `antiopa run`, the real binary against fake
//! apiserver with real kubectl as the user: named queues run beside the
//! main queue; a failing task holds its queue and is retried with the
//! events behind it batched in; `allowFailure` drops it; named-queue
//! events wait for the main queue's Synchronization; `waitForSynchronization:
//! false` runs it in its queue; `executionMinInterval` batches; the exact
//! binding contexts a hook receives (insta snapshot); a 6-field crontab
//! every 2 s for a minute.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::cluster_operator::{NS, Operator, eventually, executable, kubectl, prepare};
use crate::cluster_support::*;

/// A hook printing `config` for `--config`, running `body` otherwise.
fn hook(path: &Path, config: Value, body: &str) {
    executable(
        path,
        &format!(
            "#!/bin/sh\nif [ \"$1\" = \"--config\" ]; then cat <<'CFG'\n{config}\nCFG\nexit 0; fi\n{body}\n"
        ),
    );
}

/// A module `name` in `modules/<dir>` whose chart writes ConfigMap
/// `<name>-config` with `data.v` = `.Values.<name>.v` as JSON.
fn module(modules: &Path, dir: &str, name: &str) -> PathBuf {
    let d = modules.join(dir);
    std::fs::create_dir_all(d.join("templates")).unwrap();
    std::fs::create_dir_all(d.join("hooks")).unwrap();
    std::fs::write(
        d.join("Chart.yaml"),
        format!("apiVersion: v2\nname: {name}\nversion: 0.1.0\n"),
    )
    .unwrap();
    std::fs::write(d.join("values.yaml"), format!("{name}:\n  v: []\n")).unwrap();
    std::fs::write(
        d.join("templates/cm.yaml"),
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}-config\ndata:\n  v: {{{{ .Values.{name}.v | toJson | quote }}}}\n"
        ),
    )
    .unwrap();
    d
}

fn tree(dir: &Path, enabled: &[&str]) -> (PathBuf, PathBuf) {
    let modules = dir.join("modules");
    let global = dir.join("global-hooks");
    std::fs::create_dir_all(&global).unwrap();
    std::fs::create_dir_all(&modules).unwrap();
    let flags: String = enabled
        .iter()
        .map(|m| format!("{m}Enabled: true\n"))
        .collect();
    std::fs::write(modules.join("values.yaml"), flags).unwrap();
    (modules, global)
}

/// A ConfigMap created by kubectl with these labels and data.
async fn create_cm(kc: &Path, dir: &Path, name: &str, labels: &[(&str, &str)], v: &str) {
    let labels: String = labels
        .iter()
        .map(|(k, v)| format!("    {k}: \"{v}\"\n"))
        .collect();
    let text = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {NS}\n  labels:\n{labels}data:\n  v: \"{v}\"\n"
    );
    let f = dir.join(format!("{name}.yaml"));
    std::fs::write(&f, text).unwrap();
    kubectl(kc, &["create", "-f", f.to_str().unwrap()]).await;
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

fn rendered(s: &Served, name: &str) -> Option<Value> {
    let cm = s
        .fake
        .get("v1/configmaps", Some(NS), &format!("{name}-config"))?;
    serde_json::from_str(cm["data"]["v"].as_str()?).ok()
}

/// Event-only binding on ConfigMaps labelled `role=<role>`.
fn on_role(name: &str, role: &str, queue: Option<&str>) -> Value {
    let mut b = json!({
        "name": name,
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "labelSelector": {"matchLabels": {"role": role}},
        "executeHookOnSynchronization": false,
    });
    if let Some(q) = queue {
        b["queue"] = json!(q);
    }
    b
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn named_queues_run_beside_main_retry_batch_and_wait_for_synchronization_against_fake_apiserver()
 {
    let s = serve().await;
    let kc = &s.kubeconfig;
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let l = |f: &str| logs.join(f);
    let (modules, global) = tree(dir.path(), &["q", "g"]);
    let q = module(&modules, "010-q", "q");
    let g = module(&modules, "020-g", "g");
    let names = "jq -c '[.[] | select(.type == \"Event\") | .object.metadata.name]' \"$BINDING_CONTEXT_PATH\"";
    // Main queue: its snapshot's names into the module's values.
    let mut fast = on_role("fast", "fast", None);
    fast["jqFilter"] = json!(".metadata.name");
    fast["includeSnapshotsFrom"] = json!(["fast"]);
    hook(
        &q.join("hooks/fast.sh"),
        json!({"configVersion": "v1", "kubernetes": [fast]}),
        &format!(
            "echo \"fast $(date +%s.%N)\" >> {order}\nv=$(jq -c '[.[-1].snapshots.fast[].filterResult]' \"$BINDING_CONTEXT_PATH\")\necho \"[{{\\\"op\\\":\\\"add\\\",\\\"path\\\":\\\"/q/v\\\",\\\"value\\\":$v}}]\" > \"$VALUES_JSON_PATCH_PATH\"",
            order = l("order").display()
        ),
    );
    // Queue "slow": a hook that takes its time.
    hook(
        &q.join("hooks/slow.sh"),
        json!({"configVersion": "v1", "kubernetes": [on_role("slow", "slow", Some("slow"))]}),
        &format!(
            "echo \"slow-start $(date +%s.%N)\" >> {order}\nsleep 4\necho \"slow-end $(date +%s.%N)\" >> {order}",
            order = l("order").display()
        ),
    );
    // Queue "flaky": fails its first run.
    hook(
        &q.join("hooks/flaky.sh"),
        json!({"configVersion": "v1", "kubernetes": [on_role("flaky", "flaky", Some("flaky"))]}),
        &format!(
            "{names} >> {log}\nif [ ! -e {marker} ]; then touch {marker}; echo 'flaky on purpose' >&2; exit 1; fi",
            log = l("flaky").display(),
            marker = l("flaky.marker").display()
        ),
    );
    // Queue "drop": always fails, allowFailure.
    let mut drop = on_role("drop", "drop", Some("drop"));
    drop["allowFailure"] = json!(true);
    hook(
        &q.join("hooks/drop.sh"),
        json!({"configVersion": "v1", "kubernetes": [drop]}),
        &format!("{names} >> {log}\nexit 1", log = l("drop").display()),
    );
    // Queue "rated": at most one run per 3 s.
    hook(
        &q.join("hooks/rated.sh"),
        json!({"configVersion": "v1", "settings": {"executionMinInterval": "3s", "executionBurst": 1},
               "kubernetes": [on_role("rated", "rated", Some("rated"))]}),
        &format!("{names} >> {log}", log = l("rated").display()),
    );
    // Queue "nowait": its Synchronization runs in its queue.
    hook(
        &q.join("hooks/nowait.sh"),
        json!({"configVersion": "v1", "kubernetes": [{
            "name": "nowait", "apiVersion": "v1", "kind": "ConfigMap",
            "labelSelector": {"matchLabels": {"role": "nowait"}},
            "queue": "nowait", "waitForSynchronization": false}]}),
        &format!(
            "jq -c '[.[] | {{t: .type, n: [.objects[]?.object.metadata.name]}}]' \"$BINDING_CONTEXT_PATH\" >> {log}",
            log = l("nowait").display()
        ),
    );
    // Module g, queue "gated": its Synchronization (in the module run)
    // fails once; events must wait for it to succeed.
    hook(
        &g.join("hooks/gated.sh"),
        json!({"configVersion": "v1", "kubernetes": [{
            "name": "gated", "apiVersion": "v1", "kind": "ConfigMap",
            "labelSelector": {"matchLabels": {"role": "gated"}}, "queue": "gated"}]}),
        &format!(
            "jq -r '.[].type' \"$BINDING_CONTEXT_PATH\" >> {log}\nif [ ! -e {marker} ]; then touch {marker}; exit 1; fi",
            log = l("gated").display(),
            marker = l("gated.marker").display()
        ),
    );
    prepare(kc, None).await;
    let tmp = dir.path();
    create_cm(kc, tmp, "pre-nowait", &[("role", "nowait")], "1").await;
    create_cm(kc, tmp, "pre-gated", &[("role", "gated")], "1").await;
    let op = Operator::start(kc, &modules, &global, &dir.path().join("op.log"), &[]);

    // g's first run fails in its Synchronization; an event meanwhile waits.
    eventually(Duration::from_secs(30), "g's first run failed", || async {
        op.log().contains("module run failed") && op.log().contains("module=g")
    })
    .await;
    create_cm(kc, tmp, "gated-ev", &[("role", "gated")], "1").await;
    eventually(Duration::from_secs(30), "q and g deployed", || async {
        rendered(&s, "q").is_some() && rendered(&s, "g").is_some()
    })
    .await;
    eventually(Duration::from_secs(10), "the gated event ran", || async {
        lines(&l("gated")).iter().any(|t| t == "Event")
    })
    .await;
    let gated = lines(&l("gated"));
    let first_event = gated.iter().position(|t| t == "Event").unwrap();
    assert_eq!(
        gated[..first_event]
            .iter()
            .filter(|t| *t == "Synchronization")
            .count(),
        2,
        "the event ran only after the Synchronization succeeded: {gated:?}\n{}",
        op.log()
    );
    // waitForSynchronization: false: its Synchronization ran in its queue.
    eventually(
        Duration::from_secs(10),
        "nowait's Synchronization",
        || async { !lines(&l("nowait")).is_empty() },
    )
    .await;
    let first: Value = serde_json::from_str(&lines(&l("nowait"))[0]).unwrap();
    assert_eq!(
        first,
        json!([{"n": ["pre-nowait"], "t": "Synchronization"}])
    );

    // A slow named-queue run does not hold the main queue.
    create_cm(kc, tmp, "slow1", &[("role", "slow")], "1").await;
    eventually(Duration::from_secs(10), "the slow hook started", || async {
        lines(&l("order"))
            .iter()
            .any(|x| x.starts_with("slow-start"))
    })
    .await;
    create_cm(kc, tmp, "fast1", &[("role", "fast")], "1").await;
    eventually(Duration::from_secs(10), "fast1 rendered", || async {
        rendered(&s, "q") == Some(json!(["fast1"]))
    })
    .await;
    let order = lines(&l("order"));
    let pos = |p: &str| order.iter().position(|x| x.starts_with(p));
    assert!(
        pos("slow-end").is_none_or(|end| pos("fast").unwrap() < end),
        "the main queue ran while the slow queue's hook was running: {order:?}"
    );

    // A failure holds its queue; the retry takes the event behind it along.
    create_cm(kc, tmp, "f1", &[("role", "flaky")], "1").await;
    eventually(Duration::from_secs(10), "flaky's first run", || async {
        lines(&l("flaky")).len() == 1
    })
    .await;
    create_cm(kc, tmp, "f2", &[("role", "flaky")], "1").await;
    eventually(Duration::from_secs(15), "flaky retried", || async {
        lines(&l("flaky")).len() == 2
    })
    .await;
    assert_eq!(lines(&l("flaky")), [r#"["f1"]"#, r#"["f1","f2"]"#]);
    // The first retry waits 5 s plus up to a second of jitter: logged to a
    // tenth of a second, 5.95 s and over reads "6.0".
    let log = op.log();
    let delay: f64 = log
        .split("hook 'hooks/flaky.sh': retrying in ")
        .nth(1)
        .and_then(|t| t.split('s').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no retry of flaky.sh logged:\n{log}"));
    assert!((5.0..=6.0).contains(&delay), "{delay}\n{log}");

    // allowFailure: logged, dropped, the next event runs alone.
    create_cm(kc, tmp, "d1", &[("role", "drop")], "1").await;
    eventually(Duration::from_secs(10), "drop's first run", || async {
        lines(&l("drop")).len() == 1
    })
    .await;
    create_cm(kc, tmp, "d2", &[("role", "drop")], "1").await;
    eventually(Duration::from_secs(10), "drop's second run", || async {
        lines(&l("drop")).len() == 2
    })
    .await;
    assert_eq!(lines(&l("drop")), [r#"["d1"]"#, r#"["d2"]"#]);
    assert!(
        op.log()
            .contains("kubernetes event run failed (allowFailure)")
    );

    // executionMinInterval: what arrives within the interval is one run.
    create_cm(kc, tmp, "r1", &[("role", "rated")], "1").await;
    eventually(Duration::from_secs(10), "rated's first run", || async {
        lines(&l("rated")).len() == 1
    })
    .await;
    // r2 and r3 in one kubectl call: well within the 3 s however slow
    // kubectl starts on a loaded machine.
    let two = ["r2", "r3"].map(|n| {
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {n}\n  namespace: {NS}\n  labels:\n    role: \"rated\"\ndata:\n  v: \"1\"\n")
    });
    let f = tmp.join("r2-r3.yaml");
    std::fs::write(&f, two.join("---\n")).unwrap();
    kubectl(kc, &["create", "-f", f.to_str().unwrap()]).await;
    eventually(Duration::from_secs(10), "r3 ran", || async {
        lines(&l("rated")).iter().any(|x| x.contains("r3"))
    })
    .await;
    assert_eq!(lines(&l("rated")), [r#"["r1"]"#, r#"["r2","r3"]"#]);
    assert!(!op.log().contains("panicked"), "{}", op.log());
}

/// uid, resourceVersion and timestamps replaced: what differs run to run.
fn redact(v: &mut Value) {
    match v {
        Value::Object(m) => {
            for (k, x) in m.iter_mut() {
                if ["uid", "resourceVersion", "creationTimestamp"].contains(&k.as_str()) {
                    *x = json!("[redacted]");
                } else {
                    redact(x);
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(redact),
        _ => {}
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hooks_get_shell_operators_exact_binding_contexts_against_fake_apiserver() {
    let s = serve().await;
    let kc = &s.kubeconfig;
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let l = |f: &str| logs.join(f);
    let (modules, global) = tree(dir.path(), &["ctx"]);
    let m = module(&modules, "010-ctx", "ctx");
    let record = |f: &str| {
        format!(
            "cat \"$BINDING_CONTEXT_PATH\" >> {log}\necho >> {log}",
            log = l(f).display()
        )
    };
    // A jqFilter (gojq output: numbers, keys sorted), full objects, its
    // own snapshot; its values render the module.
    hook(
        &m.join("hooks/cms.sh"),
        json!({"configVersion": "v1", "kubernetes": [{
            "name": "cms", "apiVersion": "v1", "kind": "ConfigMap",
            "labelSelector": {"matchLabels": {"watch": "me"}},
            "jqFilter": "{v: .data.v, len: (.data.v | length), half: ((.data.v | tonumber) / 2)}",
            "includeSnapshotsFrom": ["cms"]}]}),
        &format!(
            "{}\nv=$(jq -c '[.[-1].snapshots.cms[].filterResult.v]' \"$BINDING_CONTEXT_PATH\")\necho \"[{{\\\"op\\\":\\\"add\\\",\\\"path\\\":\\\"/ctx/v\\\",\\\"value\\\":$v}}]\" > \"$VALUES_JSON_PATCH_PATH\"",
            record("cms")
        ),
    );
    // A group: one binding with events, one snapshot only; kinds spelled
    // as users do.
    hook(
        &m.join("hooks/group.sh"),
        json!({"configVersion": "v1", "kubernetes": [
            {"name": "g-names", "kind": "configmap", "group": "g",
             "labelSelector": {"matchLabels": {"watch": "me"}},
             "jqFilter": ".metadata.name", "keepFullObjectsInMemory": false},
            {"name": "g-all", "apiVersion": "v1", "kind": "cm", "group": "g",
             "labelSelector": {"matchLabels": {"watch": "me"}},
             "executeHookOnEvent": [], "keepFullObjectsInMemory": false}]}),
        &record("group"),
    );
    // No jqFilter, no objects kept, snapshots of itself and another binding.
    hook(
        &m.join("hooks/slim.sh"),
        json!({"configVersion": "v1", "kubernetes": [
            {"name": "slim", "apiVersion": "v1", "kind": "configmaps",
             "labelSelector": {"matchLabels": {"watch": "me"}},
             "keepFullObjectsInMemory": false, "includeSnapshotsFrom": ["slim", "names"]},
            {"name": "names", "apiVersion": "v1", "kind": "ConfigMap",
             "labelSelector": {"matchLabels": {"watch": "me"}}, "jqFilter": ".metadata.name",
             "executeHookOnEvent": [], "executeHookOnSynchronization": false}]}),
        &record("slim"),
    );
    prepare(kc, None).await;
    let tmp = dir.path();
    create_cm(kc, tmp, "a", &[("watch", "me")], "10").await;
    create_cm(kc, tmp, "unwatched", &[("other", "x")], "1").await;
    let op = Operator::start(kc, &modules, &global, &dir.path().join("op.log"), &[]);
    eventually(Duration::from_secs(30), "ctx rendered", || async {
        rendered(&s, "ctx") == Some(json!(["10"]))
    })
    .await;
    let runs = |f: &str| lines(&l(f)).len();
    let wait_runs = |want: [usize; 3]| {
        let runs = &runs;
        let op = &op;
        async move {
            eventually(Duration::from_secs(10), "the hooks' runs", || async {
                [runs("cms"), runs("group"), runs("slim")] == want
            })
            .await;
            // Nothing more comes.
            tokio::time::sleep(Duration::from_millis(500)).await;
            assert_eq!(
                [runs("cms"), runs("group"), runs("slim")],
                want,
                "{}",
                op.log()
            );
        }
    };
    wait_runs([1, 1, 1]).await;

    // Added, and the module renders the hook's values.
    let t = Instant::now();
    create_cm(kc, tmp, "c", &[("watch", "me")], "4").await;
    let created = t.elapsed();
    eventually(Duration::from_secs(10), "c rendered", || async {
        rendered(&s, "ctx") == Some(json!(["10", "4"]))
    })
    .await;
    let latency = t.elapsed() - created;
    println!(
        "event to re-rendered module: {:.0} ms (kubectl create took {:.0} ms)",
        latency.as_secs_f64() * 1000.0,
        created.as_secs_f64() * 1000.0
    );
    wait_runs([2, 2, 2]).await;
    // Modified, the filter result changed (the group's filter does not see it).
    kubectl(
        kc,
        &[
            "-n",
            NS,
            "patch",
            "configmap",
            "c",
            "--type=merge",
            "-p",
            r#"{"data":{"v":"22"}}"#,
        ],
    )
    .await;
    wait_runs([3, 2, 3]).await;
    // Modified, no filter result changed: only the binding without one runs.
    kubectl(kc, &["-n", NS, "label", "configmap", "c", "extra=yes"]).await;
    wait_runs([3, 2, 4]).await;
    // Deleted.
    kubectl(kc, &["-n", NS, "delete", "configmap", "c"]).await;
    wait_runs([4, 3, 5]).await;
    assert!(
        op.log()
            .contains("kubernetes bindings in force bindings=5 watches=1"),
        "every spelling of ConfigMap shares one watch:\n{}",
        op.log()
    );

    let mut all = serde_json::Map::new();
    for f in ["cms", "group", "slim"] {
        let runs: Vec<Value> = lines(&l(f))
            .iter()
            .map(|x| {
                let v: Value = serde_json::from_str(x).unwrap();
                // Keys as Go's json.Marshal writes a map: sorted, compact.
                assert_eq!(x, &serde_json::to_string(&v).unwrap());
                v
            })
            .collect();
        all.insert(f.into(), Value::Array(runs));
    }
    let mut all = Value::Object(all);
    redact(&mut all);
    insta::assert_snapshot!(serde_json::to_string_pretty(&all).unwrap());
    // Within a second of the event on an idle machine; this one is shared.
    assert!(latency < Duration::from_secs(3), "{latency:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_six_field_crontab_fires_every_two_seconds_for_a_minute_against_fake_apiserver() {
    let s = serve().await;
    let kc = &s.kubeconfig;
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let l = |f: &str| logs.join(f);
    let (modules, global) = tree(dir.path(), &["sched"]);
    let m = module(&modules, "010-sched", "sched");
    hook(
        &m.join("hooks/tick.sh"),
        json!({"configVersion": "v1", "schedule": [
            {"name": "tick", "crontab": "*/2 * * * * *", "queue": "timer"}]}),
        &format!("date +%s.%N >> {}", l("ticks").display()),
    );
    // allowFailure in a named queue: every fire runs, none retried.
    hook(
        &m.join("hooks/failing.sh"),
        json!({"configVersion": "v1", "schedule": [
            {"name": "fail", "crontab": "*/2 * * * * *", "queue": "failing", "allowFailure": true}]}),
        &format!("date +%s.%N >> {}\nexit 1", l("fails").display()),
    );
    // A group and includeSnapshotsFrom: fired together, one run.
    hook(
        &m.join("hooks/grouped.sh"),
        json!({"configVersion": "v1",
            "schedule": [
                {"name": "every5", "crontab": "*/5 * * * * *", "group": "g", "queue": "grp"},
                {"name": "inc", "crontab": "*/5 * * * * *", "includeSnapshotsFrom": ["cms"], "queue": "grp"}],
            "kubernetes": [{"name": "cms", "apiVersion": "v1", "kind": "ConfigMap", "group": "g",
                "labelSelector": {"matchLabels": {"watch": "me"}}, "jqFilter": ".data.v",
                "keepFullObjectsInMemory": false,
                "executeHookOnEvent": [], "executeHookOnSynchronization": false}]}),
        &format!(
            "cat \"$BINDING_CONTEXT_PATH\" >> {log}\necho >> {log}",
            log = l("grouped").display()
        ),
    );
    prepare(kc, None).await;
    create_cm(kc, dir.path(), "a", &[("watch", "me")], "1").await;
    let op = Operator::start(kc, &modules, &global, &dir.path().join("op.log"), &[]);
    let t = Instant::now();
    while lines(&l("ticks")).is_empty() {
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "no tick:\n{}",
            op.log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let start = lines(&l("ticks")).len();
    tokio::time::sleep(Duration::from_secs(60)).await;
    let ticks: Vec<f64> = lines(&l("ticks"))[start - 1..]
        .iter()
        .map(|x| x.parse().unwrap())
        .collect();
    // Each fire against its second (an even one), and the gaps between.
    let worst_late = ticks
        .iter()
        .map(|t| t - (t / 2.0).floor() * 2.0)
        .fold(0.0f64, f64::max);
    let gaps: Vec<f64> = ticks.windows(2).map(|w| w[1] - w[0]).collect();
    let worst_gap = gaps.iter().map(|g| (g - 2.0).abs()).fold(0.0f64, f64::max);
    println!(
        "*/2 * * * * * over {:.1} s: {} fires, latest {:.3} s after its second, gaps 2 s ± {:.3} s",
        ticks.last().unwrap() - ticks[0],
        ticks.len(),
        worst_late,
        worst_gap
    );
    assert!(ticks.len() >= 29, "{ticks:?}");
    assert!(
        worst_late <= 1.0 && worst_gap <= 1.0,
        "{ticks:?}\n{}",
        op.log()
    );

    // allowFailure: failed every time, never held back.
    let fails = lines(&l("fails")).len();
    assert!(fails >= 28, "{fails}\n{}", op.log());
    assert!(!op.log().contains("failing.sh': retrying"), "{}", op.log());
    // The group's and includeSnapshotsFrom's contexts, one run.
    let run: Value = serde_json::from_str(&lines(&l("grouped"))[0]).unwrap();
    assert_eq!(
        run,
        json!([
            {"binding": "every5", "groupName": "g", "snapshots": {"cms": [{"filterResult": "1"}]}, "type": "Group"},
            {"binding": "inc", "snapshots": {"cms": [{"filterResult": "1"}]}, "type": "Schedule"}
        ])
    );
}

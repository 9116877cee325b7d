//! Running real shell hooks with addon-operator's file protocol, and the
//! binding-context JSON they receive.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use antiopa::hooks::config::{BindingType, parse_config};
use antiopa::hooks::context::{
    BindingContext, KubeEvent, SnapshotObject, Snapshots, binding_context_json,
};
use antiopa::hooks::output::{KubeOperation, PatchBody};
use antiopa::hooks::{
    FoundHook, Hook, HookError, HookKind, HookScope, JqRunner, RunInput, RunOptions, WatchEvent,
};
use serde_json::{Value, json};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/hooks")
}

fn module_scope() -> HookScope {
    HookScope::Module {
        module: "my-module".into(),
        values_key: "myModule".into(),
    }
}

fn opts(tmp: &Path) -> RunOptions {
    RunOptions {
        tmp_dir: tmp.to_path_buf(),
        timeout: Some(Duration::from_secs(20)),
        keep_tmp_files: false,
        max_output_bytes: 4096,
        ..RunOptions::default()
    }
}

fn hook(rel: &str, scope: HookScope, o: &RunOptions) -> Hook {
    let found = FoundHook {
        name: rel.to_string(),
        path: fixtures().join(rel),
    };
    Hook::load(found, scope, o).unwrap()
}

fn run(
    h: &Hook,
    o: &RunOptions,
    lines: &mut Vec<String>,
) -> Result<antiopa::hooks::HookOutput, HookError> {
    let ctx = [BindingContext::lifecycle(
        BindingType::BeforeHelm,
        &h.config,
        &Snapshots::new(),
    )];
    let values = json!({"global": {"a": 1}, "myModule": {"old": true}});
    let config_values = json!({"global": {}, "myModule": {}});
    let input = RunInput {
        binding: BindingType::BeforeHelm,
        contexts: &ctx,
        values: &values,
        config_values: &config_values,
    };
    h.run(&input, o, &mut |l: &str| lines.push(l.to_string()))
}

#[test]
fn protocol_files_and_every_output() {
    let tmp = tempfile::tempdir().unwrap();
    let o = opts(tmp.path());
    let h = hook("run/protocol.sh", module_scope(), &o);
    let mut lines = Vec::new();
    let out = run(&h, &o, &mut lines).unwrap();
    assert_eq!(
        lines,
        [
            "run/protocol.sh: hook says hello on stderr",
            "run/protocol.sh: second line"
        ]
    );
    assert_eq!(out.stdout, "stdout text\n");
    let patch = serde_json::to_value(&out.values_patch.operations).unwrap();
    assert_eq!(
        patch,
        json!([
            {"op": "add", "path": "/myModule/seen", "value": [
                "BINDING_CONTEXT_PATH", "VALUES_PATH", "CONFIG_VALUES_PATH", "VALUES_JSON_PATCH_PATH",
                "CONFIG_VALUES_JSON_PATCH_PATH", "METRICS_PATH", "KUBERNETES_PATCH_PATH", "RETURN_VALUES_PATH"]},
            {"op": "add", "path": "/myModule/context", "value": [{"binding": "beforeHelm", "snapshots": {}}]},
            {"op": "add", "path": "/myModule/values", "value": {"global": {"a": 1}, "myModule": {"old": true}}},
            {"op": "remove", "path": "/myModule/old"}
        ])
    );
    assert_eq!(
        serde_json::to_value(&out.config_values_patch.operations).unwrap(),
        json!([{"op": "add", "path": "/myModule/replicas", "value": 3}])
    );
    insta::assert_snapshot!(
        "protocol_metrics",
        serde_json::to_string_pretty(&out.metrics).unwrap()
    );
    assert_eq!(out.kubernetes_operations.len(), 6);
    assert!(
        matches!(&out.kubernetes_operations[3], KubeOperation::Patch { body: PatchBody::Jq(f), .. } if f.source() == ".spec.replicas = 1")
    );
    insta::assert_snapshot!(
        "protocol_kube_operations",
        serde_json::to_string_pretty(&out.kubernetes_operations).unwrap()
    );
    assert_eq!(out.return_values, Some(json!({"legacy": {"answer": 42}})));
    // The per-run directory is gone.
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
}

#[test]
fn keep_tmp_files_leaves_the_run_dir() {
    let tmp = tempfile::tempdir().unwrap();
    let mut o = opts(tmp.path());
    o.keep_tmp_files = true;
    let h = hook("run/protocol.sh", module_scope(), &o);
    run(&h, &o, &mut Vec::new()).unwrap();
    let dirs: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().flatten().collect();
    assert_eq!(dirs.len(), 1);
    let ctx = std::fs::read_to_string(dirs[0].path().join("binding-context.json")).unwrap();
    assert_eq!(ctx, r#"[{"binding":"beforeHelm","snapshots":{}}]"#);
}

#[test]
fn timeout_kills_the_process_group() {
    let tmp = tempfile::tempdir().unwrap();
    let mut o = opts(tmp.path());
    let pid_file = tmp.path().join("child.pid");
    o.env
        .push(("CHILD_PID_FILE".into(), pid_file.display().to_string()));
    let h = hook("run/sleep.sh", module_scope(), &o);
    o.timeout = Some(Duration::from_millis(700));
    let start = Instant::now();
    let err = run(&h, &o, &mut Vec::new()).unwrap_err();
    assert!(start.elapsed() < Duration::from_secs(10));
    assert_eq!(
        err.to_string(),
        "hook 'run/sleep.sh' failed (binding beforeHelm): timed out after 700ms; its process group was killed"
    );
    // The background `sleep` went with it. A SIGKILL is acted on when the
    // killed process next runs, so on a busy machine it may still be
    // listed as sleeping just after `run` returns: give it a few seconds
    // to be gone (or a zombie) before calling it a survivor.
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    let alive = Path::new("/proc").join(pid.trim()).join("stat");
    let zombie_or_gone = || std::fs::read_to_string(&alive).map_or(true, |s| s.contains(") Z"));
    let deadline = Instant::now() + Duration::from_secs(5);
    while !zombie_or_gone() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(zombie_or_gone(), "background child {pid} survived");
}

#[test]
fn failures_name_the_hook_and_binding() {
    let tmp = tempfile::tempdir().unwrap();
    let o = opts(tmp.path());
    let mut lines = Vec::new();
    let err = run(&hook("run/fail.sh", module_scope(), &o), &o, &mut lines).unwrap_err();
    assert_eq!(
        err.to_string(),
        "hook 'run/fail.sh' failed (binding beforeHelm): exit status 3"
    );
    assert_eq!(lines, ["run/fail.sh: something went wrong"]);

    let messages: Vec<String> = [
        "run/bad-json.sh",
        "run/forbidden.sh",
        "run/replace.sh",
        "run/bad-metrics.sh",
        "run/bad-kube-patch.sh",
    ]
    .iter()
    .map(|h| {
        run(&hook(h, module_scope(), &o), &o, &mut Vec::new())
            .unwrap_err()
            .to_string()
    })
    .collect();
    insta::assert_snapshot!("output_errors", messages.join("\n"));
}

#[test]
fn global_hooks_may_patch_global_and_enabled_keys_only() {
    let tmp = tempfile::tempdir().unwrap();
    let o = opts(tmp.path());
    let h = hook("run/global-enabled.sh", HookScope::Global, &o);
    let out = run(&h, &o, &mut Vec::new()).unwrap();
    assert_eq!(out.values_patch.operations.len(), 2);
    // The same patch from a module hook is rejected.
    let as_module = Hook {
        scope: module_scope(),
        ..h
    };
    let err = run(&as_module, &o, &mut Vec::new())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("unacceptable patch operation for path 'global' (only 'myModule' accepted)"),
        "{err}"
    );
}

#[test]
fn output_is_bounded() {
    let tmp = tempfile::tempdir().unwrap();
    let o = opts(tmp.path());
    let out = run(
        &hook("run/big-output.sh", module_scope(), &o),
        &o,
        &mut Vec::new(),
    )
    .unwrap();
    assert!(out.output_truncated);
    assert_eq!(out.stdout.len(), 4096);
}

// ---- binding context shapes --------------------------------------------------

const CONFIG: &str = r#"
configVersion: v1
onStartup: 1
beforeHelm: 1
schedule:
- name: every-minute
  crontab: "* * * * *"
- name: grouped-cron
  crontab: "@hourly"
  group: g
- name: with-snapshots
  crontab: "@daily"
  includeSnapshotsFrom: [pods]
kubernetes:
- name: pods
  kind: Pod
  jqFilter: .metadata.labels
- name: secrets
  kind: Secret
  keepFullObjectsInMemory: false
  jqFilter: .data.token
  group: g
- name: nodes
  kind: Node
  includeSnapshotsFrom: [pods]
"#;

fn pod(ns: &str, name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"namespace": ns, "name": name, "labels": {"app": name}}})
}

#[test]
fn binding_context_shapes() {
    let cfg = parse_config("shapes", HookKind::Module, CONFIG).unwrap();
    let pods = cfg.kubernetes_binding("pods").unwrap();
    let secrets = cfg.kubernetes_binding("secrets").unwrap();
    let nodes = cfg.kubernetes_binding("nodes").unwrap();
    let snap = |b, objs: Vec<Value>| -> Vec<SnapshotObject> {
        objs.into_iter()
            .map(|o| SnapshotObject::new(b, o, &JqRunner::default()).unwrap())
            .collect()
    };
    let mut all = Snapshots::new();
    all.insert(
        "pods".into(),
        snap(pods, vec![pod("b", "z"), pod("a", "y"), pod("a", "x")]),
    );
    all.insert(
        "secrets".into(),
        snap(secrets, vec![json!({"kind": "Secret", "metadata": {"namespace": "a", "name": "s"}, "data": {"token": "dG9r"}})]),
    );
    let node = json!({"kind": "Node", "metadata": {"name": "n1"}});
    let contexts = vec![
        BindingContext::on_startup(),
        BindingContext::lifecycle(BindingType::BeforeHelm, &cfg, &all),
        BindingContext::schedule(&cfg, 0, &all).unwrap(),
        BindingContext::schedule(&cfg, 1, &all).unwrap(),
        BindingContext::schedule(&cfg, 2, &all).unwrap(),
        BindingContext::kubernetes(
            pods,
            KubeEvent::Synchronization {
                objects: all["pods"].clone(),
            },
            &all,
        ),
        BindingContext::kubernetes(pods, KubeEvent::Synchronization { objects: vec![] }, &all),
        BindingContext::kubernetes(
            pods,
            KubeEvent::Event {
                watch_event: WatchEvent::Modified,
                object: Some(all["pods"][0].clone()),
            },
            &all,
        ),
        BindingContext::kubernetes(
            pods,
            KubeEvent::Event {
                watch_event: WatchEvent::Deleted,
                object: None,
            },
            &all,
        ),
        BindingContext::kubernetes(
            nodes,
            KubeEvent::Event {
                watch_event: WatchEvent::Added,
                object: Some(SnapshotObject::new(nodes, node, &JqRunner::default()).unwrap()),
            },
            &all,
        ),
        BindingContext::kubernetes(
            secrets,
            KubeEvent::Synchronization {
                objects: all["secrets"].clone(),
            },
            &all,
        ),
    ];
    let text = binding_context_json(&contexts, cfg.config_version);
    let pretty: Value = serde_json::from_str(&text).unwrap();
    insta::assert_snapshot!(
        "binding_contexts_v1",
        serde_json::to_string_pretty(&pretty).unwrap()
    );
    // Keys are written sorted, as Go's json.Marshal writes map keys.
    assert!(text.starts_with(r#"[{"binding":"onStartup"},{"binding":"beforeHelm","snapshots":{"nodes":[],"pods":[{"filterResult":{"app":"x"},"object":"#));

    let v0 = parse_config(
        "v0",
        HookKind::Module,
        "onKubernetesEvent:\n- kind: Pod\n  event: [update]",
    )
    .unwrap();
    let b = &v0.kubernetes[0];
    let ctx = [BindingContext::kubernetes(
        b,
        KubeEvent::Event {
            watch_event: WatchEvent::Modified,
            object: Some(SnapshotObject::new(b, pod("ns", "p"), &JqRunner::default()).unwrap()),
        },
        &Snapshots::new(),
    )];
    assert_eq!(
        binding_context_json(&ctx, v0.config_version),
        r#"[{"binding":"onKubernetesEvent","resourceEvent":"update","resourceKind":"Pod","resourceName":"p","resourceNamespace":"ns"}]"#
    );
}

#[test]
fn module_python_hooks_run_with_the_module_venv() {
    let tmp = tempfile::tempdir().unwrap();
    let o = opts(tmp.path());
    let h = hook("pymodule/hooks/hook.py", module_scope(), &o);
    let out = run(&h, &o, &mut Vec::new()).unwrap();
    assert_eq!(
        serde_json::to_value(&out.values_patch.operations).unwrap(),
        json!([{"op": "add", "path": "/myModule/venv", "value": "pymodule/hooks/venv"}])
    );
}

#[test]
fn snapshots_from_a_cluster_dump() {
    use antiopa::hooks::context::snapshots_from_objects;
    let cfg = parse_config(
        "dump",
        HookKind::Module,
        r#"
configVersion: v1
kubernetes:
- name: web-pods
  kind: pod
  labelSelector:
    matchExpressions: [{key: app, operator: In, values: [x, z]}]
  namespace:
    labelSelector:
      matchLabels: {team: a}
  jqFilter: .metadata.name
- name: running
  kind: Pod
  fieldSelector:
    matchExpressions: [{field: status.phase, operator: "!=", value: Pending}]
  keepFullObjectsInMemory: false
"#,
    )
    .unwrap();
    let mut pending = pod("a", "y");
    pending["status"] = json!({"phase": "Pending"});
    let objects = vec![
        pod("b", "z"),
        pod("a", "x"),
        pending,
        json!({"kind": "Namespace", "metadata": {"name": "a", "labels": {"team": "a"}}}),
        json!({"kind": "Namespace", "metadata": {"name": "b"}}),
    ];
    let snaps = snapshots_from_objects(&cfg, &objects, &JqRunner::default()).unwrap();
    let names = |b: &str| -> Vec<String> {
        snaps[b]
            .iter()
            .map(|s| format!("{}/{}", s.namespace, s.name))
            .collect()
    };
    assert_eq!(names("web-pods"), ["a/x"]);
    assert_eq!(
        snaps["web-pods"][0].filter_result.as_deref(),
        Some(&json!("x"))
    );
    assert_eq!(names("running"), ["a/x", "b/z"]);
    assert_eq!(snaps["running"][0].object, None);
}

#[test]
fn queued_contexts_combine_and_groups_compact() {
    use antiopa::hooks::context::combine_contexts;
    let cfg = parse_config("shapes", HookKind::Module, CONFIG).unwrap();
    let all = Snapshots::new();
    let grouped = || BindingContext::schedule(&cfg, 1, &all).unwrap();
    let plain = || BindingContext::schedule(&cfg, 0, &all).unwrap();
    let combined = combine_contexts(vec![
        vec![grouped()],
        vec![grouped(), plain()],
        vec![grouped()],
    ]);
    let bindings: Vec<&str> = combined.iter().map(|c| c.binding.as_str()).collect();
    assert_eq!(bindings, ["grouped-cron", "every-minute", "grouped-cron"]);
}

#[test]
fn a_hook_that_closes_stderr_still_finishes() {
    let tmp = tempfile::tempdir().unwrap();
    let o = opts(tmp.path());
    let out = run(
        &hook("run/quiet.sh", module_scope(), &o),
        &o,
        &mut Vec::new(),
    )
    .unwrap();
    assert_eq!(out.stdout, "done\n");
}

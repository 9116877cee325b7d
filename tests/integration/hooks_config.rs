//! Hook discovery and `hook --config` parsing, with the real shell hooks of
//! fixtures/hooks/: both layouts, configVersion v1 and v0, and invalid
//! configs whose errors must name the hook and the field.

use std::path::{Path, PathBuf};

use antiopa::hooks::config::{BindingType, ConfigVersion, WatchEvent, parse_config};
use antiopa::hooks::discovery::{
    LegacyStage, discover_global_hooks, discover_legacy_hooks, discover_module_hooks,
    has_legacy_module_layout,
};
use antiopa::hooks::{FoundHook, Hook, HookKind, HookScope, RunOptions};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/hooks")
}

fn names(found: &[FoundHook]) -> Vec<&str> {
    found.iter().map(|f| f.name.as_str()).collect()
}

fn module_scope() -> HookScope {
    HookScope::Module {
        module: "my-module".into(),
        values_key: "myModule".into(),
    }
}

fn load(rel: &str, scope: HookScope) -> Result<Hook, String> {
    let path = fixtures().join(rel);
    let found = FoundHook {
        name: rel.to_string(),
        path,
    };
    Hook::load(found, scope, &RunOptions::default()).map_err(|e| e.to_string())
}

#[test]
fn module_hooks_are_found_recursively_sorted_skipping_lib_venv_and_non_executables() {
    let discovered =
        discover_module_hooks(&fixtures().join("discovery/module/001-my-module")).unwrap();
    let found = discovered.hooks;
    assert_eq!(
        names(&found),
        ["hooks/a.sh", "hooks/b.sh", "hooks/sub/c.sh"]
    );
    // The non-executable file is skipped with shell-operator's reason;
    // lib/ and venv/ stay silent.
    assert_eq!(discovered.warnings.len(), 1, "{:?}", discovered.warnings);
    assert!(
        discovered.warnings[0].ends_with(
            "hooks/not-executable.sh: skipped: not executable (chmod +x is required to run this hook)"
        ),
        "{:?}",
        discovered.warnings
    );
}

#[test]
fn global_hooks_use_the_hooks_subdir_and_skip_hidden_docs_and_lib() {
    let found = discover_global_hooks(&fixtures().join("discovery/global"))
        .unwrap()
        .hooks;
    assert_eq!(
        names(&found),
        ["hooks/000-startup/hook.sh", "hooks/100-second.sh"]
    );
    // Without a hooks/ subdir the dir itself is searched.
    let found = discover_global_hooks(&fixtures().join("discovery/global/hooks"))
        .unwrap()
        .hooks;
    assert_eq!(names(&found), ["000-startup/hook.sh", "100-second.sh"]);
    assert!(
        discover_global_hooks(&fixtures().join("no-such-dir"))
            .unwrap()
            .hooks
            .is_empty()
    );
}

#[test]
fn legacy_layout_runs_hooks_alphabetically() {
    let module = fixtures().join("discovery/legacy/modules/foo");
    assert!(has_legacy_module_layout(&module));
    assert!(!has_legacy_module_layout(
        &fixtures().join("discovery/module/001-my-module")
    ));
    let before = discover_legacy_hooks(&module, LegacyStage::BeforeHelm)
        .unwrap()
        .hooks;
    assert_eq!(
        names(&before),
        ["hooks/before-helm/10-first", "hooks/before-helm/20-second"]
    );
    let after = discover_legacy_hooks(&module, LegacyStage::AfterHelm)
        .unwrap()
        .hooks;
    assert_eq!(names(&after), ["hooks/after-helm/only"]);
    let global = fixtures().join("discovery/legacy/global-hooks");
    let node = discover_legacy_hooks(&global, LegacyStage::OnKubeNodeChange)
        .unwrap()
        .hooks;
    assert_eq!(
        names(&node),
        ["on-kube-node-change/a-hook", "on-kube-node-change/b-hook"]
    );
    let hook = Hook::legacy(
        node[0].clone(),
        HookScope::Global,
        LegacyStage::OnKubeNodeChange,
    );
    assert_eq!(hook.config.order(BindingType::BeforeAll), Some(0.0));
    let nodes = hook
        .config
        .kubernetes_binding("on-kube-node-change")
        .unwrap();
    assert_eq!(nodes.kind, "Node");
    assert!(!nodes.execute_hook_on_synchronization);
    assert!(nodes.jq_filter.is_some());
}

#[test]
fn v1_config_with_every_binding() {
    let hook = load("config/v1-full.sh", module_scope()).unwrap();
    let c = &hook.config;
    assert_eq!(c.config_version, ConfigVersion::V1);
    assert_eq!(c.order(BindingType::OnStartup), Some(10.0));
    assert_eq!(c.order(BindingType::BeforeHelm), Some(5.0));
    assert_eq!(c.order(BindingType::AfterHelm), Some(7.0));
    assert_eq!(c.order(BindingType::BeforeDeleteHelm), Some(2.0));
    assert_eq!(c.order(BindingType::AfterDeleteHelm), Some(1.0));
    let s = c.settings.as_ref().unwrap();
    assert_eq!(s.execution_min_interval.as_secs(), 3);
    assert_eq!(s.execution_burst, 2);

    assert_eq!(c.schedules.len(), 2);
    assert_eq!(c.schedules[0].name, "every-5m");
    assert_eq!(c.schedules[0].queue, "cron");
    assert!(c.schedules[0].allow_failure);
    assert_eq!(c.schedules[0].include_snapshots_from, ["pods"]);
    assert_eq!(c.schedules[1].name, "schedule");
    assert_eq!(c.schedules[1].queue, "main");
    // A group pulls in the snapshots of all its kubernetes bindings.
    assert_eq!(c.schedules[1].include_snapshots_from, ["config"]);

    let pods = c.kubernetes_binding("pods").unwrap();
    assert_eq!(pods.api_version.as_deref(), Some("v1"));
    assert_eq!(
        pods.execute_hook_on_event,
        [WatchEvent::Added, WatchEvent::Deleted]
    );
    assert!(!pods.keep_full_objects_in_memory);
    assert!(pods.execute_hook_on_synchronization);
    assert!(pods.wait_for_synchronization);
    assert_eq!(pods.queue, "main");
    let filtered = pods
        .jq_filter
        .as_ref()
        .unwrap()
        .apply(&serde_json::json!({"metadata": {"name": "p"}, "status": {"phase": "Running"}}))
        .unwrap();
    assert_eq!(
        filtered,
        serde_json::json!({"name": "p", "phase": "Running"})
    );
    let ls = pods.label_selector.as_ref().unwrap();
    assert_eq!(ls.match_labels["app"], "web");
    assert_eq!(ls.match_expressions[0].values, ["frontend"]);
    let fs = pods.field_selector.as_ref().unwrap();
    assert_eq!(fs.match_expressions[0].operator, "Equals");
    let ns = pods
        .namespace
        .as_ref()
        .unwrap()
        .name_selector
        .as_ref()
        .unwrap();
    assert_eq!(ns.match_names, ["default", "kube-system"]);

    let cm = c.kubernetes_binding("config").unwrap();
    assert_eq!(
        cm.execute_hook_on_event,
        [WatchEvent::Added, WatchEvent::Modified, WatchEvent::Deleted]
    );
    assert!(!cm.execute_hook_on_synchronization);
    assert!(!cm.wait_for_synchronization, "allowed with a named queue");
    assert_eq!(cm.queue, "config-queue");
    assert!(cm.allow_failure);
    assert_eq!(cm.include_snapshots_from, ["config"]);
    insta::assert_snapshot!("v1_full_config", serde_json::to_string_pretty(&c).unwrap());
}

#[test]
fn v0_config_of_a_global_hook() {
    let hook = load("config/v0.sh", HookScope::Global).unwrap();
    let c = &hook.config;
    assert_eq!(c.config_version, ConfigVersion::V0);
    assert_eq!(c.order(BindingType::OnStartup), Some(1.0));
    assert_eq!(c.order(BindingType::BeforeAll), Some(20.0));
    assert_eq!(c.schedules[0].name, "nightly");
    let nodes = &c.kubernetes[0];
    assert_eq!(nodes.name, "nodes");
    assert_eq!(
        nodes.execute_hook_on_event,
        [WatchEvent::Added, WatchEvent::Deleted]
    );
    assert_eq!(
        nodes.namespace, None,
        "namespaceSelector.any means all namespaces"
    );
    assert_eq!(
        nodes.label_selector.as_ref().unwrap().match_labels["role"],
        "worker"
    );
}

#[test]
fn invalid_configs_name_the_hook_and_the_field() {
    let err = load("config/bad-field.sh", module_scope()).unwrap_err();
    insta::assert_snapshot!("bad_field", err);
    let err = load("config/bad-cron.sh", module_scope()).unwrap_err();
    insta::assert_snapshot!("bad_cron", err);
    let err = load("config/bad-jq.sh", module_scope()).unwrap_err();
    assert!(
        err.starts_with("hook 'config/bad-jq.sh': invalid config: invalid kubernetes config [0] jqFilter: expected"),
        "{err}"
    );
    let err = load("config/wrong-binding.sh", HookScope::Global).unwrap_err();
    insta::assert_snapshot!("global_hook_with_before_helm", err);
    // The same config is fine for a module hook.
    assert!(load("config/wrong-binding.sh", module_scope()).is_ok());
    let err = load("config/exit-1.sh", module_scope()).unwrap_err();
    insta::assert_snapshot!("config_exit_1", err);
    let err = load("config/not-yaml.sh", module_scope()).unwrap_err();
    assert!(err.starts_with("hook 'config/not-yaml.sh': invalid config: config unmarshal: error converting YAML to JSON: yaml: line 2"), "{err}");
}

fn parse(kind: HookKind, text: &str) -> String {
    match parse_config("h", kind, text) {
        Ok(c) => format!("ok: {}", serde_json::to_string(&c).unwrap()),
        Err(e) => e.to_string(),
    }
}

#[test]
fn shell_operator_validation_rules() {
    let m = HookKind::Module;
    insta::assert_snapshot!(
        "validation_rules",
        [
            parse(m, "configVersion: v2\nonStartup: 1"),
            parse(m, "configVersion: 1\nonStartup: 1"),
            parse(m, "configVersion: v1"),
            parse(m, "configVersion: v1\nonStartup: first"),
            parse(m, "configVersion: v1\nschedule: []"),
            parse(m, "configVersion: v1\nschedule:\n- name: x"),
            parse(m, "configVersion: v1\nschedule:\n- crontab: '* * * *'"),
            parse(m, "configVersion: v1\nschedule:\n- crontab: '@every 10s'\n  includeSnapshotsFrom: [nope]"),
            parse(m, "configVersion: v1\nkubernetes:\n- kind: Pod\n  includeSnapshotsFrom: [other]"),
            parse(m, "configVersion: v1\nkubernetes:\n- {kind: Pod, name: a}\n- {kind: Pod, name: a}\nschedule:\n- {crontab: '* * * * *', includeSnapshotsFrom: [a]}"),
            parse(m, "configVersion: v1\nkubernetes:\n- kind: Pod\n  apiVersion: a/b/c"),
            parse(m, "configVersion: v1\nkubernetes:\n- kind: Pod\n  labelSelector:\n    matchExpressions:\n    - {key: app, operator: In}"),
            parse(m, "configVersion: v1\nkubernetes:\n- kind: Pod\n  labelSelector: {}"),
            parse(m, "configVersion: v1\nkubernetes:\n- kind: Pod\n  nameSelector: {matchNames: [a]}\n  fieldSelector:\n    matchExpressions:\n    - {field: metadata.name, operator: '=', value: a}"),
            parse(m, "configVersion: v1\nkubernetes:\n- kind: Pod\n  fieldSelector:\n    matchExpressions:\n    - {field: a, operator: '<', value: a}"),
            parse(m, "configVersion: v1\nkubernetes:\n- kind: Pod\n  waitForSynchronization: false"),
            parse(m, "configVersion: v1\nkubernetes:\n- kind: Pod\n  executeHookOnEvent: []"),
            parse(m, "configVersion: v1\nsettings:\n  executionMinInterval: 5x"),
            parse(m, "configVersion: v1\nbeforeHelm: -1"),
            parse(m, "configVersion: v1\nbeforeAll: 1"),
            parse(HookKind::Global, "configVersion: v1\nafterAll: 3\nkubernetesValidating:\n- name: x"),
            parse(m, "{\"onStartup\": 5}"),
            parse(m, "onKubernetesEvent:\n- kind: Pod\n  event: [change]"),
            parse(m, "schedule:\n- name: no-crontab"),
            parse(m, ""),
        ]
        .join("\n")
    );
}

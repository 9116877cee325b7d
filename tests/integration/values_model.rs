//! The values model on a fixture tree (fixtures/values/tree) with one source
//! per layer of addon-operator's merge order: directory values.yaml, module
//! values.yaml, config-values.yaml defaults, ConfigMap sections,
//! values.yaml defaults, hook patches. Each fixture key is named after the
//! source expected to win.

use antiopa::values::config::parse_config_data;
use antiopa::values::sources::{read_global_sources, read_module_sources, static_enabled_modules};
use antiopa::values::{EffectiveValues, ValuesError, ValuesPatch, ValuesSources};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn tree() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/values/tree")
}

fn config_data() -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(tree().join("config.yaml")).expect("config fixture");
    let m = antiopa::yaml::from_yaml_map(&text, "map[string]string").expect("config yaml");
    m.into_iter()
        .map(|(k, v)| match v {
            antiopa::yaml::Yaml::Str(s) => (k, s),
            other => panic!("config key {k} is not a string: {other:?}"),
        })
        .collect()
}

fn patch(text: &str) -> ValuesPatch {
    ValuesPatch::from_json_stream(text).expect("patch")
}

/// The fixture tree's sources, with or without hook patches.
fn sources(with_hooks: bool) -> ValuesSources {
    let modules = tree().join("modules");
    let global = read_global_sources(&[&modules], Some(&tree().join("global-hooks")))
        .expect("global sources");
    let dir_values = global.dir_values.first().cloned();
    let mut src = ValuesSources {
        global,
        modules: vec![
            read_module_sources(
                "echo-server",
                &modules.join("001-echo-server"),
                dir_values.as_ref(),
            )
            .expect("echo"),
            read_module_sources(
                "l2-load-balancer",
                &modules.join("002-l2-load-balancer"),
                dir_values.as_ref(),
            )
            .expect("l2"),
        ],
        enabled_modules: vec!["l2-load-balancer".into(), "echo-server".into()],
    };
    src.apply_config(&parse_config_data(&config_data()).expect("config"));
    if with_hooks {
        src.global.patches.push((
            "discovery.sh".into(),
            patch(
                r#"{"op":"add","path":"/global/discovery/kubernetesVersion","value":"1.30"}
                   [{"op":"add","path":"/global/fromHook","value":"hook"}]"#,
            ),
        ));
        src.modules[0].patches.push((
            "echo-server/hooks/internal.sh".into(),
            patch(
                r#"[{"op":"add","path":"/echoServer/internal","value":{"token":"abc","fromHook":"x","counts":[{"name":"a"},{"name":"b","weight":5}]}},
                    {"op":"add","path":"/echoServer/internal/fromHook","value":"hook"},
                    {"op":"add","path":"/echoServer/overriddenByConfig","value":"hook"}]"#,
            ),
        ));
    }
    src
}

fn compute(with_hooks: bool) -> EffectiveValues {
    EffectiveValues::compute(&sources(with_hooks)).expect("effective values")
}

#[test]
fn module_values_follow_the_merge_order() {
    let ev = compute(true);
    let v = Value::Object(ev.module_values("echo-server", false).expect("module"));
    let expected = json!({
        // 1. directory values.yaml, `echoServer` section
        "fromDir": "dir",
        // 2. module values.yaml over it; maps merge, lists and scalars replace
        "overriddenByModule": "module",
        "fromModule": "module",
        "nested": {"fromDir": "dir", "overriddenByModule": "module"},
        "list": ["module"],
        "scalarOverMap": "module",
        // 3. config-values.yaml defaults fill only what is missing
        "replicas": 3,
        "mode": "safe",
        "https": {"mode": "CertManager", "certManager": {"clusterIssuerName": "letsencrypt"}},
        // 4. config values win over static values and config defaults
        "fromConfig": "config",
        "defaultOverriddenByConfig": "config",
        "nodeSelector": {"role": "web"},
        // 5. values.yaml defaults (the x-extend schema); `default: null` adds nothing
        "fromValuesSchema": "values-schema",
        // 6. hook patches win over everything, and come after the defaults:
        //    the `internal` map added by a hook gets no schema defaults.
        "overriddenByConfig": "hook",
        "internal": {"token": "abc", "fromHook": "hook", "counts": [{"name": "a"}, {"name": "b", "weight": 5}]},
    });
    assert_eq!(v, expected);
}

#[test]
fn global_values_follow_the_merge_order() {
    let ev = compute(true);
    let v = Value::Object(ev.global.values().clone());
    let expected = json!({
        "fromDir": "dir",
        "list": ["dir1", "dir2"],
        "overriddenByConfig": "config",
        "fromConfig": "config",
        "clusterDomain": "cluster.local",
        "discovery": {"nodeCount": 0, "kubernetesVersion": "1.30"},
        "fromHook": "hook",
        "enabledModules": ["echo-server", "l2-load-balancer"],
    });
    assert_eq!(v, expected);
}

#[test]
fn module_without_schemas_gets_its_section_only() {
    let ev = compute(false);
    let v = Value::Object(ev.module_values("l2-load-balancer", false).expect("l2"));
    assert_eq!(v, json!({"speaker": {"port": 7946}}));
}

#[test]
fn helm_gets_global_and_module_sections() {
    let ev = compute(true);
    let helm = ev
        .helm_values("echo-server")
        .expect("module")
        .expect("valid for helm");
    let keys: Vec<&String> = helm.keys().collect();
    assert_eq!(keys, ["echoServer", "global"]);
    assert_eq!(
        helm["global"]["enabledModules"],
        json!(["echo-server", "l2-load-balancer"])
    );
    assert_eq!(helm["echoServer"]["internal"]["token"], json!("abc"));
    let with_global = ev.module_values("echo-server", true).expect("module");
    assert_eq!(with_global, helm);
}

#[test]
fn x_required_for_helm_is_checked_only_for_helm() {
    // Without the hook the `internal` section is missing: the values are
    // valid (compute succeeds) but not for Helm.
    let ev = compute(false);
    let err = ev
        .helm_values("echo-server")
        .expect("module")
        .expect_err("internal is required for helm");
    insta::assert_snapshot!("required_for_helm", err.to_string());
}

#[test]
fn config_values_are_kept_apart() {
    let ev = compute(true);
    let cfg = Value::Object(
        ev.module_config_values("echo-server", false)
            .expect("module"),
    );
    assert_eq!(
        cfg,
        json!({"overriddenByConfig": "config", "fromConfig": "config",
               "defaultOverriddenByConfig": "config", "nodeSelector": {"role": "web"}})
    );
}

#[test]
fn static_enabled_flags_come_from_the_directory_values() {
    let src = sources(false);
    assert_eq!(
        static_enabled_modules(&src.global.dir_values).expect("flags"),
        ["echo-server"]
    );
}

#[test]
fn bad_config_value_names_module_field_and_rule() {
    let mut src = sources(false);
    let cfg = src.modules[0].config.as_mut().expect("config");
    cfg.insert("replicas".into(), json!("three"));
    cfg.insert("mode".into(), json!("turbo"));
    cfg.insert("unknownKey".into(), json!(1));
    cfg.insert("nested".into(), json!({"deep": true}));
    let err = EffectiveValues::compute(&src).expect_err("invalid config");
    assert!(matches!(err, ValuesError::Invalid { .. }));
    insta::assert_snapshot!("config_errors", err.to_string());
}

#[test]
fn forbidden_hook_patches_are_refused() {
    let cases = [
        (
            "replace",
            r#"{"op":"replace","path":"/echoServer/replicas","value":2}"#,
        ),
        (
            "other_module",
            r#"{"op":"add","path":"/l2LoadBalancer/x","value":1}"#,
        ),
        (
            "global_from_module",
            r#"{"op":"add","path":"/global/x","value":1}"#,
        ),
        (
            "enabled_from_module",
            r#"{"op":"add","path":"/echoServerEnabled","value":false}"#,
        ),
        (
            "missing_parent",
            r#"{"op":"add","path":"/echoServer/a/b","value":1}"#,
        ),
        (
            "remove_missing",
            r#"{"op":"remove","path":"/echoServer/nope"}"#,
        ),
        (
            "move",
            r#"{"op":"move","from":"/echoServer/mode","path":"/echoServer/m"}"#,
        ),
        (
            "schema",
            r#"{"op":"add","path":"/echoServer/replicas","value":"many"}"#,
        ),
    ];
    let mut out = String::new();
    for (name, text) in cases {
        let mut src = sources(false);
        src.modules[0]
            .patches
            .push(("hooks/h.sh".into(), patch(text)));
        let err = EffectiveValues::compute(&src).expect_err(name);
        out.push_str(&format!("--- {name}\n{err}\n"));
    }
    insta::assert_snapshot!("module_patch_errors", out);
}

#[test]
fn global_hook_patches_are_scoped() {
    let cases = [
        (
            "module_root",
            r#"{"op":"add","path":"/echoServer/x","value":1}"#,
        ),
        (
            "replace",
            r#"{"op":"replace","path":"/global/fromDir","value":"x"}"#,
        ),
        (
            "schema",
            r#"{"op":"add","path":"/global/unknown","value":1}"#,
        ),
    ];
    let mut out = String::new();
    for (name, text) in cases {
        let mut src = sources(false);
        src.global
            .patches
            .push(("global-hook.sh".into(), patch(text)));
        let err = EffectiveValues::compute(&src).expect_err(name);
        out.push_str(&format!("--- {name}\n{err}\n"));
    }
    insta::assert_snapshot!("global_patch_errors", out);
}

#[test]
fn global_hooks_may_patch_enabled_flags() {
    let src = sources(false);
    let mut ev = EffectiveValues::compute(&src).expect("values");
    let outcome = ev
        .global
        .apply_hook_patch(
            "enable.sh",
            &patch(r#"[{"op":"add","path":"/l2LoadBalancerEnabled","value":true},{"op":"add","path":"/global/fromHook","value":"h"}]"#),
        )
        .expect("patch");
    assert!(outcome.changed);
    assert_eq!(outcome.enabled.operations.len(), 1);
    assert_eq!(outcome.enabled.operations[0].path, "/l2LoadBalancerEnabled");
    // The flag is not a global value.
    assert!(!ev.global.values().contains_key("l2LoadBalancerEnabled"));
    assert_eq!(ev.global.values()["fromHook"], json!("h"));
}

#[test]
fn stored_removes_of_vanished_paths_are_ignored() {
    let src = sources(false);
    let mut ev = EffectiveValues::compute(&src).expect("values");
    let store = ev.modules.get_mut("echo-server").expect("module");
    // The hook removes a config value; later the config no longer has it:
    // the stored `remove` is skipped on recalculation, not an error.
    store
        .apply_hook_patch(
            "h",
            &patch(r#"{"op":"remove","path":"/echoServer/fromConfig"}"#),
        )
        .expect("remove existing");
    assert!(!store.values().contains_key("fromConfig"));
    let mut cfg = store.config_values();
    cfg.remove("fromConfig");
    store.set_config_values(cfg).expect("new config");
    assert!(!store.values().contains_key("fromConfig"));
    assert_eq!(store.values()["overriddenByConfig"], json!("config"));
}

#[test]
fn patches_are_compacted_per_path() {
    let src = sources(false);
    let mut ev = EffectiveValues::compute(&src).expect("values");
    let store = ev.modules.get_mut("echo-server").expect("module");
    store
        .apply_hook_patch(
            "a",
            &patch(r#"[{"op":"add","path":"/echoServer/internal","value":{"token":"1"}},{"op":"add","path":"/echoServer/internal/fromHook","value":"a"}]"#),
        )
        .expect("a");
    store
        .apply_hook_patch(
            "b",
            &patch(r#"{"op":"add","path":"/echoServer/internal","value":{"token":"2"}}"#),
        )
        .expect("b");
    let paths: Vec<&str> = store.patches().iter().map(|p| p.path.as_str()).collect();
    assert_eq!(paths, ["/echoServer/internal"]);
    assert_eq!(store.values()["internal"], json!({"token": "2"}));
}

#[test]
fn unchanged_values_store_no_patch() {
    let src = sources(false);
    let mut ev = EffectiveValues::compute(&src).expect("values");
    let store = ev.modules.get_mut("echo-server").expect("module");
    let outcome = store
        .apply_hook_patch(
            "h",
            &patch(r#"{"op":"add","path":"/echoServer/fromDir","value":"dir"}"#),
        )
        .expect("patch");
    assert!(!outcome.changed);
    assert!(store.patches().is_empty());
}

#[test]
fn config_patches_replace_the_config_layer() {
    let src = sources(false);
    let mut ev = EffectiveValues::compute(&src).expect("values");
    let store = ev.modules.get_mut("echo-server").expect("module");
    let outcome = store
        .apply_hook_config_patch(
            "h",
            &patch(r#"{"op":"add","path":"/echoServer/mode","value":"fast"}"#),
        )
        .expect("config patch");
    assert!(outcome.changed);
    let cfg = Value::Object(outcome.config_values.expect("new config"));
    assert_eq!(cfg["mode"], json!("fast"));
    assert_eq!(cfg["fromConfig"], json!("config"));
    assert_eq!(store.values()["mode"], json!("fast"));
    // Config patches are checked against the config schema.
    let err = store
        .apply_hook_config_patch(
            "h",
            &patch(r#"{"op":"add","path":"/echoServer/mode","value":"turbo"}"#),
        )
        .expect_err("enum");
    let err2 = ev
        .global
        .apply_hook_config_patch(
            "g",
            &patch(r#"{"op":"add","path":"/global/clusterDomain","value":5}"#),
        )
        .expect_err("type");
    insta::assert_snapshot!("config_patch_errors", format!("{err}\n{err2}"));
}

#[test]
fn enabled_scripts_see_the_modules_enabled_before_them() {
    let ev = compute(false);
    let v = ev
        .enabled_script_values("echo-server", &["a-module".to_string()])
        .expect("module");
    assert_eq!(v["global"]["enabledModules"], json!(["a-module"]));
    assert_eq!(v["global"]["fromDir"], json!("dir"));
    assert_eq!(v["echoServer"]["fromModule"], json!("module"));
}

#[test]
fn static_values_rules() {
    use antiopa::values::sources::{global_static_values, module_static_values};
    let obj = |v: Value| match v {
        Value::Object(m) => m,
        _ => antiopa::values::Values::new(),
    };
    // Global sections of several modules dirs merge in MODULES_DIR order; a
    // non-map section counts as empty.
    let dirs = [
        obj(json!({"global": {"a": 1, "m": {"x": 1}}})),
        obj(json!({"global": "not a map"})),
        obj(json!({"global": {"a": 2, "m": {"y": 2}}})),
    ];
    assert_eq!(
        Value::Object(global_static_values(&dirs).expect("global")),
        json!({"a": 2, "m": {"x": 1, "y": 2}})
    );
    // A module section that is not a map is an error.
    let bad = obj(json!({"echoServer": null}));
    let err = module_static_values("echo-server", None, Some(&bad)).expect_err("null section");
    assert_eq!(
        err.to_string(),
        "new basic module: expect map[string]interface{} in module values"
    );
    // Enabled flags: bools, or strings strconv.ParseBool accepts; other types fail.
    let flags = [obj(
        json!({"aEnabled": "T", "bEnabled": "1", "cEnabled": false, "dEnabled": "yes"}),
    )];
    assert_eq!(static_enabled_modules(&flags).expect("flags"), ["a", "b"]);
    let err = static_enabled_modules(&[obj(json!({"aEnabled": 1}))]).expect_err("number");
    assert_eq!(
        err.to_string(),
        "unknown type for Enabled flag: aEnabled: float64"
    );
}

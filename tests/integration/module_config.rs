//! `--config FILE`: addon-operator's ConfigMap keys and the original
//! antiopa's (`values`, `<module>-values`, `disable-modules`), and the
//! enabled-flag opinions of global hooks' patches.

use antiopa::module::OfflineConfig;
use antiopa::module::config::glob_matches;
use antiopa::module::enabled::dynamic_enabled;
use antiopa::values::PatchOp;
use serde_json::json;

#[test]
fn both_generations_of_keys_are_read() {
    let cfg = OfflineConfig::parse(
        r#"
apiVersion: v1
kind: ConfigMap
metadata: {name: antiopa}
data:
  global: |
    domain: example.com
  l2LoadBalancer: |
    replicas: 2
  l2LoadBalancerEnabled: "true"
  values: |
    a: 1
  kube-dashboard-values: |
    b: 2
  disable-modules: "test*, kube-dash?oard ,"
"#,
    )
    .unwrap();
    assert_eq!(
        cfg.kube.global.as_ref().map(|g| json!(g)),
        Some(json!({"domain": "example.com"}))
    );
    let lb = &cfg.kube.modules["l2-load-balancer"];
    assert_eq!(lb.enabled, Some(true));
    assert_eq!(
        lb.values.as_ref().map(|v| json!(v)),
        Some(json!({"replicas": 2}))
    );
    let (all, own) = cfg.legacy_values("kube-dashboard").unwrap();
    assert_eq!(all.map(|v| json!(v)), Some(json!({"a": 1})));
    assert_eq!(own.map(|v| json!(v)), Some(json!({"b": 2})));
    assert_eq!(cfg.disable_modules, ["test*", "kube-dash?oard"]);
    assert_eq!(cfg.disabled_by("test-one"), Some("test*"));
    assert_eq!(cfg.disabled_by("kube-dashboard"), Some("kube-dash?oard"));
    assert_eq!(cfg.disabled_by("prometheus"), None);
}

#[test]
fn config_errors_are_addon_operators() {
    let err = OfflineConfig::parse("data:\n  Bad_Key: x\n").unwrap_err();
    assert!(err.contains("Bad_Key"), "{err}");
    let err = OfflineConfig::parse("kind: Secret\ndata: {}\n").unwrap_err();
    assert_eq!(err, "expected a ConfigMap, got kind 'Secret'");
    let err = OfflineConfig::parse("data:\n  alpha: 3\n").unwrap_err();
    assert_eq!(err, "data key 'alpha' must be a string");
}

#[test]
fn globs_match_whole_names() {
    assert!(glob_matches("test*", "test"));
    assert!(glob_matches("*-exporter", "node-exporter"));
    assert!(!glob_matches("test", "test-2"));
    assert!(glob_matches("a.b", "a.b"));
    assert!(!glob_matches("a.b", "axb"));
}

#[test]
fn last_global_hook_opinion_wins_and_remove_withdraws_it() {
    let ops = vec![
        PatchOp::add("/fooEnabled", json!(true)),
        PatchOp::add("/barEnabled", json!(true)),
        PatchOp::add("/fooEnabled", json!(false)),
        PatchOp::remove("/barEnabled"),
    ];
    let d = dynamic_enabled(&ops);
    assert_eq!(d["fooEnabled"], Some(false));
    assert_eq!(d["barEnabled"], None);
}

//! ConfigMap sections (addon-operator's `parseConfigMapData`) and the
//! original antiopa layout's flat values.

use antiopa::values::legacy::{LegacySources, legacy_config, legacy_values};
use antiopa::values::{Values, parse_config_data};
use serde_json::{Value, json};
use std::collections::BTreeMap;

fn data(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn obj(v: Value) -> Values {
    match v {
        Value::Object(m) => m,
        _ => Values::new(),
    }
}

#[test]
fn configmap_keys_are_sorted_into_sections() {
    let cfg = parse_config_data(&data(&[
        ("global", "a: 1\n"),
        ("echoServer", "replicas: 2\n"),
        ("echoServerEnabled", "false"),
        ("l2LoadBalancerEnabled", "true"),
        ("l2LoadBalancerMaintenance", "NoResourceReconciliation"),
        ("listModule", "- a\n"),
    ]))
    .expect("config");
    assert_eq!(cfg.global, Some(obj(json!({"a": 1}))));
    let echo = &cfg.modules["echo-server"];
    assert_eq!(echo.values, Some(obj(json!({"replicas": 2}))));
    assert_eq!(echo.enabled, Some(false));
    let l2 = &cfg.modules["l2-load-balancer"];
    assert_eq!(l2.values, None);
    assert_eq!(l2.enabled, Some(true));
    assert!(l2.no_resource_reconciliation);
    // A list section is accepted but gives no values.
    assert_eq!(cfg.modules["list-module"].values, None);
}

#[test]
fn configmap_errors_are_addon_operators() {
    let cases: &[&[(&str, &str)]] = &[
        &[("echoServerEnabled", "yes")],
        &[("echoServerMaintenance", "Sometimes")],
        &[("echo-server", "a: 1")],
        &[("echoServer", "just a string")],
        &[("echoServer", "a: [1")],
    ];
    let mut out = String::new();
    for c in cases {
        let err = parse_config_data(&data(c)).expect_err("bad config");
        out.push_str(&format!("{err}\n"));
    }
    insta::assert_snapshot!("configmap_errors", out);
}

#[test]
fn legacy_layout_merges_six_sources_in_order() {
    let src = LegacySources {
        common: Some(obj(
            json!({"a": "common", "b": "common", "c": "common", "d": "common", "e": "common", "f": "common", "m": {"common": 1}}),
        )),
        global_hook_returns: vec![
            obj(json!({"b": "hook1", "c": "hook1", "m": {"hook1": 1}})),
            obj(json!({"c": "hook2", "d": "hook2", "m": {"hook2": 1}})),
        ],
        module: Some(obj(json!({"d": "module", "e": "module", "list": [1, 2]}))),
        initial_values: Some(obj(
            json!({"e": "initial", "f": "initial", "password": "generated", "list": [3]}),
        )),
        config_values: Some(obj(json!({"f": "config", "g": "config"}))),
        config_module_values: Some(obj(json!({"g": "module-config", "password": "chosen"}))),
    };
    let v = legacy_values(&src).expect("values");
    assert_eq!(
        Value::Object(v),
        json!({
            "a": "common", "b": "hook1", "c": "hook2", "d": "module", "e": "initial",
            "f": "config", "g": "module-config", "password": "chosen", "list": [3],
            "m": {"common": 1, "hook1": 1, "hook2": 1},
        })
    );
}

#[test]
fn legacy_config_keys() {
    let (all, module) = legacy_config(
        &data(&[
            ("values", "x: 1\n"),
            ("kube-dns-values", "yy: 2\n"),
            ("other-values", "z: 3\n"),
        ]),
        "kube-dns",
    )
    .expect("config");
    assert_eq!(all, Some(obj(json!({"x": 1}))));
    assert_eq!(module, Some(obj(json!({"yy": 2}))));
}

//! The bodies of antiopa's fuzz targets, one `pub fn NAME(data: &[u8])`
//! each. The libFuzzer binaries in `fuzz_targets/` call them, and so does
//! `tests/integration/fuzz_corpus.rs`, which replays every kept input of
//! `corpus/NAME/` under `cargo test`. A target must never panic, overflow
//! its stack, hang or allocate without bound, whatever the bytes: errors
//! are the expected outcome for most inputs and are dropped.
#![allow(dead_code)]

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use antiopa::engine::{Env, FuncMap, Limits, Templates, Value};

/// Bytes as text, as the loaders see a file: invalid UTF-8 replaced.
fn text(data: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(data)
}

/// The limits the `template` target renders under: an operator's, smaller,
/// so that blow-ups end as errors long before libFuzzer's own time and
/// memory limits.
pub const TEMPLATE_LIMITS: Limits = Limits {
    max_output: Some(1 << 20),
    max_depth: Some(40),
    timeout: Some(Duration::from_secs(2)),
};

fn helm_funcs() -> Arc<FuncMap> {
    static FUNCS: OnceLock<FuncMap> = OnceLock::new();
    Arc::new(
        FUNCS
            .get_or_init(antiopa::chart::helmfuncs::helm_func_map)
            .clone(),
    )
}

/// Top-level data like Helm's, with values of every YAML kind.
fn template_data() -> Value {
    let yaml = r#"
Values:
  name: web
  replicas: 3
  ratio: 0.5
  enabled: true
  none: null
  image: {repository: nginx, tag: "1.25"}
  list: [a, 1, {k: v}, [x]]
  labels: {app: web, tier: "front"}
Release: {Name: demo, Namespace: apps, Revision: 1, IsInstall: true, Service: Helm}
Chart: {Name: fuzz, Version: 0.1.0}
Template: {Name: fuzz/templates/main.yaml, BasePath: fuzz/templates}
"#;
    let Ok(antiopa::yaml::Yaml::Map(m)) = antiopa::yaml::load(yaml, antiopa::yaml::Numbers::Json)
    else {
        unreachable!("fixed data parses")
    };
    antiopa::chart::convert::values_to_value(&m)
}

/// Go template text (a NUL byte separates a second file, `_helpers.tpl`,
/// parsed first as Helm parses helpers) parsed with Helm's functions and
/// executed over fixed data, under [`TEMPLATE_LIMITS`].
pub fn template(data: &[u8]) {
    let text = text(data);
    let (main, helpers) = text.split_once('\0').unwrap_or((&text, ""));
    let mut t = Templates::new(helm_funcs());
    let _ = t.parse("fuzz/templates/_helpers.tpl", helpers);
    if t.parse("fuzz/templates/main.yaml", main).is_err() {
        return;
    }
    let now = chrono::DateTime::parse_from_rfc3339("2024-01-02T03:04:05Z").expect("fixed time");
    let mut env = Env::reproducible(1, now);
    env.set_limits(TEMPLATE_LIMITS);
    env.begin_render();
    let _ = t.execute("fuzz/templates/main.yaml", &template_data(), &env);
}

/// The Helm-exact YAML loader in both number modes, the bytes check, and
/// the emitter: what it writes must load again.
pub fn yaml(data: &[u8]) {
    use antiopa::yaml::{Numbers, load};
    let _ = antiopa::yaml::from_yaml_map_bytes(data, "map[string]interface {}");
    let text = text(data);
    for numbers in [Numbers::Json, Numbers::Yaml] {
        if let Ok(v) = load(&text, numbers) {
            let out = antiopa::yaml::to_yaml(&v);
            if let Err(e) = load(&out, numbers) {
                panic!("emitted YAML does not load again: {e:?}\n{out}");
            }
            let _ = antiopa::yaml::to_json(&v);
        }
    }
    let _ = antiopa::yaml::from_yaml_array(&text);
}

/// `--set`, `--set-string`, `--set-json` and `--set-literal` strings.
pub fn set(data: &[u8]) {
    use antiopa::chart::strvals::{parse_into, parse_into_string, parse_json, parse_literal_into};
    let text = text(data);
    let _ = parse_into(&text, &mut Default::default());
    let _ = parse_into_string(&text, &mut Default::default());
    let _ = parse_json(&text, &mut Default::default());
    let _ = parse_literal_into(&text, &mut Default::default());
}

/// A hook's `--config` output (YAML or JSON), for a global and a module
/// hook.
pub fn hook_config(data: &[u8]) {
    use antiopa::hooks::HookKind;
    use antiopa::hooks::config::parse_config;
    let text = text(data);
    let _ = parse_config("fuzz-hook", HookKind::Global, &text);
    let _ = parse_config("fuzz-hook", HookKind::Module, &text);
}

/// What a hook writes back: a values JSON patch (parsed, checked and
/// applied to fixed values), metrics, and kubernetes operations (jq
/// filters compiled, never run).
pub fn hook_output(data: &[u8]) {
    use antiopa::values::{ApplyMode, PatchScope, ValuesPatch, apply_patch, validate_hook_patch};
    let text = text(data);
    if let Ok(patch) = ValuesPatch::from_json_stream(&text) {
        let values = serde_json::json!({
            "global": {"a": 1, "list": [1, 2, {"x": null}]},
            "fuzzModule": {"replicas": 2, "labels": {"app": "web"}},
        });
        let serde_json::Value::Object(values) = values else {
            unreachable!("an object")
        };
        for scope in [PatchScope::Global, PatchScope::Module("fuzzModule".into())] {
            if validate_hook_patch(&patch, &scope).is_ok() {
                for mode in [ApplyMode::Strict, ApplyMode::IgnoreNonExistentPaths] {
                    let _ = apply_patch(&values, &patch, mode);
                }
            }
        }
        let _ = patch.to_json();
    }
    let _ = antiopa::hooks::output::parse_metrics(&text, "fuzz-hook");
    let _ = antiopa::hooks::output::parse_kube_operations(&text);
}

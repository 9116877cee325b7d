//! Module trees under fixtures/modules/: discovery order, enabled state from
//! every source, values after hooks, and `antiopa render` as a user runs it.

use std::path::{Path, PathBuf};
use std::process::Command;

use antiopa::hooks::RunOptions;
use antiopa::module::discovery::parse_dir_name;
use antiopa::module::{ModulesSettings, OfflineConfig, Session};
use serde_json::json;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/modules")
        .join(name)
}

fn settings(tree: &str) -> ModulesSettings {
    ModulesSettings {
        modules_dirs: vec![fixture(tree).join("modules")],
        global_hooks_dir: Some(fixture(tree).join("global-hooks")),
        unnumbered_order: 1,
    }
}

fn run_opts(tmp: &Path) -> RunOptions {
    RunOptions {
        tmp_dir: tmp.to_path_buf(),
        ..RunOptions::default()
    }
}

fn session(tree: &str, with_config: bool, tmp: &Path) -> Session {
    let cfg = if with_config {
        OfflineConfig::read(&fixture(tree).join("config.yaml")).expect("config")
    } else {
        OfflineConfig::default()
    };
    Session::load(&settings(tree), cfg, run_opts(tmp)).expect("load")
}

fn ignore(_: &str) {}

#[test]
fn directory_names_give_order_and_name() {
    assert_eq!(
        parse_dir_name("010-alpha", 1).unwrap(),
        (10, "alpha".into())
    );
    assert_eq!(parse_dir_name("gamma", 7).unwrap(), (7, "gamma".into()));
    assert_eq!(
        parse_dir_name("5-l2-load-balancer", 1).unwrap(),
        (5, "l2-load-balancer".into())
    );
    assert!(parse_dir_name("99999999999-too-big", 1).is_err());
}

#[test]
fn modules_sort_by_order_then_name() {
    let tmp = tempfile::tempdir().unwrap();
    let s = session("basic", false, tmp.path());
    let got: Vec<(u32, &str, bool, bool)> = s
        .tree
        .modules
        .iter()
        .map(|m| (m.order, m.name.as_str(), m.has_chart_yaml, m.legacy))
        .collect();
    assert_eq!(
        got,
        vec![
            (1, "gamma", false, false),
            (10, "alpha", true, false),
            (20, "beta", false, false),
            (30, "old-style", true, true),
        ]
    );
    let mut other = settings("basic");
    other.unnumbered_order = 50;
    let tree = antiopa::module::discover(&other).unwrap();
    assert_eq!(tree.modules.last().unwrap().name, "gamma");
}

#[test]
fn bad_module_name_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(tmp.path().join("010-Bad_Name")).unwrap();
    let s = ModulesSettings {
        modules_dirs: vec![tmp.path().to_path_buf()],
        global_hooks_dir: None,
        unnumbered_order: 1,
    };
    let err = antiopa::module::discover(&s).unwrap_err().to_string();
    assert!(err.contains("010-Bad_Name"), "{err}");
}

#[test]
fn enabled_state_comes_from_every_source() {
    let tmp = tempfile::tempdir().unwrap();
    let mut s = session("basic", true, tmp.path());
    s.run_global_hooks(&mut ignore).unwrap();
    s.compute_enabled(&mut ignore).unwrap();
    let st = |n: &str| s.enabled.get(n).cloned().unwrap();
    assert!(st("alpha").enabled);
    assert_eq!(st("alpha").reason, "values.yaml: alphaEnabled: true");
    // values.yaml says false, the global hook patch says true.
    assert!(st("gamma").enabled);
    assert_eq!(st("gamma").reason, "global hook patch: gammaEnabled: true");
    // The enabled script reads the config values and says no.
    assert!(!st("beta").enabled);
    assert_eq!(st("beta").reason, "enabled script: false: config says skip");
    assert!(st("old-style").enabled);
    let g = s.values.global.values();
    assert_eq!(
        g.get("enabledModules"),
        Some(&json!(["alpha", "gamma", "old-style"]))
    );
}

#[test]
fn enabled_script_and_config_flags_without_config_file() {
    let tmp = tempfile::tempdir().unwrap();
    let mut s = session("basic", false, tmp.path());
    s.compute_enabled(&mut ignore).unwrap();
    assert!(s.enabled["beta"].enabled);
    assert_eq!(s.enabled["beta"].reason, "enabled script: true");
    assert!(!s.enabled["gamma"].enabled);

    let cfg = OfflineConfig::parse(
        "kind: ConfigMap\ndata:\n  alphaEnabled: \"false\"\n  disable-modules: \"old-*, x\"\n",
    )
    .unwrap();
    let mut s = Session::load(&settings("basic"), cfg, run_opts(tmp.path())).unwrap();
    s.compute_enabled(&mut ignore).unwrap();
    assert!(!s.enabled["alpha"].enabled);
    assert_eq!(s.enabled["alpha"].reason, "config: alphaEnabled: \"false\"");
    assert!(!s.enabled["old-style"].enabled);
    assert_eq!(
        s.enabled["old-style"].reason,
        "config: disable-modules: 'old-*'"
    );
}

#[test]
fn config_enabled_flag_must_be_true_or_false() {
    let err = OfflineConfig::parse("data:\n  alphaEnabled: \"yes\"\n").unwrap_err();
    assert_eq!(
        err,
        "bad yaml at key 'alpha': module enabled key 'alphaEnabled' should have a boolean value, got 'yes'"
    );
}

#[test]
fn module_values_after_hooks_in_merge_order() {
    let tmp = tempfile::tempdir().unwrap();
    let mut s = session("basic", true, tmp.path());
    s.run_global_hooks(&mut ignore).unwrap();
    s.compute_enabled(&mut ignore).unwrap();
    s.run_module_hooks("alpha", &mut ignore).unwrap();
    let v = s.module_values("alpha", false, &mut ignore).unwrap();
    assert_eq!(
        serde_json::Value::Object(v),
        json!({
            "fromDirValues": "yes-dir",
            "fromHook": "hook-was-here",
            "image": "nginx",
            "internal": {"note": "from-schema"},
            "replicas": 3
        })
    );
    let g = s.module_values("alpha", true, &mut ignore).unwrap();
    assert_eq!(g["global"]["discovered"], json!("by-global-hook"));
    assert_eq!(g["global"]["clusterName"], json!("test-cluster"));
}

#[test]
fn original_layout_module_gets_flat_values() {
    let tmp = tempfile::tempdir().unwrap();
    let mut s = session("basic", true, tmp.path());
    s.compute_enabled(&mut ignore).unwrap();
    s.run_module_hooks("old-style", &mut ignore).unwrap();
    let v = s.helm_values("old-style", &mut ignore).unwrap();
    assert_eq!(v["message"], json!("from-config"));
    assert_eq!(v["level"], json!("config-values"));
    assert_eq!(v["fromHook"], json!("before-helm"));
    // modules/values.yaml is the first layer of every legacy module.
    assert_eq!(v["global"]["clusterName"], json!("test-cluster"));
}

fn antiopa(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_antiopa"))
        .args(args)
        .env_remove("MODULES_DIR")
        .env_remove("GLOBAL_HOOKS_DIR")
        .output()
        .expect("run antiopa")
}

#[test]
fn render_writes_each_module_as_helm_template_would() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let base = fixture("basic");
    let r = antiopa(&[
        "render",
        "--modules-dir",
        base.join("modules").to_str().unwrap(),
        "--global-hooks-dir",
        base.join("global-hooks").to_str().unwrap(),
        "--config",
        base.join("config.yaml").to_str().unwrap(),
        "-n",
        "ns1",
        "--output-dir",
        out.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&r.stderr);
    assert!(r.status.success(), "{stderr}");
    assert!(
        stderr.contains("hooks/set-value.sh: setting fromHook"),
        "{stderr}"
    );
    let mut files: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(files, ["alpha.yaml", "gamma.yaml", "old-style.yaml"]);
    for f in &files {
        let got = std::fs::read_to_string(out.join(f)).unwrap();
        let want = std::fs::read_to_string(base.join("expected").join(f)).unwrap();
        assert_eq!(got, want, "{f}");
    }
}

#[test]
fn hook_failures_name_hook_and_binding_and_spare_other_modules() {
    let base = fixture("failing");
    let r = antiopa(&[
        "render",
        "--modules-dir",
        base.join("modules").to_str().unwrap(),
        "--global-hooks-dir",
        base.join("no-global-hooks").to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&r.stdout);
    let stderr = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(1));
    assert!(
        stderr.contains("Error: module 'broken': hook 'hooks/fail.sh' failed (binding beforeHelm): exit status 3"),
        "{stderr}"
    );
    assert!(
        stderr.contains("hooks/fail.sh: something went wrong"),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "Error: module 'bad-patch': hook 'hooks/patch-other.sh' (binding onStartup): values patch rejected"
        ),
        "{stderr}"
    );
    assert_eq!(
        stdout,
        "# module: fine\n---\n# Source: fine/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fine\n  namespace: default\n"
    );
}

#[test]
fn module_list_shows_order_state_and_reason() {
    let base = fixture("basic");
    let r = antiopa(&[
        "module",
        "list",
        "--modules-dir",
        base.join("modules").to_str().unwrap(),
        "--global-hooks-dir",
        base.join("global-hooks").to_str().unwrap(),
        "--config",
        base.join("config.yaml").to_str().unwrap(),
    ]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let text = String::from_utf8_lossy(&r.stdout);
    let lines: Vec<Vec<&str>> = text
        .lines()
        .map(|l| l.split_whitespace().take(3).collect())
        .collect();
    assert_eq!(
        lines,
        vec![
            vec!["ORDER", "NAME", "STATE"],
            vec!["1", "gamma", "enabled"],
            vec!["10", "alpha", "enabled"],
            vec!["20", "beta", "disabled"],
            vec!["30", "old-style", "enabled"],
        ]
    );
    assert!(text.contains("enabled script: false: config says skip"));
}

#[test]
fn module_values_prints_json_with_global() {
    let base = fixture("basic");
    let r = antiopa(&[
        "module",
        "values",
        "alpha",
        "-g",
        "-o",
        "json",
        "--modules-dir",
        base.join("modules").to_str().unwrap(),
        "--global-hooks-dir",
        base.join("global-hooks").to_str().unwrap(),
    ]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let v: serde_json::Value = serde_json::from_slice(&r.stdout).unwrap();
    assert_eq!(v["alpha"]["replicas"], json!(1));
    assert_eq!(v["alpha"]["fromHook"], json!("hook-was-here"));
    assert_eq!(
        v["global"]["enabledModules"],
        json!(["alpha", "beta", "gamma", "old-style"])
    );
}

#[test]
fn hook_config_prints_parsed_bindings() {
    let base = fixture("basic");
    let r = antiopa(&[
        "hook",
        "config",
        base.join("modules/010-alpha/hooks/set-value.sh")
            .to_str()
            .unwrap(),
    ]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let v: serde_json::Value = serde_json::from_slice(&r.stdout).unwrap();
    assert_eq!(v["configVersion"], json!("v1"));
    assert_eq!(v["orders"]["beforeHelm"], json!(10.0));
}

#[test]
fn snapshots_file_feeds_kubernetes_bindings() {
    let base = fixture("snapshots");
    let modules = base.join("modules");
    let recorded = base.join("recorded.yaml");
    let render = |extra: &[&str]| {
        let mut args = vec![
            "render",
            "--modules-dir",
            modules.to_str().unwrap(),
            "--global-hooks-dir",
            "/nonexistent-global-hooks",
        ];
        args.extend_from_slice(extra);
        let r = antiopa(&args);
        assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
        String::from_utf8_lossy(&r.stdout).into_owned()
    };
    let with = render(&["--snapshots", recorded.to_str().unwrap()]);
    assert!(
        with.contains(r#"{\"filterResult\":{\"k\":\"v\"},\"object\":{\"apiVersion\":\"v1\""#),
        "{with}"
    );
    let without = render(&[]);
    assert!(
        without.contains(r#"[{\"binding\":\"beforeHelm\",\"snapshots\":{\"configmaps\":[]}}]"#),
        "{without}"
    );
}

/// `antiopa render` deploys what the operator deploys: a module that
/// requires (`module.yaml`) a disabled module waits and is not rendered
/// (a warning says why; asked for by name, it is an error), one whose
/// requirement fails fails with it, and the others still render.
#[test]
fn render_skips_modules_whose_requirement_is_disabled_or_failed() {
    let tmp = tempfile::tempdir().unwrap();
    let modules = tmp.path().join("modules");
    // (dir, name, requirements, template)
    let tree = [
        (
            "010-db",
            "db",
            "{}",
            "kind: ConfigMap\napiVersion: v1\nmetadata:\n  name: db\n",
        ),
        (
            "020-app",
            "app",
            "{db: \">= 0.0.0\"}",
            "kind: ConfigMap\napiVersion: v1\nmetadata:\n  name: app\n",
        ),
        (
            "030-broken",
            "broken",
            "{}",
            "{{ fail \"broken on purpose\" }}\n",
        ),
        (
            "040-user",
            "user",
            "{broken: \">= 0.0.0\"}",
            "kind: ConfigMap\napiVersion: v1\nmetadata:\n  name: user\n",
        ),
        (
            "050-free",
            "free",
            "{}",
            "kind: ConfigMap\napiVersion: v1\nmetadata:\n  name: free\n",
        ),
    ];
    for (d, name, req, tpl) in tree {
        let m = modules.join(d);
        std::fs::create_dir_all(m.join("templates")).unwrap();
        std::fs::write(
            m.join("Chart.yaml"),
            format!("apiVersion: v2\nname: {name}\nversion: 0.1.0\n"),
        )
        .unwrap();
        std::fs::write(
            m.join("module.yaml"),
            format!("name: {name}\nrequirements:\n  modules: {req}\n"),
        )
        .unwrap();
        std::fs::write(m.join("templates/cm.yaml"), tpl).unwrap();
    }
    std::fs::write(
        modules.join("values.yaml"),
        "dbEnabled: false\nappEnabled: true\nbrokenEnabled: true\nuserEnabled: true\nfreeEnabled: true\n",
    )
    .unwrap();
    let render = |extra: &[&str]| {
        let mut args = vec![
            "render",
            "--modules-dir",
            modules.to_str().unwrap(),
            "-n",
            "ns",
        ];
        args.extend_from_slice(extra);
        antiopa(&args)
    };
    let r = render(&[]);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&r.stdout),
        String::from_utf8_lossy(&r.stderr),
    );
    assert_eq!(r.status.code(), Some(1), "broken fails: {stderr}");
    assert!(
        stderr.contains("module 'app': waiting for 'db' (disabled): not rendered"),
        "{stderr}"
    );
    assert!(stderr.contains("broken on purpose"), "{stderr}");
    assert!(
        stderr.contains("waiting for 'broken' (not ready)"),
        "user fails with broken: {stderr}"
    );
    assert!(stdout.contains("name: free"), "{stdout}");
    for absent in ["name: app", "name: user", "name: db"] {
        assert!(!stdout.contains(absent), "{absent} rendered:\n{stdout}");
    }
    let r = render(&["app"]);
    assert_eq!(r.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&r.stderr);
    assert!(
        stderr.contains("module is waiting for 'db' (disabled)"),
        "{stderr}"
    );
}

//! The structured render API (`chart::render_chart`) as a library caller
//! sees it: object heads in install order, hooks with their weights and
//! delete policies, CRDs, notes and Helm's warnings as data, nothing
//! printed; and module rendering, which hands values and a missing
//! `Chart.yaml` to it in memory, writing no file.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use antiopa::chart::manifest::HookEvent;
use antiopa::chart::strvals::parse as parse_set;
use antiopa::chart::{LoadedChart, RenderOptions, Rendered, render_chart};

use crate::common::run_with_timeout;

const CHILD: &str = "ANTIOPA_RENDER_API_CHILD";

fn write(dir: &Path, rel: &str, text: &str) {
    let p = dir.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// A deprecated chart with kinds out of install order, a namespaced object,
/// hooks with weights and policies, a test hook, an unknown hook, a CRD
/// and NOTES.
fn write_chart(dir: &Path) {
    write(
        dir,
        "Chart.yaml",
        "apiVersion: v2\nname: shop\nversion: 1.2.3\ndeprecated: true\n",
    );
    write(
        dir,
        "values.yaml",
        "db:\n  host: pg\nport: 5432\nreplicas: 1\n",
    );
    write(
        dir,
        "templates/deploy.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}-web\nspec:\n  replicas: {{ .Values.replicas }}\n",
    );
    write(
        dir,
        "templates/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: other\ndata:\n  db: {{ .Values.db | toJson | quote }}\n---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: other\n",
    );
    write(
        dir,
        "templates/hooks.yaml",
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: migrate\n  annotations:\n    helm.sh/hook: pre-install, Pre-Upgrade\n    helm.sh/hook-weight: \"-5\"\n    helm.sh/hook-delete-policy: before-hook-creation, Hook-Succeeded\n---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: smoke\n  annotations:\n    helm.sh/hook: test\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: odd\n  annotations:\n    helm.sh/hook: sometime\n",
    );
    write(
        dir,
        "templates/NOTES.txt",
        "Installed {{ .Release.Name }} revision {{ .Release.Revision }}.\n",
    );
    write(
        dir,
        "crds/widgets.yaml",
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\n",
    );
}

fn render(dir: &Path) -> Rendered {
    let loaded = LoadedChart::load(dir, &mut |w| panic!("loader warning: {w}")).unwrap();
    let opts = RenderOptions {
        release_name: "web".into(),
        namespace: "apps".into(),
        revision: 3,
        is_upgrade: true,
        // A scalar in the chart's values given a table: Helm warns.
        values: parse_set("port.x=1").unwrap(),
        include_crds: true,
        ..Default::default()
    };
    render_chart(loaded, &opts).unwrap()
}

#[test]
fn render_chart_returns_objects_hooks_notes_and_warnings_as_data() {
    let dir = tempfile::tempdir().unwrap();
    write_chart(dir.path());
    let r = render(dir.path());

    let heads: Vec<(&str, &str, &str, &str, &str)> = r
        .manifests
        .iter()
        .map(|m| {
            (
                m.name.as_str(),
                m.head.api_version.as_str(),
                m.head.kind.as_str(),
                m.head.namespace(),
                m.head.name(),
            )
        })
        .collect();
    assert_eq!(
        heads,
        [
            ("shop/templates/cm.yaml", "v1", "Namespace", "", "other"),
            (
                "shop/templates/cm.yaml",
                "v1",
                "ConfigMap",
                "other",
                "settings"
            ),
            (
                "shop/templates/deploy.yaml",
                "apps/v1",
                "Deployment",
                "",
                "web-web"
            ),
        ]
    );
    assert_eq!(
        r.manifests[2].content,
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web-web\nspec:\n  replicas: 1"
    );

    let hooks: Vec<_> = r
        .hooks
        .iter()
        .map(|h| {
            (
                h.kind.as_str(),
                h.name.as_str(),
                h.path.as_str(),
                h.events.clone(),
                h.weight,
                h.delete_policies.clone(),
            )
        })
        .collect();
    assert_eq!(
        hooks,
        [
            (
                "Pod",
                "smoke",
                "shop/templates/hooks.yaml",
                vec![HookEvent::Test],
                0,
                vec![],
            ),
            (
                "Job",
                "migrate",
                "shop/templates/hooks.yaml",
                vec![HookEvent::PreInstall, HookEvent::PreUpgrade],
                -5,
                vec!["before-hook-creation".to_string(), "hook-succeeded".into()],
            ),
        ]
    );

    assert_eq!(r.crds.len(), 1);
    assert_eq!(r.crds[0].path, "shop/crds/widgets.yaml");
    assert!(r.crds[0].content.contains("widgets.example.com"));
    assert_eq!(r.notes, "Installed web revision 3.\n");
    assert_eq!(
        r.warnings,
        [
            "WARNING: This chart is deprecated",
            "coalesce.go:237: warning: skipped value for shop.port: Not a table.",
            "manifest_sorter.go:190: info: skipping unknown hook: \"sometime\"",
        ]
    );
}

/// `apply` takes the render's documents directly; they are those it used
/// to take by splitting the printed `helm template --include-crds
/// --skip-tests` text again.
#[test]
fn apply_documents_are_those_of_the_printed_text() {
    let dir = tempfile::tempdir().unwrap();
    write_chart(dir.path());
    let r = render(dir.path());
    let direct = antiopa::apply::Rendered::from_chart(&r);
    let printed = antiopa::chart::template::print_rendered(&r, false, true);
    assert_eq!(direct, antiopa::apply::split_rendered(&printed));
    assert_eq!(
        (
            direct.crds.len(),
            direct.manifests.len(),
            direct.hooks.len()
        ),
        (1, 3, 1)
    );
}

/// Errors keep the warnings logged before them, as Helm prints them
/// before its error.
#[test]
fn a_failed_render_keeps_its_warnings() {
    let dir = tempfile::tempdir().unwrap();
    write_chart(dir.path());
    write(dir.path(), "templates/bad.yaml", "{{ fail \"no\" }}");
    let loaded = LoadedChart::load(dir.path(), &mut |_| {}).unwrap();
    let opts = RenderOptions {
        release_name: "web".into(),
        ..Default::default()
    };
    let e = render_chart(loaded, &opts).unwrap_err();
    assert_eq!(
        e.to_string(),
        "execution error at (shop/templates/bad.yaml:1:3): no\n\nUse --debug flag to render out invalid YAML"
    );
    assert_eq!(e.warnings, ["WARNING: This chart is deprecated"]);
}

/// The library prints nothing: the render above runs in a child process
/// with the test harness's capture off, and its warnings appear nowhere on
/// its stdout or stderr.
#[test]
fn render_chart_prints_nothing() {
    if std::env::var_os(CHILD).is_some() {
        let dir = tempfile::tempdir().unwrap();
        write_chart(dir.path());
        let r = render(dir.path());
        assert_eq!(r.warnings.len(), 3);
        return;
    }
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "render_api::render_chart_prints_nothing",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, "1")
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(stdout.contains("1 passed"), "{stdout}");
    for text in [&stdout, &stderr] {
        for w in ["deprecated", "coalesce.go", "manifest_sorter", "sometime"] {
            assert!(!text.contains(w), "{w:?} printed:\n{text}");
        }
    }
}

/// A modules tree with one module `shop` without `Chart.yaml`.
fn module_tree(dir: &Path) {
    write(
        dir,
        "modules/values.yaml",
        "shopEnabled: true\nshop:\n  big: 12345678901\n  ratio: 0.5\n  name: \"007\"\n",
    );
    write(
        dir,
        "modules/010-shop/templates/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Chart.Name }}-{{ .Chart.Version }}\ndata:\n  big: {{ .Values.shop.big | quote }}\n  type: {{ typeOf .Values.shop.big }}\n  ratio: {{ .Values.shop.ratio | quote }}\n  name: {{ .Values.shop.name | quote }}\n",
    );
    std::fs::create_dir_all(dir.join("global-hooks")).unwrap();
}

fn antiopa_render(dir: &Path, tmp: &Path) -> crate::common::RunResult {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_antiopa"));
    cmd.args([
        "render",
        "--modules-dir",
        "modules",
        "--global-hooks-dir",
        "global-hooks",
        "-n",
        "shop",
    ])
    .current_dir(dir);
    for v in [
        "MODULES_DIR",
        "ADDON_OPERATOR_MODULES_DIR",
        "GLOBAL_HOOKS_DIR",
        "ADDON_OPERATOR_GLOBAL_HOOKS_DIR",
    ] {
        cmd.env_remove(v);
    }
    cmd.env("ADDON_OPERATOR_TMP_DIR", tmp).env("TMPDIR", tmp);
    run_with_timeout(&mut cmd, Duration::from_secs(60)).expect("run antiopa")
}

/// The module's values reach the chart as a values file would bring them
/// (numbers as float64), and its Chart.yaml is addon-operator's, yet
/// nothing is written: the temporary directories (the session's and the
/// process's) lie under a regular file, where nothing can be created (the
/// render used to write the values and a copy of the module there).
#[test]
fn module_without_chart_yaml_renders_from_memory_writing_no_file() {
    let dir = tempfile::tempdir().unwrap();
    module_tree(dir.path());
    write(dir.path(), "not-a-dir", "");
    let tmp = dir.path().join("not-a-dir/tmp");
    let r = antiopa_render(dir.path(), &tmp);
    let stdout = String::from_utf8_lossy(&r.stdout);
    let stderr = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.code, Some(0), "{stderr}");
    assert_eq!(
        stdout,
        "# module: shop\n---\n# Source: shop/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: shop-0.2.0\ndata:\n  big: \"1.2345678901e+10\"\n  type: float64\n  ratio: \"0.5\"\n  name: \"007\"\n"
    );
    assert!(!dir.path().join("modules/010-shop/Chart.yaml").exists());
}

/// The loader walks the module directory itself: a link to `/dev/zero` in
/// a module without `Chart.yaml` is refused as Helm refuses it, at once.
#[test]
fn module_without_chart_yaml_refuses_a_link_to_dev_zero() {
    let dir = tempfile::tempdir().unwrap();
    module_tree(dir.path());
    std::os::unix::fs::symlink("/dev/zero", dir.path().join("modules/010-shop/zero.txt")).unwrap();
    let tmp = dir.path().join("tmp");
    let r = antiopa_render(dir.path(), &tmp);
    let stderr = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.code, Some(1), "{stderr}");
    assert!(
        stderr.contains("010-shop/zero.txt as it has file mode type bits set"),
        "{stderr}"
    );
    assert!(r.elapsed < Duration::from_secs(30), "{:?}", r.elapsed);
}

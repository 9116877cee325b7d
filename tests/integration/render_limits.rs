//! Render limits through the real binary: templates that would exhaust
//! memory or recurse without end (a `tpl` of itself, nested ranges doubling
//! output 40 times, `repeat 2000000000`, `until 1000000000`, a 10,000-deep
//! include recursion) end in one clear error naming the template and the
//! limit — for `antiopa template` with the limit flags (helm's behaviour
//! without them) and for `antiopa render`, which renders modules under the
//! operator's limits by default and keeps rendering the other modules.

use std::path::Path;
use std::process::{Command, Output};

fn antiopa_in(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_antiopa"));
    c.args(args)
        .current_dir(dir)
        .env_remove("HELM_NAMESPACE")
        .env_remove("MODULES_DIR")
        .env_remove("GLOBAL_HOOKS_DIR");
    for var in [
        "ANTIOPA_RENDER_LIMITS",
        "ANTIOPA_MAX_OUTPUT",
        "ANTIOPA_MAX_DEPTH",
        "ANTIOPA_RENDER_TIMEOUT",
    ] {
        c.env_remove(var);
    }
    c.envs(env.iter().copied());
    c.output().expect("run antiopa")
}

/// A chart `c` whose only template is `template`, in a temporary directory.
fn chart(template: &str) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().expect("tempdir");
    let c = tmp.path().join("c/templates");
    std::fs::create_dir_all(&c).expect("mkdir");
    std::fs::write(
        tmp.path().join("c/Chart.yaml"),
        "apiVersion: v2\nname: c\nversion: 0.1.0\n",
    )
    .expect("write");
    std::fs::write(c.join("t.yaml"), template).expect("write");
    tmp
}

/// Exit 1, nothing on stdout, one `Error:` line naming `want`; no panic.
fn assert_fails_with(what: &str, out: &Output, want: &str) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{what}: {stderr}");
    assert!(out.stdout.is_empty(), "{what}: stdout not empty");
    assert!(stderr.starts_with("Error: "), "{what}: {stderr}");
    assert!(stderr.contains(want), "{what}: want {want:?} in:\n{stderr}");
    assert!(
        !stderr.contains("panicked") && !stderr.contains("internal error"),
        "{what}: {stderr}"
    );
    stderr
}

fn nested_ranges(levels: usize) -> String {
    let mut t = String::from("x");
    for _ in 0..levels {
        t = format!("{{{{ range list 1 2 }}}}{t}{{{{ end }}}}");
    }
    format!("a: {t}\n")
}

const TPL_ITSELF: &str = "{{ $t := \"{{ tpl . . }}\" }}a: {{ tpl $t $t }}\n";
const DEEP_INCLUDE: &str = "{{ define \"r\" }}{{ if lt . 10000 }}{{ include \"r\" (add1 .) }}{{ end }}{{ end }}a: {{ include \"r\" 0 }}\n";

/// Hostile templates and the limit each hits, under small limits.
fn cases() -> Vec<(&'static str, String, &'static str)> {
    vec![
        (
            "tpl of itself",
            TPL_ITSELF.into(),
            "rendering exceeded the include/tpl nesting limit of 100",
        ),
        (
            "nested ranges doubling output 40 times",
            nested_ranges(40),
            "rendering exceeded the output limit of 4 MiB",
        ),
        (
            "repeat 2000000000",
            "a: {{ repeat 2000000000 \"x\" }}\n".into(),
            "error calling repeat: rendering exceeded the output limit of 4 MiB",
        ),
        (
            "until 1000000000",
            "a: {{ until 1000000000 | len }}\n".into(),
            "error calling until: rendering exceeded the output limit of 4 MiB",
        ),
        (
            "10,000-deep include recursion",
            DEEP_INCLUDE.into(),
            "rendering exceeded the include/tpl nesting limit of 100",
        ),
    ]
}

#[test]
fn template_with_limit_flags_stops_hostile_templates() {
    for (what, template, want) in cases() {
        let tmp = chart(&template);
        let out = antiopa_in(
            tmp.path(),
            &[
                "template",
                "rel",
                "c",
                "--max-output",
                "4Mi",
                "--max-depth",
                "100",
                "--render-timeout",
                "60s",
            ],
            &[],
        );
        let stderr = assert_fails_with(what, &out, want);
        assert!(stderr.contains("c/templates/t.yaml:"), "{what}: {stderr}");
    }
}

#[test]
fn template_limits_from_the_environment_and_the_operator_preset() {
    let tmp = chart(TPL_ITSELF);
    let out = antiopa_in(
        tmp.path(),
        &["template", "rel", "c"],
        &[("ANTIOPA_RENDER_LIMITS", "operator")],
    );
    assert_fails_with(
        "operator preset",
        &out,
        "rendering exceeded the include/tpl nesting limit of 100",
    );
    let out = antiopa_in(
        tmp.path(),
        &["template", "rel", "c"],
        &[("ANTIOPA_MAX_DEPTH", "7")],
    );
    assert_fails_with(
        "ANTIOPA_MAX_DEPTH",
        &out,
        "rendering exceeded the include/tpl nesting limit of 7",
    );
}

#[test]
fn template_render_timeout() {
    let tmp = chart("{{ range until 100000 }}{{ range until 100000 }}{{ end }}{{ end }}");
    let started = std::time::Instant::now();
    let out = antiopa_in(
        tmp.path(),
        &["template", "rel", "c", "--render-timeout", "500ms"],
        &[],
    );
    assert_fails_with("timeout", &out, "rendering took longer than 500ms");
    assert!(started.elapsed().as_secs() < 30);
}

#[test]
fn template_without_limits_keeps_helms_include_recursion_error() {
    let tmp = chart(DEEP_INCLUDE);
    let out = antiopa_in(tmp.path(), &["template", "rel", "c"], &[]);
    assert_fails_with(
        "default limits",
        &out,
        "rendering template has a nested reference name: r: unable to execute template",
    );
}

#[test]
fn render_stops_a_hostile_module_and_renders_the_others() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let modules = tmp.path().join("modules");
    let module = |dir: &str, template: &str| {
        let t = modules.join(dir).join("templates");
        std::fs::create_dir_all(&t).expect("mkdir");
        std::fs::write(t.join("t.yaml"), template).expect("write");
    };
    module("010-hostile", TPL_ITSELF);
    module(
        "020-fine",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fine\n",
    );
    std::fs::write(
        modules.join("values.yaml"),
        "hostileEnabled: true\nfineEnabled: true\n",
    )
    .expect("write");
    std::fs::create_dir_all(tmp.path().join("global-hooks")).expect("mkdir");
    let out = antiopa_in(
        tmp.path(),
        &[
            "render",
            "--modules-dir",
            "modules",
            "--global-hooks-dir",
            "global-hooks",
        ],
        &[],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("module 'hostile'")
            && stderr.contains("hostile/templates/t.yaml:1:")
            && stderr.contains("rendering exceeded the include/tpl nesting limit of 100"),
        "{stderr}"
    );
    assert!(stdout.contains("name: fine"), "{stdout}");

    // The flags override the operator's preset.
    let out = antiopa_in(
        tmp.path(),
        &[
            "render",
            "fine",
            "--modules-dir",
            "modules",
            "--global-hooks-dir",
            "global-hooks",
            "--max-output",
            "10",
        ],
        &[],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("rendering exceeded the output limit of 10 bytes"),
        "{stderr}"
    );
}

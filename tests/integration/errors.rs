//! Bad input: every broken chart, values file or argument ends in one
//! `Error: …` message on stderr, exit code 1 and nothing on stdout — never a
//! Rust panic. The inputs live in fixtures/bad/ (cases.txt lists them); the
//! texts helm v3.17.3 prints for them come from the real helm via
//! fixtures/bad/regen.sh and are stored in fixtures/bad/expected/. Where
//! antiopa's text is known to differ, the case is in
//! [`DIFFERS_FROM_HELM`] (documented in compat/COMPATIBILITY.md) and only the
//! insta snapshot pins our text.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Cases whose text differs from helm's (see compat/COMPATIBILITY.md,
/// "Error messages"): `corrupt-tgz` — Go's flate reports the byte offset
/// ("flate: corrupt input before offset 4"), the Rust inflater does not.
const DIFFERS_FROM_HELM: &[&str] = &["corrupt-tgz"];

fn bad_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/bad")
}

fn antiopa_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_antiopa"))
        .args(args)
        .current_dir(dir)
        .env_remove("HELM_NAMESPACE")
        .output()
        .expect("run antiopa")
}

/// Exit code 1, nothing on stdout, a single `Error:` report and no panic
/// text; returns stderr.
fn assert_clean_failure(what: &str, out: &Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{what}: exit status, stderr:\n{stderr}"
    );
    assert!(out.stdout.is_empty(), "{what}: stdout not empty");
    assert!(stderr.starts_with("Error: "), "{what}: stderr:\n{stderr}");
    assert_eq!(stderr.matches("Error: ").count(), 1, "{what}: {stderr}");
    assert!(
        !stderr.contains("panicked") && !stderr.contains("RUST_BACKTRACE"),
        "{what}: panic: {stderr}"
    );
    stderr
}

#[test]
fn bad_inputs_fail_like_helm() {
    let dir = bad_dir();
    let cases = std::fs::read_to_string(dir.join("cases.txt")).expect("cases.txt");
    let mut snap = String::new();
    let mut mismatches = Vec::new();
    for line in cases.lines().filter(|l| !l.is_empty()) {
        let (name, args) = line.split_once('|').expect("name|args");
        let args: Vec<&str> = args.split_whitespace().collect();
        let out = antiopa_in(&dir, &args);
        let stderr = assert_clean_failure(name, &out);
        let want_code = std::fs::read_to_string(dir.join(format!("expected/{name}.code")))
            .expect("expected code");
        assert_eq!(want_code.trim(), "1", "{name}: helm's exit code");
        let helm = std::fs::read_to_string(dir.join(format!("expected/{name}.err")))
            .expect("expected stderr");
        let ours = stderr.replace("antiopa", "helm");
        if DIFFERS_FROM_HELM.contains(&name) {
            assert_ne!(
                ours, helm,
                "{name}: now matches helm; drop it from DIFFERS_FROM_HELM"
            );
        } else if ours != helm {
            mismatches.push(format!(
                "{name}:\n  helm:    {helm:?}\n  antiopa: {stderr:?}"
            ));
        }
        snap.push_str(&format!("== {name}: antiopa {}\n{stderr}", args.join(" ")));
    }
    assert!(
        mismatches.is_empty(),
        "differs from helm:\n{}",
        mismatches.join("\n")
    );
    insta::assert_snapshot!(snap);
}

/// A chart in a temporary directory: `files` are (path, bytes) pairs.
fn temp_chart(files: &[(&str, &[u8])]) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().expect("tempdir");
    let chart = tmp.path().join("c");
    std::fs::create_dir_all(chart.join("templates")).expect("mkdir");
    std::fs::write(
        chart.join("Chart.yaml"),
        "apiVersion: v2\nname: c\nversion: 0.1.0\n",
    )
    .expect("write");
    for (path, bytes) in files {
        std::fs::write(tmp.path().join(path), bytes).expect("write");
    }
    tmp
}

#[test]
fn ten_thousand_nested_parens_render_like_helm() {
    // helm v3.17.3 renders this (Go's parser has no depth limit that low).
    let deep_parens = format!(
        "a: {{{{ {}1{} }}}}\n",
        "(".repeat(10_000),
        ")".repeat(10_000)
    );
    let tmp = temp_chart(&[("c/templates/t.yaml", deep_parens.as_bytes())]);
    let out = antiopa_in(tmp.path(), &["template", "rel", "c"]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "---\n# Source: c/templates/t.yaml\na: 1\n",
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// (what, files written into the temp dir, extra arguments).
type HostileCase<'a> = (&'a str, Vec<(&'a str, Vec<u8>)>, Vec<&'a str>);

#[test]
fn hostile_inputs_fail_without_crashing() {
    let deep_yaml = format!("a: {}{}\n", "[".repeat(100_000), "]".repeat(100_000));
    let deep_map = "{a: ".repeat(50_000);
    let cases: Vec<HostileCase> = vec![
        (
            "deeply nested values file",
            vec![("deep.yaml", deep_yaml.clone().into_bytes())],
            vec!["-f", "deep.yaml"],
        ),
        (
            "deeply nested chart values",
            vec![("c/values.yaml", deep_map.into_bytes())],
            vec![],
        ),
        (
            "deeply nested template output",
            vec![("c/templates/t.yaml", deep_yaml.into_bytes())],
            vec![],
        ),
        (
            "huge number literal",
            vec![("c/templates/t.yaml", b"a: {{ 1e99999999999 }}\n".to_vec())],
            vec![],
        ),
        (
            "huge integer literal",
            vec![(
                "c/templates/t.yaml",
                b"a: {{ 99999999999999999999999999 }}\n".to_vec(),
            )],
            vec![],
        ),
        (
            "huge --set index",
            vec![],
            vec!["--set", "a[99999999999999999999]=1"],
        ),
        (
            "invalid UTF-8 values file",
            vec![("v.yaml", b"a: \xff\xfe\n".to_vec())],
            vec!["-f", "v.yaml"],
        ),
        (
            "invalid UTF-8 Chart.yaml",
            vec![(
                "c/Chart.yaml",
                b"apiVersion: v2\nname: \xff\nversion: 0.1.0\n".to_vec(),
            )],
            vec![],
        ),
        (
            "unterminated template",
            vec![(
                "c/templates/t.yaml",
                b"{{ define \"x\" }}{{ if 1 }}".to_vec(),
            )],
            vec![],
        ),
        (
            "huge repeat",
            vec![(
                "c/templates/t.yaml",
                b"a: {{ repeat 99999999999999 \"x\" }}\n".to_vec(),
            )],
            vec![],
        ),
    ];
    for (what, files, extra) in cases {
        let files: Vec<(&str, &[u8])> = files.iter().map(|(p, b)| (*p, b.as_slice())).collect();
        let tmp = temp_chart(&files);
        let mut args = vec!["template", "rel", "c"];
        args.extend(extra);
        let out = antiopa_in(tmp.path(), &args);
        assert_clean_failure(what, &out);
    }
}

/// A chart file that cannot be read when a template asks for it (here a
/// link to `/proc/self/mem`, whose first page reads as an I/O error) fails
/// the render naming the file; it is never taken for an empty file.
#[test]
fn unreadable_chart_file_is_an_error_naming_it() {
    let tmp = temp_chart(&[(
        "c/templates/t.yaml",
        b"r: {{ .Files.Get \"mem\" | len }}\n".as_slice(),
    )]);
    std::os::unix::fs::symlink("/proc/self/mem", tmp.path().join("c/mem")).unwrap();
    let out = antiopa_in(tmp.path(), &["template", "rel", "c"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(out.stdout.is_empty());
    assert!(
        stderr.contains("Error: cannot read chart file c/mem: Input/output error"),
        "{stderr}"
    );
}

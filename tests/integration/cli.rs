//! The README's first command, and other whole-CLI behaviour a user sees:
//! `antiopa template` prints exactly what `helm template` prints for the
//! fixture chart (outputs in fixtures/expected/ come from the real helm via
//! fixtures/regen.sh).

use std::path::Path;
use std::process::Command;

fn antiopa(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_antiopa"))
        .args(args)
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures"))
        .output()
        .expect("run antiopa")
}

fn expected(name: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/expected")
        .join(name);
    std::fs::read_to_string(p).expect("read expected output")
}

fn assert_same(out: std::process::Output, want: &str) {
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "exit {:?}, stderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    similar_asserts(&stdout, want);
}

fn similar_asserts(got: &str, want: &str) {
    if got != want {
        let diff = got
            .lines()
            .zip(want.lines())
            .enumerate()
            .find(|(_, (g, w))| g != w)
            .map(|(i, (g, w))| {
                format!(
                    "first difference at line {}:\n  got:  {g:?}\n  want: {w:?}",
                    i + 1
                )
            })
            .unwrap_or_else(|| {
                format!(
                    "lengths differ: got {} bytes, want {}",
                    got.len(),
                    want.len()
                )
            });
        panic!("output differs from helm's\n{diff}");
    }
}

/// `antiopa template demo charts/hello --namespace web`, then `extra`.
fn template_hello(extra: &[&str]) -> std::process::Output {
    let mut args = vec!["template", "demo", "charts/hello", "--namespace", "web"];
    args.extend_from_slice(extra);
    antiopa(&args)
}

#[test]
fn readme_command_renders_hello_like_helm() {
    let out = template_hello(&[]);
    assert_same(out, &expected("hello-demo.yaml"));
}

#[test]
fn set_flags_change_the_render_like_helm() {
    let out = template_hello(&["--set", "ingress.enabled=true", "--set", "replicaCount=3"]);
    assert_same(out, &expected("hello-ingress.yaml"));
}

/// `--output-dir`: helm writes each document to `DIR/<path>` and prints a
/// `wrote` line per document, then the (empty) rendered text's newline
/// (stdout checked byte for byte against helm v3.17.3 by hand); the files
/// hold the same `# Source:` blocks stdout would have.
#[test]
fn output_dir_writes_the_files_and_prints_helms_lines() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out_dir = dir.path().join("out");
    let out_arg = out_dir.to_string_lossy().into_owned();
    let out = template_hello(&["--output-dir", &out_arg]);
    assert!(out.status.success(), "{out:?}");
    let printed = expected("hello-demo.yaml");
    let sources: Vec<&str> = printed
        .lines()
        .filter_map(|l| l.strip_prefix("# Source: "))
        .collect();
    assert!(!sources.is_empty());
    let mut want_stdout = String::new();
    let mut written = String::new();
    for s in &sources {
        want_stdout.push_str(&format!("wrote {out_arg}/{s}\n"));
        written.push_str(&std::fs::read_to_string(out_dir.join(s)).expect("written file"));
    }
    want_stdout.push('\n');
    similar_asserts(&String::from_utf8_lossy(&out.stdout), &want_stdout);
    similar_asserts(&format!("{}\n", written.trim()), &printed);
}

/// The optimised build a user gets (`cargo build --release`: thin LTO, a
/// position-independent executable) renders the README's chart as the test
/// build does, and is address-randomised. `.ci/run` builds it before the
/// tests; elsewhere the test is skipped without one.
#[test]
fn release_binary_smoke_test() {
    let bin = crate::common::release_bin();
    if !bin.is_file() {
        assert!(
            !crate::common::in_ci(),
            "{} is missing: .ci/run builds it before the tests",
            bin.display()
        );
        eprintln!("skipped: no release build at {}", bin.display());
        return;
    }
    let out = Command::new(&bin)
        .args(["template", "demo", "charts/hello", "--namespace", "web"])
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures"))
        .output()
        .expect("run the release antiopa");
    assert_same(out, &expected("hello-demo.yaml"));
    // ELF type at offset 16: 3 is ET_DYN (position-independent), 2 ET_EXEC.
    let elf = std::fs::read(&bin).expect("read the binary");
    assert_eq!(
        elf.get(16),
        Some(&3),
        "{} is not position-independent",
        bin.display()
    );
}

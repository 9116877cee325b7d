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

#[test]
fn readme_command_renders_hello_like_helm() {
    let out = antiopa(&["template", "demo", "charts/hello", "--namespace", "web"]);
    assert_same(out, &expected("hello-demo.yaml"));
}

#[test]
fn set_flags_change_the_render_like_helm() {
    let out = antiopa(&[
        "template",
        "demo",
        "charts/hello",
        "--namespace",
        "web",
        "--set",
        "ingress.enabled=true",
        "--set",
        "replicaCount=3",
    ]);
    assert_same(out, &expected("hello-ingress.yaml"));
}

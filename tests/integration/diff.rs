//! `antiopa diff` as a user runs it: rendered files and directories,
//! modules trees rendered on the fly, a git repository's modules tree at
//! two commits and against the working tree; exit codes, colour, Markdown.
//! Inputs are built in temporary directories; outputs are insta snapshots.

use std::path::Path;
use std::process::{Command, Output};

/// Runs `antiopa diff ARGS` in `dir` with a clean modules environment.
fn diff(dir: &Path, args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_antiopa"));
    cmd.arg("diff").args(args).current_dir(dir);
    for v in [
        "MODULES_DIR",
        "ADDON_OPERATOR_MODULES_DIR",
        "GLOBAL_HOOKS_DIR",
        "ADDON_OPERATOR_GLOBAL_HOOKS_DIR",
        "UNNUMBERED_MODULES_ORDER",
        "NO_COLOR",
    ] {
        cmd.env_remove(v);
    }
    cmd.output().expect("run antiopa")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
    std::fs::write(p, text).expect("write");
}

const OLD_STREAM: &str = "\
---
# Source: web/templates/deploy.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels:
    app: web
spec:
  replicas: 1
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: web
        image: nginx:1.25
        ports:
        - containerPort: 80
---
# Source: web/templates/old.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: legacy
data:
  a: \"1\"
---
# Source: web/templates/sa.yaml
apiVersion: v1
kind: ServiceAccount
metadata:
  name: web
";

/// The same objects reformatted (flow style, other key order, quotes), one
/// changed, one removed, one added.
const NEW_STREAM: &str = "\
apiVersion: v1
kind: ServiceAccount
metadata: {name: web}
---
kind: Deployment
apiVersion: apps/v1
metadata:
  labels: {app: web}
  name: web
spec:
  replicas: 2
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
        - name: web
          image: \"nginx:1.27\"
          ports:
            - containerPort: 80
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: web-reader
rules: []
";

#[test]
fn two_files_object_level_diff() {
    let t = tempfile::tempdir().expect("tmp");
    write(t.path(), "old.yaml", OLD_STREAM);
    write(t.path(), "new.yaml", NEW_STREAM);
    let o = diff(t.path(), &["old.yaml", "new.yaml", "-n", "web"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // Piped stdout: no colour codes without --color always.
    assert!(!stdout(&o).contains('\x1b'));
    insta::assert_snapshot!("two_files", stdout(&o));
}

#[test]
fn exit_code_like_git() {
    let t = tempfile::tempdir().expect("tmp");
    write(t.path(), "old.yaml", OLD_STREAM);
    write(t.path(), "new.yaml", NEW_STREAM);
    write(
        t.path(),
        "same.yaml",
        &OLD_STREAM.replace("# Source", "# Moved"),
    );
    let differs = diff(t.path(), &["--exit-code", "old.yaml", "new.yaml"]);
    assert_eq!(differs.status.code(), Some(1));
    let same = diff(t.path(), &["--exit-code", "old.yaml", "same.yaml"]);
    assert_eq!(same.status.code(), Some(0));
    assert_eq!(
        stdout(&same),
        "0 added, 0 removed, 0 changed, 3 unchanged\n"
    );
    let missing = diff(t.path(), &["old.yaml", "nope.yaml"]);
    assert_eq!(missing.status.code(), Some(2));
    assert_eq!(
        stderr(&missing),
        "Error: nope.yaml: no such file or directory\n"
    );
    let bad_flag = diff(t.path(), &["--frobnicate", "old.yaml", "new.yaml"]);
    assert_eq!(bad_flag.status.code(), Some(2));
}

#[test]
fn parse_errors_name_file_document_and_line() {
    let t = tempfile::tempdir().expect("tmp");
    write(t.path(), "old.yaml", OLD_STREAM);
    write(
        t.path(),
        "new.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\nkind: ConfigMap\nmetadata:\n  name: b\n  x: y: z\n",
    );
    let o = diff(t.path(), &["old.yaml", "new.yaml"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(o.stdout, b"");
    insta::assert_snapshot!("parse_error", stderr(&o));
}

#[test]
fn colour_on_request_and_markdown() {
    let t = tempfile::tempdir().expect("tmp");
    write(t.path(), "old.yaml", OLD_STREAM);
    write(t.path(), "new.yaml", NEW_STREAM);
    let o = diff(t.path(), &["--color", "always", "old.yaml", "new.yaml"]);
    let out = stdout(&o);
    assert!(
        out.contains("\x1b[32m+      - image: nginx:1.27\x1b[0m\n"),
        "{out}"
    );
    let md = diff(
        t.path(),
        &[
            "-o", "markdown", "--color", "always", "-U", "1", "old.yaml", "new.yaml", "-n", "web",
        ],
    );
    assert_eq!(md.status.code(), Some(0));
    insta::assert_snapshot!("markdown", stdout(&md));
}

#[test]
fn rendered_directories_match_by_object_not_file() {
    let t = tempfile::tempdir().expect("tmp");
    // helm template --output-dir layout on one side, one file on the other.
    let docs: Vec<&str> = OLD_STREAM
        .split("---\n")
        .filter(|d| !d.is_empty())
        .collect();
    write(t.path(), "old/web/templates/deploy.yaml", docs[0]);
    write(t.path(), "old/web/templates/old.yaml", docs[1]);
    write(t.path(), "old/web/templates/sa.yaml", docs[2]);
    write(t.path(), "old/web/NOTES.txt", "not yaml: [");
    write(t.path(), "new/web/templates/all.yaml", NEW_STREAM);
    let o = diff(t.path(), &["old", "new", "-n", "web", "-U", "0"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    insta::assert_snapshot!("directories", stdout(&o));
}

/// A one-module tree: `echo` with a values-driven ConfigMap and Deployment.
fn module_tree(root: &Path, replicas: u32, extra: bool) {
    write(root, "modules/values.yaml", "echoEnabled: true\n");
    write(
        root,
        "modules/010-echo/Chart.yaml",
        "apiVersion: v2\nname: echo\nversion: 0.1.0\n",
    );
    write(
        root,
        "modules/010-echo/values.yaml",
        &format!("echo:\n  replicas: {replicas}\n  message: hi\n"),
    );
    write(
        root,
        "modules/010-echo/templates/deploy.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: echo\n  namespace: {{ .Release.Namespace }}\nspec:\n  replicas: {{ .Values.echo.replicas }}\n",
    );
    write(
        root,
        "modules/010-echo/templates/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: echo\ndata:\n  message: {{ .Values.echo.message | quote }}\n",
    );
    let extra_path = root.join("modules/010-echo/templates/svc.yaml");
    if extra {
        write(
            root,
            "modules/010-echo/templates/svc.yaml",
            "apiVersion: v1\nkind: Service\nmetadata:\n  name: echo\nspec:\n  ports:\n  - port: 80\n",
        );
    } else if extra_path.exists() {
        std::fs::remove_file(extra_path).expect("rm");
    }
}

#[test]
fn modules_trees_are_rendered_then_compared() {
    let t = tempfile::tempdir().expect("tmp");
    module_tree(&t.path().join("a"), 1, false);
    module_tree(&t.path().join("b"), 3, true);
    let o = diff(t.path(), &["a/modules", "b/modules", "-n", "apps"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    insta::assert_snapshot!("module_trees", stdout(&o));
    // A rendered file compares with a tree: `antiopa render` output.
    let rendered = Command::new(env!("CARGO_BIN_EXE_antiopa"))
        .args(["render", "--modules-dir", "a/modules", "-n", "apps"])
        .current_dir(t.path())
        .output()
        .expect("render");
    assert!(rendered.status.success(), "{}", stderr(&rendered));
    write(t.path(), "a.yaml", &stdout(&rendered));
    let o = diff(
        t.path(),
        &["--exit-code", "a.yaml", "a/modules", "-n", "apps"],
    );
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    assert_eq!(stdout(&o), "0 added, 0 removed, 0 changed, 2 unchanged\n");
}

fn git(dir: &Path, args: &[&str]) {
    let o = Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.com",
            "-c",
            "commit.gpgsign=false",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git");
    assert!(o.status.success(), "git {args:?}: {}", stderr(&o));
}

#[test]
fn git_revisions_of_the_modules_dir() {
    let t = tempfile::tempdir().expect("tmp");
    let repo = t.path();
    git(repo, &["init", "-q"]);
    write(repo, "README.md", "modules come later\n");
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-q", "-m", "zero"]);
    module_tree(repo, 1, false);
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-q", "-m", "one"]);
    module_tree(repo, 2, true);
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-q", "-m", "two"]);
    let o = diff(repo, &["--git", "HEAD~1", "HEAD", "-n", "apps"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    insta::assert_snapshot!("git_two_commits", stdout(&o));

    // One revision: against the working tree, from a subdirectory, with
    // --modules-dir.
    module_tree(repo, 5, true);
    let o = diff(
        &repo.join("modules"),
        &[
            "--git",
            "HEAD",
            "--modules-dir",
            ".",
            "-n",
            "apps",
            "-U",
            "0",
            "--exit-code",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    insta::assert_snapshot!("git_working_tree", stdout(&o));

    // A revision before the modules dir existed: everything is added.
    let o = diff(repo, &["--git", "HEAD~2", "HEAD~1", "-n", "apps"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).ends_with("2 added, 0 removed, 0 changed, 0 unchanged\n"),
        "{}",
        stdout(&o)
    );
    let o = diff(repo, &["--git", "nope", "-n", "apps"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(stderr(&o), "Error: git: unknown revision 'nope'\n");
}

#[test]
fn stdin_side_and_module_failures() {
    let t = tempfile::tempdir().expect("tmp");
    write(t.path(), "old.yaml", OLD_STREAM);
    let mut child = Command::new(env!("CARGO_BIN_EXE_antiopa"))
        .args(["diff", "--exit-code", "old.yaml", "-"])
        .current_dir(t.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("stdin");
        stdin
            .write_all(OLD_STREAM.replace("replicas: 1", "replicas: 4").as_bytes())
            .expect("write stdin");
    }
    let o = child.wait_with_output().expect("wait");
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stdout(&o).starts_with("~ apps/v1 Deployment default/web\n"),
        "{}",
        stdout(&o)
    );

    // A module that fails to render is an error, not a removal.
    module_tree(&t.path().join("a"), 1, false);
    module_tree(&t.path().join("b"), 1, false);
    write(
        &t.path().join("b"),
        "modules/010-echo/templates/bad.yaml",
        "{{ fail \"boom\" }}\n",
    );
    let o = diff(t.path(), &["a/modules", "b/modules"]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    assert_eq!(o.stdout, b"");
    insta::assert_snapshot!("module_render_error", stderr(&o));
}

const SECRET_OLD: &str = "\
apiVersion: v1
kind: Secret
metadata:
  name: db
data:
  password: aHVudGVyMg==
  user: YWRtaW4=
stringData:
  token: s3cr3t-old
---
apiVersion: v1
kind: Secret
metadata:
  name: gone
data:
  key: Z29uZS1zZWNyZXQ=
";

const SECRET_NEW: &str = "\
apiVersion: v1
kind: Secret
metadata:
  name: db
data:
  password: Y29ycmVjdC1ob3JzZQ==
  user: YWRtaW4=
stringData:
  token: s3cr3t-new
";

#[test]
fn secret_values_are_masked_as_kubectl_diff_masks_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(dir.path(), "old.yaml", SECRET_OLD);
    write(dir.path(), "new.yaml", SECRET_NEW);
    for format in ["text", "markdown"] {
        let o = diff(dir.path(), &["old.yaml", "new.yaml", "-o", format]);
        let out = stdout(&o);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        for secret in [
            "aHVudGVyMg==",
            "Y29ycmVjdC1ob3JzZQ==",
            "YWRtaW4=",
            "s3cr3t",
            "Z29uZS1zZWNyZXQ=",
        ] {
            assert!(!out.contains(secret), "{format} shows {secret}:\n{out}");
        }
        // Which keys changed stays visible.
        assert!(out.contains("-  password: '*** (before)'"), "{out}");
        assert!(out.contains("+  password: '*** (after)'"), "{out}");
        assert!(out.contains("   user: '***'"), "{out}");
        assert!(out.contains("-  key: '***'"), "{out}");
        assert!(out.contains("1 removed, 1 changed"), "{out}");
    }
    // Unchanged values are not a change, whatever the masks.
    let o = diff(dir.path(), &["new.yaml", "new.yaml", "--exit-code"]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));

    let o = diff(dir.path(), &["old.yaml", "new.yaml", "--show-secrets"]);
    let out = stdout(&o);
    assert!(
        out.contains("-  password: aHVudGVyMg==") && out.contains("+  token: s3cr3t-new"),
        "{out}"
    );
}

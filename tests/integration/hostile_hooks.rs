//! Careless and hostile hooks, scripts and filters (issue 25): each case runs
//! the real binary on a modules tree built in a temporary directory and pins
//! what the user sees — a clear error naming the hook, the script or the
//! filter and the limit, or a warning — and that antiopa neither hangs, nor
//! crashes, nor reports a module whose `enabled` script failed as removed.
//! Every run has a time limit, so a regression shows as a failure, not a
//! hung test.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::common::{RunResult, run_with_timeout};

/// A modules tree: `modules/values.yaml` enabling the modules it is given,
/// an empty global hooks dir.
struct Tree {
    dir: tempfile::TempDir,
}

impl Tree {
    fn new(enabled: &[&str]) -> Tree {
        let dir = tempfile::tempdir().expect("tempdir");
        let t = Tree { dir };
        let flags: String = enabled
            .iter()
            .map(|m| format!("{m}Enabled: true\n"))
            .collect();
        t.write("modules/values.yaml", &flags, false);
        std::fs::create_dir_all(t.path().join("global-hooks")).expect("mkdir");
        t
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn write(&self, rel: &str, text: &str, executable: bool) -> PathBuf {
        let p = self.path().join(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(&p, text).expect("write");
        let mode = if executable { 0o755 } else { 0o644 };
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).expect("chmod");
        p
    }

    /// A module with a chart holding one ConfigMap named after it.
    fn module(&self, dir: &str, name: &str) {
        self.write(
            &format!("modules/{dir}/Chart.yaml"),
            &format!("apiVersion: v2\nname: {name}\nversion: 0.1.0\n"),
            false,
        );
        self.write(
            &format!("modules/{dir}/templates/cm.yaml"),
            &format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  a: \"1\"\n"
            ),
            false,
        );
    }

    /// `antiopa ARGS` with this tree's directories, a clean environment
    /// for the settings it reads, and a time limit.
    fn run(&self, args: &[&str], env: &[(&str, &str)], limit: Duration) -> RunResult {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_antiopa"));
        cmd.args(args).current_dir(self.path());
        for v in [
            "MODULES_DIR",
            "ADDON_OPERATOR_MODULES_DIR",
            "GLOBAL_HOOKS_DIR",
            "ADDON_OPERATOR_GLOBAL_HOOKS_DIR",
            "ANTIOPA_HOOK_TIMEOUT",
            "ANTIOPA_HOOK_MAX_FILE_SIZE",
            "ANTIOPA_JQ_TIMEOUT",
        ] {
            cmd.env_remove(v);
        }
        cmd.env("ADDON_OPERATOR_TMP_DIR", self.path().join("tmp"));
        cmd.envs(env.iter().copied());
        run_with_timeout(&mut cmd, limit).expect("run antiopa")
    }

    fn render(&self, extra: &[&str], env: &[(&str, &str)]) -> RunResult {
        let mut args = vec![
            "render",
            "--modules-dir",
            "modules",
            "--global-hooks-dir",
            "global-hooks",
        ];
        args.extend_from_slice(extra);
        self.run(&args, env, Duration::from_secs(60))
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Exit code `code`, not killed, no panic; returns stderr.
fn failed_with(r: &RunResult, code: i32) -> String {
    let err = text(&r.stderr);
    assert_eq!(r.code, Some(code), "{}; stderr:\n{err}", r.describe_exit());
    assert!(!err.contains("panicked"), "{err}");
    err
}

fn succeeded(r: &RunResult) -> String {
    failed_with(r, 0)
}

const GATE_FAILS: &str = "#!/bin/sh\necho 'cannot reach the inventory' >&2\nexit 3\n";

/// Two modules; `gate`'s `enabled` script is `script`.
fn gated_tree(script: &str) -> Tree {
    let t = Tree::new(&["gate", "other"]);
    t.module("010-gate", "gate");
    t.module("020-other", "other");
    t.write("modules/010-gate/enabled", script, true);
    t
}

#[test]
fn enabled_script_that_fails_is_an_error_naming_module_and_script() {
    let t = gated_tree(GATE_FAILS);
    let err = failed_with(&t.render(&[], &[]), 1);
    assert!(
        err.contains("Error: module 'gate': enabled script ")
            && err.contains("010-gate/enabled failed: exit status 3: cannot reach the inventory"),
        "{err}"
    );
    let list = t.run(
        &[
            "module",
            "list",
            "--modules-dir",
            "modules",
            "--global-hooks-dir",
            "global-hooks",
        ],
        &[],
        Duration::from_secs(60),
    );
    let err = failed_with(&list, 1);
    assert!(err.contains("module 'gate': enabled script"), "{err}");
    assert!(list.stdout.is_empty(), "{}", text(&list.stdout));
}

#[test]
fn enabled_script_failure_makes_diff_fail_instead_of_showing_the_module_removed() {
    let t = gated_tree("#!/bin/sh\necho true > \"$MODULE_ENABLED_RESULT\"\n");
    let old = t.render(&[], &[]);
    let rendered = succeeded(&old);
    assert!(text(&old.stdout).contains("name: gate"), "{rendered}");
    t.write("old.yaml", &text(&old.stdout), false);
    t.write("modules/010-gate/enabled", GATE_FAILS, true);
    let r = t.run(
        &[
            "diff",
            "old.yaml",
            "modules",
            "--global-hooks-dir",
            "global-hooks",
        ],
        &[],
        Duration::from_secs(60),
    );
    let err = failed_with(&r, 2);
    assert!(err.contains("module 'gate': enabled script"), "{err}");
    let out = text(&r.stdout);
    assert!(
        !out.contains("removed") && !out.contains("- v1 ConfigMap"),
        "{out}"
    );
}

#[test]
fn enabled_script_printing_neither_true_nor_false_is_an_error() {
    let t = gated_tree("#!/bin/sh\necho maybe > \"$MODULE_ENABLED_RESULT\"\n");
    let err = failed_with(&t.render(&[], &[]), 1);
    assert!(
        err.contains("module 'gate': enabled script")
            && err.contains("MODULE_ENABLED_RESULT must be 'true' or 'false', got 'maybe'"),
        "{err}"
    );
}

#[test]
fn enabled_script_that_hangs_is_stopped_at_the_hook_timeout() {
    let t = gated_tree("#!/bin/sh\nsleep 30\n");
    let r = t.render(&[], &[("ANTIOPA_HOOK_TIMEOUT", "1")]);
    let err = failed_with(&r, 1);
    assert!(
        err.contains("module 'gate': enabled script") && err.contains("timed out after 1s"),
        "{err}"
    );
    assert!(r.elapsed < Duration::from_secs(20), "{:?}", r.elapsed);
}

#[test]
fn hook_timeout_flag_names_the_hook_and_the_limit() {
    let t = Tree::new(&["slow"]);
    t.module("010-slow", "slow");
    t.write(
        "modules/010-slow/hooks/wait.sh",
        "#!/bin/sh\nif [ \"$1\" = --config ]; then echo 'configVersion: v1\nbeforeHelm: 1'; exit 0; fi\nsleep 30\n",
        true,
    );
    let r = t.render(&["--hook-timeout", "1s"], &[]);
    let err = failed_with(&r, 1);
    assert!(
        err.contains("hook 'hooks/wait.sh' failed (binding beforeHelm): timed out after 1s"),
        "{err}"
    );
    assert!(r.elapsed < Duration::from_secs(20), "{:?}", r.elapsed);
}

#[test]
fn fifo_in_hooks_dir_is_skipped_with_a_warning_and_never_opened() {
    for with_chart_yaml in [true, false] {
        let t = Tree::new(&["piped"]);
        t.module("010-piped", "piped");
        if !with_chart_yaml {
            // Such a module is copied to get a Chart.yaml: that copy used
            // to open the FIFO and wait forever.
            std::fs::remove_file(t.path().join("modules/010-piped/Chart.yaml")).expect("rm");
        }
        std::fs::create_dir_all(t.path().join("modules/010-piped/hooks")).expect("mkdir");
        let st = Command::new("mkfifo")
            .arg(t.path().join("modules/010-piped/hooks/pipe"))
            .status()
            .expect("mkfifo");
        assert!(st.success());
        let warning = "hooks/pipe: skipped: a FIFO, not a regular file";
        // Hook discovery alone (`module values` runs the module's hooks).
        let r = t.run(
            &[
                "module",
                "values",
                "piped",
                "--modules-dir",
                "modules",
                "--global-hooks-dir",
                "global-hooks",
            ],
            &[],
            Duration::from_secs(30),
        );
        let err = succeeded(&r);
        assert!(
            err.contains("warning: module 'piped': ") && err.contains(warning),
            "{err}"
        );
        // The chart loader refuses it as helm does, without blocking.
        let r = t.render(&[], &[]);
        let err = failed_with(&r, 1);
        assert!(
            err.contains(warning) && err.contains("hooks/pipe as it has file mode type bits set"),
            "{err}"
        );
    }
}

#[test]
fn non_executable_hook_gets_a_warning_docs_stay_silent() {
    let t = Tree::new(&["lazy"]);
    t.module("010-lazy", "lazy");
    t.write(
        "modules/010-lazy/hooks/forgot-chmod.sh",
        "#!/bin/sh\necho hi\n",
        false,
    );
    t.write("modules/010-lazy/hooks/README.md", "docs\n", false);
    t.write("modules/010-lazy/hooks/lib/util.sh", "x\n", false);
    let r = t.render(&[], &[]);
    let err = succeeded(&r);
    assert!(
        err.contains("warning: module 'lazy': ")
            && err.contains(
                "hooks/forgot-chmod.sh: skipped: not executable (chmod +x is required to run this hook)"
            ),
        "{err}"
    );
    assert_eq!(err.matches("warning").count(), 1, "{err}");
}

/// A module hook running `body` on `beforeHelm`.
fn hook_tree(body: &str) -> Tree {
    let t = Tree::new(&["noisy"]);
    t.module("010-noisy", "noisy");
    t.write(
        "modules/010-noisy/hooks/hook.sh",
        &format!(
            "#!/bin/sh\nif [ \"$1\" = --config ]; then echo 'configVersion: v1\nbeforeHelm: 1'; exit 0; fi\n{body}\n"
        ),
        true,
    );
    t
}

#[test]
fn hook_printing_200_mb_without_newline_to_stderr_is_cut_not_buffered() {
    let t = hook_tree("head -c 200000000 /dev/zero | tr '\\0' x >&2");
    let r = t.render(&[], &[]);
    let err = succeeded(&r);
    assert!(
        err.contains("hooks/hook.sh: xxxx") && err.contains("x… (199995904 bytes cut)"),
        "{}",
        &err[..err.len().min(300)]
    );
    assert!(
        err.contains("warning: output beyond the capture limit dropped: 198951424 bytes of stderr"),
        "{}",
        &err[err.len().saturating_sub(500)..]
    );
    // One line of 4 KiB and the notes: the rest was never kept.
    assert!(err.len() < 16 << 10, "{} bytes on stderr", err.len());
    assert!(text(&r.stdout).contains("name: noisy"));
}

#[test]
fn values_patch_larger_than_the_limit_is_an_error_naming_hook_file_and_limit() {
    let t = hook_tree("head -c 3000000 /dev/zero | tr '\\0' ' ' > \"$VALUES_JSON_PATCH_PATH\"");
    let err = failed_with(&t.render(&["--hook-max-file-size", "1Mi"], &[]), 1);
    assert!(
        err.contains(
            "hook 'hooks/hook.sh' (binding beforeHelm): cannot read VALUES_JSON_PATCH_PATH ("
        ) && err.contains("values.json-patch): is larger than the 1 MiB limit"),
        "{err}"
    );
}

#[test]
fn values_patch_replaced_by_a_fifo_is_refused_without_blocking() {
    let t = hook_tree("rm -f \"$VALUES_JSON_PATCH_PATH\"; mkfifo \"$VALUES_JSON_PATCH_PATH\"");
    let r = t.render(&[], &[]);
    let err = failed_with(&r, 1);
    assert!(
        err.contains("cannot read VALUES_JSON_PATCH_PATH (")
            && err.contains("): is a FIFO, not a regular file"),
        "{err}"
    );
}

#[test]
fn hook_config_output_larger_than_the_limit_is_an_error() {
    let t = Tree::new(&["chatty"]);
    t.module("010-chatty", "chatty");
    t.write(
        "modules/010-chatty/hooks/hook.sh",
        "#!/bin/sh\nhead -c 2000000 /dev/zero | tr '\\0' ' '\necho 'configVersion: v1'\n",
        true,
    );
    let err = failed_with(&t.render(&[], &[("ANTIOPA_HOOK_MAX_FILE_SIZE", "1Mi")]), 1);
    assert!(
        err.contains("hook 'hooks/hook.sh': cannot get its config ('--config'): it printed more than the 1 MiB limit (951442 bytes more dropped)"),
        "{err}"
    );
}

#[test]
fn config_and_snapshots_files_are_read_with_a_cap_and_never_from_a_fifo() {
    let t = Tree::new(&[]);
    let st = Command::new("mkfifo")
        .arg(t.path().join("snap.fifo"))
        .status()
        .expect("mkfifo");
    assert!(st.success());
    let err = failed_with(&t.render(&["--snapshots", "snap.fifo"], &[]), 1);
    assert!(
        err.contains("snap.fifo: snapshots file is a FIFO, not a regular file"),
        "{err}"
    );
    // 17 MB of YAML comments: over the 16 MiB cap for a ConfigMap file.
    let big = t.path().join("config.yaml");
    let f = std::fs::File::create(&big).expect("create");
    f.set_len(17_000_000).expect("grow");
    let err = failed_with(&t.render(&["--config", "config.yaml"], &[]), 1);
    assert!(
        err.contains("config.yaml: config file is larger than the 16 MiB limit"),
        "{err}"
    );
}

/// A module whose hook watches ConfigMaps through `filter`, and a
/// snapshots file with one ConfigMap.
fn jq_tree(filter: &str) -> Tree {
    let t = Tree::new(&["watcher"]);
    t.module("010-watcher", "watcher");
    t.write(
        "modules/010-watcher/hooks/watch.sh",
        &format!(
            "#!/bin/sh\nif [ \"$1\" = --config ]; then cat <<'YAML'\nconfigVersion: v1\nbeforeHelm: 1\nkubernetes:\n- name: cms\n  kind: ConfigMap\n  jqFilter: '{filter}'\nYAML\nexit 0; fi\n"
        ),
        true,
    );
    t.write(
        "snapshots.yaml",
        "cms:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: a, namespace: ns}\n  data: {k: v}\n",
        false,
    );
    t
}

fn jq_render(filter: &str) -> (RunResult, String) {
    let t = jq_tree(filter);
    let r = t.render(
        &["--snapshots", "snapshots.yaml", "--jq-timeout", "2s"],
        &[],
    );
    let err = failed_with(&r, 1);
    assert!(
        err.contains(&format!(
            "binding 'cms': jqFilter on ns/a: jq filter `{filter}`: "
        )),
        "{err}"
    );
    (r, err)
}

#[test]
fn jq_filter_overflowing_the_stack_crashes_the_worker_not_antiopa() {
    let (_, err) = jq_render("def f: [f]; f");
    assert!(
        err.contains("the evaluation crashed (stack overflow or memory limit; "),
        "{err}"
    );
}

#[test]
fn jq_filter_that_never_ends_times_out() {
    let (r, err) = jq_render("def f: f; f");
    assert!(err.contains("timed out after 2s"), "{err}");
    assert!(r.elapsed < Duration::from_secs(30), "{:?}", r.elapsed);
}

#[test]
fn jq_filter_exhausting_memory_is_stopped() {
    let (_, err) = jq_render("[range(1e8)]");
    assert!(
        err.contains("the evaluation crashed (stack overflow or memory limit; ")
            || err.contains("timed out after 2s"),
        "{err}"
    );
}

#[test]
fn benign_jq_filters_still_work_through_the_worker() {
    let t = jq_tree(".data");
    t.write(
        "modules/010-watcher/hooks/watch.sh",
        "#!/bin/sh\nif [ \"$1\" = --config ]; then cat <<'YAML'\nconfigVersion: v1\nbeforeHelm: 1\nkubernetes:\n- name: cms\n  kind: ConfigMap\n  jqFilter: .data\nYAML\nexit 0; fi\nprintf '[{\"op\":\"add\",\"path\":\"/watcher/seen\",\"value\":%s}]' \"$(cat \"$BINDING_CONTEXT_PATH\")\" > \"$VALUES_JSON_PATCH_PATH\"\n",
        true,
    );
    t.write(
        "modules/010-watcher/templates/seen.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: seen\ndata:\n  seen: {{ .Values.watcher.seen | toJson | quote }}\n",
        false,
    );
    let r = t.render(&["--snapshots", "snapshots.yaml"], &[]);
    succeeded(&r);
    let out = text(&r.stdout);
    assert!(out.contains(r#"\"filterResult\":{\"k\":\"v\"}"#), "{out}");
}

#[test]
fn jq_filter_that_does_not_compile_is_a_config_error_naming_the_hook() {
    let t = jq_tree(".data | (");
    let err = failed_with(&t.render(&["--snapshots", "snapshots.yaml"], &[]), 1);
    assert!(
        err.contains("hook 'hooks/watch.sh': invalid config: invalid kubernetes config [0] jqFilter: expected"),
        "{err}"
    );
}

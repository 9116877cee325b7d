//! The Helm compatibility suite: every case under `compat/cases/` is rendered with
//! `antiopa template rel chart --namespace ns1 <args>` from the case directory, exactly as
//! `compat/regen.sh` ran the real helm, and must reproduce helm's stdout byte for byte (or, for
//! cases where helm failed, its stderr text and exit code).
//!
//! Failures listed in `compat/known-failures.txt` are reported but tolerated, and only while each
//! listed case is documented in `compat/COMPATIBILITY.md`; a listed case that passes fails the
//! test too, so the list can only shrink and nothing is hidden silently.
//! `COMPAT_FILTER=substr` runs only the cases whose name contains `substr`;
//! `COMPAT_TIMEOUT_SECS` sets the per-case time limit (default 60); `ANTIOPA_BIN` runs another
//! binary instead of the one cargo built (with helm itself every case must pass).

use crate::common;

use crate::common::{RunResult, diff_excerpt, isolate_env, repo_root, run_with_timeout, say};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// What helm did for a case, as recorded by regen.sh.
enum Oracle {
    Stdout(Vec<u8>),
    Failure { stderr: Vec<u8>, code: i32 },
}

struct Case {
    name: String,
    dir: PathBuf,
    args: Vec<String>,
    oracle: Result<Oracle, String>,
}

fn load_case(dir: &Path) -> Case {
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let args = std::fs::read_to_string(dir.join("args"))
        .map(|t| {
            t.lines()
                .filter(|l| !l.is_empty())
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    let read = |f: &str| std::fs::read(dir.join(f)).ok();
    let oracle = match (
        read("expected.out"),
        read("expected.err"),
        read("expected.code"),
    ) {
        (Some(out), None, None) => Ok(Oracle::Stdout(out)),
        (None, Some(err), Some(code)) => String::from_utf8_lossy(&code)
            .trim()
            .parse::<i32>()
            .map(|code| Oracle::Failure { stderr: err, code })
            .map_err(|e| format!("bad expected.code: {e}")),
        _ => Err(
            "needs exactly expected.out, or expected.err + expected.code; run compat/regen.sh"
                .to_string(),
        ),
    };
    Case {
        name,
        dir: dir.to_path_buf(),
        args,
        oracle,
    }
}

/// A readable diff of two byte strings that are known to differ (byte-exact comparison; the
/// text diff is only for people, so invalid UTF-8 is shown lossily and pointed out).
fn bytes_diff(want: &[u8], got: &[u8], max_lines: usize) -> String {
    let (w, g) = (String::from_utf8_lossy(want), String::from_utf8_lossy(got));
    if w == g {
        let at = want
            .iter()
            .zip(got)
            .position(|(a, b)| a != b)
            .unwrap_or(want.len().min(got.len()));
        return format!("    the texts differ only in invalid UTF-8 bytes, first at byte {at}\n");
    }
    diff_excerpt(&w, &g, max_lines)
}

/// Compares one render with the oracle; `Err` carries the report for a failure.
fn check(case: &Case, got: &RunResult) -> Result<(), String> {
    let oracle = case.oracle.as_ref().map_err(|e| e.clone())?;
    let stderr = String::from_utf8_lossy(&got.stderr);
    match oracle {
        Oracle::Stdout(want) => {
            if got.code != Some(0) {
                return Err(format!(
                    "helm succeeded, antiopa: {}; stderr:\n    {}",
                    got.describe_exit(),
                    common::clip(stderr.trim(), 600).replace('\n', "\n    ")
                ));
            }
            if got.stdout != *want {
                return Err(format!(
                    "stdout differs:\n{}",
                    bytes_diff(want, &got.stdout, 16)
                ));
            }
        }
        Oracle::Failure { stderr: want, code } => {
            if got.code != Some(*code) {
                return Err(format!(
                    "helm failed with exit code {code}, antiopa: {}; helm's stderr:\n    {}\n  antiopa's stderr:\n    {}",
                    got.describe_exit(),
                    common::clip(String::from_utf8_lossy(want).trim(), 400).replace('\n', "\n    "),
                    common::clip(stderr.trim(), 400).replace('\n', "\n    ")
                ));
            }
            if got.stderr != *want {
                return Err(format!(
                    "stderr differs:\n{}",
                    bytes_diff(want, &got.stderr, 12)
                ));
            }
        }
    }
    Ok(())
}

fn render(bin: &Path, case: &Case, home: &Path, limit: Duration) -> Result<RunResult, String> {
    let mut cmd = Command::new(bin);
    cmd.current_dir(&case.dir)
        .args(["template", "rel", "chart", "--namespace", "ns1"])
        .args(&case.args);
    isolate_env(&mut cmd, home);
    run_with_timeout(&mut cmd, limit).map_err(|e| format!("cannot run {}: {e}", bin.display()))
}

/// Names from known-failures.txt (blank lines and `#` comments ignored).
fn known_failures(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| l.split('#').next().unwrap_or("").trim().to_string())
        .filter(|l| !l.is_empty())
        .collect()
}

#[test]
fn compat_cases_match_helm() {
    let root = repo_root().join("compat");
    let bin = common::antiopa_bin(env!("CARGO_BIN_EXE_antiopa"));
    let filter = std::env::var("COMPAT_FILTER").unwrap_or_default();
    let limit = Duration::from_secs(
        std::env::var("COMPAT_TIMEOUT_SECS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(60),
    );

    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root.join("cases"))
        .expect("compat/cases is part of the repository")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    let cases: Vec<Case> = dirs
        .iter()
        .map(|d| load_case(d))
        .filter(|c| c.name.contains(&filter))
        .collect();
    assert!(!cases.is_empty(), "no compat cases match {filter:?}");

    // The escape hatch must stay honest: every entry names a real case and is explained.
    let known = known_failures(&root.join("known-failures.txt"));
    let compat_doc = std::fs::read_to_string(root.join("COMPATIBILITY.md")).unwrap_or_default();
    let all_names: BTreeSet<String> = dirs
        .iter()
        .filter_map(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
        .collect();
    let mut problems = Vec::new();
    for k in &known {
        if !all_names.contains(k) {
            problems.push(format!("known-failures.txt names {k}, which is not a case"));
        }
        if !compat_doc.contains(k.as_str()) {
            problems.push(format!(
                "known-failures.txt names {k}, but COMPATIBILITY.md does not explain it"
            ));
        }
    }

    // Render on a few threads; results are kept in case order for a stable report.
    let home = tempfile::tempdir().expect("temp dir for HELM_*_HOME");
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Result<(), String>>>> =
        Mutex::new((0..cases.len()).map(|_| None).collect());
    let workers = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2)
        .clamp(1, 4);
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    let Some(case) = cases.get(i) else { break };
                    let verdict =
                        render(&bin, case, home.path(), limit).and_then(|got| check(case, &got));
                    if let Ok(mut r) = results.lock() {
                        r[i] = Some(verdict);
                    }
                }
            });
        }
    });
    let results = results.into_inner().unwrap_or_default();

    let (mut passed, mut failed, mut tolerated) = (0usize, 0usize, 0usize);
    let mut report = String::new();
    for (case, verdict) in cases.iter().zip(results) {
        let listed = known.contains(&case.name);
        match verdict.unwrap_or_else(|| Err("not run".to_string())) {
            Ok(()) if listed => {
                failed += 1;
                report.push_str(&format!(
                    "FIXED {}: passes now; remove it from compat/known-failures.txt (and COMPATIBILITY.md)\n",
                    case.name
                ));
            }
            Ok(()) => passed += 1,
            Err(why) if listed => {
                tolerated += 1;
                report.push_str(&format!(
                    "known {}: {}\n",
                    case.name,
                    why.lines().next().unwrap_or("")
                ));
            }
            Err(why) => {
                failed += 1;
                report.push_str(&format!("FAIL {}: {}\n", case.name, why));
            }
        }
    }
    for p in &problems {
        report.push_str(&format!("ERROR {p}\n"));
    }
    say(&report);
    if tolerated > 0 {
        say(&format!(
            "compat: {tolerated} known failure(s) tolerated (compat/known-failures.txt)"
        ));
    }
    say(&format!("compat: {passed} passed, {failed} failed"));
    assert!(
        failed == 0 && problems.is_empty(),
        "compat: {failed} case(s) differ from helm{}; see the report above",
        if problems.is_empty() {
            ""
        } else {
            " and known-failures.txt is inconsistent"
        }
    );
}

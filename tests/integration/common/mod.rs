//! Helpers shared by the integration tests that drive the `antiopa` binary against helm's
//! recorded output (tests/integration/compat.rs, tests/integration/corpus.rs) and by the template benchmark: running a
//! child process with a time limit, helm-like isolated environments, locating the corpus, and
//! short, readable diffs of mismatching outputs.
#![allow(dead_code)] // each test crate uses a different subset

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What a finished (or killed) child process produced.
pub struct RunResult {
    /// Exit code; `None` when killed by a signal or by the time limit.
    pub code: Option<i32>,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub timed_out: bool,
    pub elapsed: Duration,
}

impl RunResult {
    /// One line describing how the process ended, for failure reports.
    pub fn describe_exit(&self) -> String {
        match (self.timed_out, self.code) {
            (true, _) => format!("killed after {:.1}s time limit", self.elapsed.as_secs_f64()),
            (false, Some(c)) => format!("exit code {c}"),
            (false, None) => "killed by a signal".to_string(),
        }
    }
}

/// Runs `cmd` to completion with piped stdout/stderr, killing it after `limit`.
/// Errors only when the program cannot be started at all.
pub fn run_with_timeout(cmd: &mut Command, limit: Duration) -> std::io::Result<RunResult> {
    let start = Instant::now();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    // Drain both pipes on their own threads so a chatty child never blocks on a full pipe.
    let mut out_pipe = child.stdout.take();
    let mut err_pipe = child.stderr.take();
    let out_t = std::thread::spawn(move || {
        let mut v = Vec::new();
        if let Some(p) = out_pipe.as_mut() {
            let _ = p.read_to_end(&mut v);
        }
        v
    });
    let err_t = std::thread::spawn(move || {
        let mut v = Vec::new();
        if let Some(p) = err_pipe.as_mut() {
            let _ = p.read_to_end(&mut v);
        }
        v
    });
    // Wait for the exit on its own thread, so that the end time is exact
    // (polling every few milliseconds added up to a poll interval to every
    // run, which the benchmark's few-millisecond runs cannot afford). At the
    // limit the child is killed by pid; one that exits in that instant is
    // reaped, and its pid is not handed out again that soon.
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let st = child.wait();
        let _ = tx.send(Instant::now());
        st
    });
    let (end, timed_out) = match rx.recv_timeout(limit) {
        Ok(end) => (end, false),
        Err(_) => {
            // The shell's builtin `kill`: a `kill` program may not be installed.
            let _ = Command::new("sh")
                .arg("-c")
                .arg(format!("kill -9 {pid}"))
                .status();
            (Instant::now(), true)
        }
    };
    let status = waiter
        .join()
        .map_err(|_| std::io::Error::other("waiter thread panicked"))??;
    let elapsed = end.saturating_duration_since(start);
    let stdout = out_t.join().unwrap_or_default();
    let stderr = err_t.join().unwrap_or_default();
    Ok(RunResult {
        code: if timed_out { None } else { status.code() },
        stdout,
        stderr,
        timed_out,
        elapsed,
    })
}

/// Gives `cmd` the environment the oracle ran in: empty private HELM_*_HOME directories under
/// `home` and no kubeconfig, so neither helm nor antiopa can pick up local state.
pub fn isolate_env(cmd: &mut Command, home: &Path) {
    for (var, sub) in [
        ("HELM_CACHE_HOME", "cache"),
        ("HELM_CONFIG_HOME", "config"),
        ("HELM_DATA_HOME", "data"),
    ] {
        let d = home.join(sub);
        let _ = std::fs::create_dir_all(&d);
        cmd.env(var, d);
    }
    cmd.env("KUBECONFIG", "/dev/null");
    cmd.env_remove("HELM_DEBUG");
}

/// The renderer under test: `$ANTIOPA_BIN` if set (e.g. a release build, or helm itself to check
/// the harness), else `default` (the binary cargo built for this test).
pub fn antiopa_bin(default: &str) -> PathBuf {
    match std::env::var_os("ANTIOPA_BIN") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => PathBuf::from(default),
    }
}

/// The release build the benchmarks measure: `$ANTIOPA_BIN` if set, else `cargo build
/// --release`'s.
pub fn release_bin() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("target"));
    antiopa_bin(&target.join("release/antiopa").to_string_lossy())
}

/// Repository root (where Cargo.toml is).
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The shared corpus: `$ANTIOPA_CORPUS`, else `../shared/corpus` next to the repository.
pub fn corpus_dir() -> PathBuf {
    match std::env::var_os("ANTIOPA_CORPUS") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => repo_root().join("../shared/corpus"),
    }
}

/// True when running under CI (`CI=true`), where missing inputs are failures, not skips.
pub fn in_ci() -> bool {
    std::env::var("CI")
        .map(|v| v == "true" || v == "1")
        .unwrap_or(false)
}

/// A row of `cases.tsv` of the corpus.
#[derive(Debug, Clone)]
pub struct CorpusCase {
    pub name: String,
    pub chart_dir: String,
    pub release: String,
    pub namespace: String,
    /// Values file relative to the corpus dir, `None` for `-`.
    pub values: Option<String>,
    pub nondeterministic: bool,
    /// `true` when helm must fail (`expect` = `error`).
    pub expect_error: bool,
}

impl CorpusCase {
    /// The `template` arguments exactly as the oracle was invoked (run from the corpus dir).
    pub fn template_args(&self) -> Vec<String> {
        let mut a = vec![
            "template".to_string(),
            self.release.clone(),
            self.chart_dir.clone(),
            "--namespace".to_string(),
            self.namespace.clone(),
        ];
        if let Some(v) = &self.values {
            a.push("--values".to_string());
            a.push(v.clone());
        }
        a
    }
}

/// Reads `cases.tsv` (tab separated, header line, `#` comments) by column name.
pub fn read_corpus_cases(corpus: &Path) -> Result<Vec<CorpusCase>, String> {
    let path = corpus.join("cases.tsv");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut header: Option<Vec<String>> = None;
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = line.split('\t').collect();
        let Some(h) = &header else {
            header = Some(fields.iter().map(|s| s.to_string()).collect());
            continue;
        };
        let get = |col: &str| -> Result<String, String> {
            let i = h
                .iter()
                .position(|c| c == col)
                .ok_or_else(|| format!("{}: no column {col}", path.display()))?;
            fields
                .get(i)
                .map(|s| s.to_string())
                .ok_or_else(|| format!("{}:{}: missing field {col}", path.display(), n + 1))
        };
        let values = get("values")?;
        out.push(CorpusCase {
            name: get("case")?,
            chart_dir: get("chart_dir")?,
            release: get("release")?,
            namespace: get("namespace")?,
            values: (values != "-").then_some(values),
            nondeterministic: get("nondeterministic")? == "yes",
            expect_error: get("expect").map(|e| e == "error").unwrap_or(false),
        });
    }
    Ok(out)
}

/// A short unified diff (expected → actual) of at most `max_lines` lines.
pub fn diff_excerpt(expected: &str, actual: &str, max_lines: usize) -> String {
    let diff = similar::TextDiff::from_lines(expected, actual);
    let text = diff
        .unified_diff()
        .context_radius(2)
        .header("expected (helm)", "actual (antiopa)")
        .to_string();
    let mut out = String::new();
    let mut lines = text.lines();
    for line in lines.by_ref().take(max_lines) {
        out.push_str("    ");
        out.push_str(&clip(line, 240));
        out.push('\n');
    }
    if lines.next().is_some() {
        out.push_str("    …\n");
    }
    out
}

/// The first line where two texts differ: (1-based line number, expected line, actual line).
pub fn first_difference(expected: &str, actual: &str) -> Option<(usize, String, String)> {
    let mut e = expected.split_inclusive('\n');
    let mut a = actual.split_inclusive('\n');
    let mut n = 0;
    loop {
        n += 1;
        match (e.next(), a.next()) {
            (None, None) => return None,
            (x, y) if x == y => continue,
            (x, y) => {
                let show = |s: Option<&str>| match s {
                    None => "<end of output>".to_string(),
                    Some(l) => clip(&format!("{l:?}"), 240),
                };
                return Some((n, show(x), show(y)));
            }
        }
    }
}

/// Cuts `s` to at most `max` characters, marking the cut.
pub fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut c: String = s.chars().take(max).collect();
        c.push('…');
        c
    }
}

/// Writes straight to the process's stderr, bypassing libtest's output capture, so summaries and
/// failure reports show up even when the test passes.
pub fn say(msg: &str) {
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(msg.as_bytes());
    if !msg.ends_with('\n') {
        let _ = err.write_all(b"\n");
    }
}

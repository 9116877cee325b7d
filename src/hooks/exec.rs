//! Running hook processes: `hook --config`, and a binding run with
//! addon-operator's file protocol (`ShellHook.Execute` and
//! `prepareTmpFilesForHookRun` in `models/hooks/kind/shellhook.go`).
//!
//! Each run gets its own directory under the temp dir holding the files the
//! `*_PATH` variables name; it is removed afterwards unless
//! `keep_tmp_files` (`DEBUG_KEEP_TMP_FILES`) is set. The hook runs in its own
//! process group so a timeout kills everything it started; captured output is
//! bounded, and stderr lines are forwarded to the caller as they arrive.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use std::os::unix::process::{CommandExt, ExitStatusExt};

/// Options for running hook processes.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// Where per-run directories are made (`ADDON_OPERATOR_TMP_DIR`).
    pub tmp_dir: PathBuf,
    /// Kill the hook's process group after this long; `None` = no limit.
    pub timeout: Option<Duration>,
    /// Keep the per-run files (`DEBUG_KEEP_TMP_FILES`).
    pub keep_tmp_files: bool,
    /// At most this many bytes of stdout and of stderr are kept.
    pub max_output_bytes: usize,
    /// Extra environment for the hook (the operator's own is inherited).
    pub env: Vec<(String, String)>,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            tmp_dir: std::env::temp_dir().join("antiopa"),
            timeout: Some(Duration::from_secs(600)),
            keep_tmp_files: std::env::var("DEBUG_KEEP_TMP_FILES")
                .is_ok_and(|v| matches!(v.as_str(), "yes" | "true" | "1")),
            max_output_bytes: 1 << 20,
            env: Vec::new(),
        }
    }
}

/// A finished process.
#[derive(Clone, Debug)]
pub struct ProcessOutput {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
    /// Whether stdout or stderr was cut at `max_output_bytes`.
    pub truncated: bool,
    pub duration: Duration,
}

impl ProcessOutput {
    /// "exit status 1" / "signal: killed", as Go's `exec.ExitError` prints.
    pub fn status_text(&self) -> String {
        status_text(&self.status)
    }
}

fn status_text(s: &ExitStatus) -> String {
    if let Some(code) = s.code() {
        return format!("exit status {code}");
    }
    match s.signal() {
        Some(9) => "signal: killed".into(),
        Some(15) => "signal: terminated".into(),
        Some(n) => format!("signal: {n}"),
        None => "unknown exit status".into(),
    }
}

/// Why a process produced no result.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProcessError {
    #[error("cannot start {path}: {message}")]
    Spawn { path: String, message: String },
    #[error("timed out after {0:?}; its process group was killed")]
    Timeout(Duration),
}

fn read_bounded(mut r: impl Read, limit: usize) -> (Vec<u8>, bool) {
    let mut kept = Vec::new();
    let mut truncated = false;
    let mut buf = [0u8; 8192];
    loop {
        match r.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = limit.saturating_sub(kept.len());
                if n > room {
                    truncated = true;
                }
                kept.extend_from_slice(&buf[..n.min(room)]);
            }
        }
    }
    (kept, truncated)
}

fn kill_group(pid: u32) {
    if let Ok(pid) = i32::try_from(pid) {
        // ESRCH (group already gone) is fine.
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}

/// Runs `cmd` in its own process group with stdin closed, capturing stdout
/// and stderr (each bounded), handing every stderr line to `on_stderr` as it
/// arrives. Any process the command left behind in its group is killed when
/// it exits, so the pipes close and the call returns.
pub fn run_process(
    mut cmd: Command,
    timeout: Option<Duration>,
    max_output_bytes: usize,
    on_stderr: &mut dyn FnMut(&str),
) -> Result<ProcessOutput, ProcessError> {
    let program = cmd.get_program().to_string_lossy().into_owned();
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let start = Instant::now();
    let mut child = cmd.spawn().map_err(|e| ProcessError::Spawn {
        path: program,
        message: e.to_string(),
    })?;
    let pid = child.id();
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let out_thread = thread::spawn(move || match stdout {
        Some(s) => read_bounded(s, max_output_bytes),
        None => (Vec::new(), false),
    });
    let (tx, rx) = mpsc::channel::<String>();
    let err_thread = thread::spawn(move || {
        let mut kept = Vec::new();
        let mut truncated = false;
        if let Some(s) = stderr {
            let mut reader = BufReader::new(s);
            let mut line = Vec::new();
            loop {
                line.clear();
                match reader.read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        let room = max_output_bytes.saturating_sub(kept.len());
                        if line.len() > room {
                            truncated = true;
                        }
                        kept.extend_from_slice(&line[..line.len().min(room)]);
                        let text = String::from_utf8_lossy(&line);
                        let _ = tx.send(text.trim_end_matches(['\n', '\r']).to_string());
                    }
                }
            }
        }
        (kept, truncated)
    });

    let deadline = timeout.map(|t| start + t);
    let mut timed_out = false;
    let status = loop {
        loop {
            match rx.recv_timeout(Duration::from_millis(10)) {
                Ok(line) => on_stderr(&line),
                Err(mpsc::RecvTimeoutError::Timeout) => break,
                // stderr closed while the process runs on: poll gently.
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    thread::sleep(Duration::from_millis(10));
                    break;
                }
            }
        }
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) => {}
            Err(_) => break None,
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            kill_group(pid);
            timed_out = true;
            break child.wait().ok();
        }
    };
    // Background children of the hook would hold the pipes open forever.
    kill_group(pid);
    let (out, out_trunc) = out_thread.join().unwrap_or_default();
    let (err, err_trunc) = err_thread.join().unwrap_or_default();
    for line in rx.try_iter() {
        on_stderr(&line);
    }
    if timed_out {
        return Err(ProcessError::Timeout(timeout.unwrap_or_default()));
    }
    let status = status.ok_or_else(|| ProcessError::Spawn {
        path: cmd.get_program().to_string_lossy().into_owned(),
        message: "cannot wait for the process".into(),
    })?;
    Ok(ProcessOutput {
        status,
        stdout: String::from_utf8_lossy(&out).into_owned(),
        stderr: String::from_utf8_lossy(&err).into_owned(),
        truncated: out_trunc || err_trunc,
        duration: start.elapsed(),
    })
}

/// The files of one run, by environment variable.
pub(crate) struct RunFiles {
    pub dir: PathBuf,
    pub keep: bool,
}

impl RunFiles {
    pub const BINDING_CONTEXT: &'static str = "BINDING_CONTEXT_PATH";
    pub const VALUES: &'static str = "VALUES_PATH";
    pub const CONFIG_VALUES: &'static str = "CONFIG_VALUES_PATH";
    pub const VALUES_PATCH: &'static str = "VALUES_JSON_PATCH_PATH";
    pub const CONFIG_VALUES_PATCH: &'static str = "CONFIG_VALUES_JSON_PATCH_PATH";
    pub const METRICS: &'static str = "METRICS_PATH";
    pub const KUBERNETES_PATCH: &'static str = "KUBERNETES_PATCH_PATH";
    pub const RETURN_VALUES: &'static str = "RETURN_VALUES_PATH";

    const ALL: [(&'static str, &'static str); 8] = [
        (Self::BINDING_CONTEXT, "binding-context.json"),
        (Self::VALUES, "values.json"),
        (Self::CONFIG_VALUES, "config-values.json"),
        (Self::VALUES_PATCH, "values.json-patch"),
        (Self::CONFIG_VALUES_PATCH, "config-values.json-patch"),
        (Self::METRICS, "metrics.json"),
        (Self::KUBERNETES_PATCH, "kubernetes-patch"),
        (Self::RETURN_VALUES, "return-values.yaml"),
    ];

    /// Makes `<tmp>/<hook>-<uuid>/` with the input files written and the
    /// output files empty.
    pub fn create(
        tmp: &Path,
        hook: &str,
        keep: bool,
        inputs: [(&str, &str); 3],
    ) -> std::io::Result<RunFiles> {
        let safe: String = hook
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '-'
                }
            })
            .collect();
        let dir = tmp.join(format!("{safe}-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir)?;
        let files = RunFiles { dir, keep };
        for (var, _) in Self::ALL {
            let content = inputs
                .iter()
                .find(|(v, _)| *v == var)
                .map(|(_, c)| *c)
                .unwrap_or("");
            std::fs::write(files.path(var), content)?;
        }
        Ok(files)
    }

    pub fn path(&self, var: &str) -> PathBuf {
        let name = Self::ALL
            .iter()
            .find(|(v, _)| *v == var)
            .map(|(_, f)| *f)
            .unwrap_or("unknown");
        self.dir.join(name)
    }

    pub fn env(&self) -> Vec<(&'static str, PathBuf)> {
        Self::ALL.iter().map(|(v, _)| (*v, self.path(v))).collect()
    }

    pub fn read(&self, var: &str) -> std::io::Result<String> {
        let bytes = std::fs::read(self.path(var))?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }
}

impl Drop for RunFiles {
    fn drop(&mut self) {
        if !self.keep {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

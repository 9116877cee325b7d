//! Running hook processes: `hook --config`, and a binding run with
//! addon-operator's file protocol (`ShellHook.Execute` and
//! `prepareTmpFilesForHookRun` in `models/hooks/kind/shellhook.go`).
//!
//! Each run gets its own directory under the temp dir holding the files the
//! `*_PATH` variables name; it is removed afterwards unless
//! `keep_tmp_files` (`DEBUG_KEEP_TMP_FILES`) is set. The hook runs in its own
//! process group so a timeout kills everything it started. Nothing a hook
//! produces is held without a bound: stdout and stderr are read in fixed
//! chunks and kept up to a limit (the rest counted and dropped), stderr
//! lines are forwarded to the caller as they arrive, each cut to
//! [`MAX_LINE_BYTES`], through a bounded channel, and the files a hook
//! writes are read with [`read_capped`], which refuses FIFOs, devices and
//! files over the limit instead of blocking or exhausting memory.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use std::os::unix::process::{CommandExt, ExitStatusExt};

use super::jq_sandbox::JqRunner;

/// How long a hook or script may run when nothing else is configured.
/// Neither addon-operator nor shell-operator limits a hook's run time (their
/// executors run hooks and `enabled` scripts under a context that is never
/// cancelled), so there is no upstream default to copy; ten minutes keeps a
/// hung hook from blocking a run forever while leaving slow ones room.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

/// Default for [`RunOptions::max_file_bytes`]: far above any real values
/// patch or `--config` output, far below what would hurt the process.
pub const DEFAULT_MAX_FILE_BYTES: usize = 16 << 20;

/// A forwarded stderr line is cut to this many bytes (shell-operator cuts
/// its log lines at 10 000 characters for the same reason).
pub const MAX_LINE_BYTES: usize = 4096;

/// Stderr lines waiting for the caller; when it falls behind, the reader
/// stops reading and the hook waits on its full pipe.
const LINE_QUEUE: usize = 256;

/// Options for running hook processes.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// Where per-run directories are made (`ADDON_OPERATOR_TMP_DIR`).
    pub tmp_dir: PathBuf,
    /// Kill the hook's process group after this long; `None` = no limit.
    /// Applies to every process: `--config` runs, binding runs, `enabled`
    /// scripts and the original layout's `initial_values`.
    pub timeout: Option<Duration>,
    /// Keep the per-run files (`DEBUG_KEEP_TMP_FILES`).
    pub keep_tmp_files: bool,
    /// At most this many bytes of a binding run's stdout and of any
    /// process's stderr are kept.
    pub max_output_bytes: usize,
    /// At most this many bytes are read of each file a hook writes (values
    /// patches, metrics, kubernetes patches, returned values, `enabled`
    /// results) and of what `--config` and `initial_values` print; more is
    /// an error naming the hook and the file.
    pub max_file_bytes: usize,
    /// Extra environment for the hook (the operator's own is inherited).
    pub env: Vec<(String, String)>,
    /// Where kubernetes bindings' `jqFilter`s run (in a child process for
    /// the CLI; see [`JqRunner`]).
    pub jq: JqRunner,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            tmp_dir: std::env::temp_dir().join("antiopa"),
            timeout: Some(DEFAULT_TIMEOUT),
            keep_tmp_files: std::env::var("DEBUG_KEEP_TMP_FILES")
                .is_ok_and(|v| matches!(v.as_str(), "yes" | "true" | "1")),
            max_output_bytes: 1 << 20,
            max_file_bytes: DEFAULT_MAX_FILE_BYTES,
            env: Vec::new(),
            jq: JqRunner::default(),
        }
    }
}

/// How much of a process's output [`run_process`] keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutputLimits {
    pub stdout: usize,
    pub stderr: usize,
}

impl OutputLimits {
    /// A binding run: stdout and stderr are logs, `max_output_bytes` each.
    pub fn logs(opts: &RunOptions) -> Self {
        OutputLimits {
            stdout: opts.max_output_bytes,
            stderr: opts.max_output_bytes,
        }
    }

    /// `--config` and `initial_values`: stdout is data, read up to
    /// `max_file_bytes`.
    pub fn data(opts: &RunOptions) -> Self {
        OutputLimits {
            stdout: opts.max_file_bytes,
            stderr: opts.max_output_bytes,
        }
    }
}

/// A finished process.
#[derive(Clone, Debug)]
pub struct ProcessOutput {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
    /// Whether stdout or stderr was cut at its limit.
    pub truncated: bool,
    /// Bytes of stdout beyond the limit, read and dropped.
    pub stdout_dropped: u64,
    /// Bytes of stderr beyond the limit, read and dropped.
    pub stderr_dropped: u64,
    pub duration: Duration,
}

impl ProcessOutput {
    /// "exit status 1" / "signal: killed", as Go's `exec.ExitError` prints.
    pub fn status_text(&self) -> String {
        status_text(&self.status)
    }

    /// The status with the last line of stderr, for failure messages:
    /// "exit status 1: cannot reach the API" (the whole stderr went to the
    /// caller line by line already).
    pub fn failure_text(&self) -> String {
        let mut s = self.status_text();
        if let Some(last) = self.stderr.lines().rev().find(|l| !l.trim().is_empty()) {
            s.push_str(": ");
            s.push_str(&cut_line(last.trim().as_bytes(), 0));
        }
        if self.stderr_dropped > 0 {
            s.push_str(&format!(
                " ({} of stderr beyond the limit dropped)",
                fmt_count(self.stderr_dropped)
            ));
        }
        s
    }

    /// A note for the caller's stderr when output was dropped, else `None`.
    pub fn dropped_note(&self) -> Option<String> {
        let part = |what: &str, n: u64| (n > 0).then(|| format!("{} of {what}", fmt_count(n)));
        let parts: Vec<String> = [
            part("stdout", self.stdout_dropped),
            part("stderr", self.stderr_dropped),
        ]
        .into_iter()
        .flatten()
        .collect();
        (!parts.is_empty()).then(|| {
            format!(
                "warning: output beyond the capture limit dropped: {}",
                parts.join(", ")
            )
        })
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

/// `16 MiB`, `1 KiB`, else `123 bytes`: limits read best in the unit they
/// were set in.
pub fn fmt_bytes(n: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
    for (size, unit) in UNITS {
        if n >= size && n.is_multiple_of(size) {
            return format!("{} {unit}", n / size);
        }
    }
    if n == 1 {
        "1 byte".into()
    } else {
        format!("{n} bytes")
    }
}

/// A count of bytes, exact (`123456 bytes`).
pub fn fmt_count(n: u64) -> String {
    if n == 1 {
        "1 byte".into()
    } else {
        format!("{n} bytes")
    }
}

/// A duration as limits are written (`600s`, `1.5s`, `250ms`).
pub fn fmt_duration(d: Duration) -> String {
    format!("{d:?}")
}

/// Why a process produced no result.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProcessError {
    #[error("cannot start {path}: {message}")]
    Spawn { path: String, message: String },
    #[error("timed out after {}; its process group was killed", fmt_duration(*.0))]
    Timeout(Duration),
}

/// Reads `r` to its end in fixed chunks, keeping the first `limit` bytes;
/// returns them and how many more were read and dropped.
fn read_bounded(mut r: impl Read, limit: usize) -> (Vec<u8>, u64) {
    let mut kept = Vec::new();
    let mut dropped = 0u64;
    let mut buf = [0u8; 8192];
    loop {
        match r.read(&mut buf) {
            Ok(0) => break,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
            Ok(n) => {
                let room = limit.saturating_sub(kept.len());
                let take = n.min(room);
                kept.extend_from_slice(&buf[..take]);
                dropped += (n - take) as u64;
            }
        }
    }
    (kept, dropped)
}

/// `line` (without its newline) as text, at most `MAX_LINE_BYTES` of it,
/// saying how much was cut (`extra` bytes were never kept at all).
fn cut_line(line: &[u8], extra: u64) -> String {
    let keep = line.len().min(MAX_LINE_BYTES);
    let mut text = String::from_utf8_lossy(&line[..keep]).into_owned();
    let cut = (line.len() - keep) as u64 + extra;
    if cut > 0 {
        text.push_str(&format!("… ({} cut)", fmt_count(cut)));
    }
    text
}

/// The stderr side of [`run_process`]: reads `r` in fixed chunks, keeps
/// the first `limit` bytes, and sends each line (cut to [`MAX_LINE_BYTES`];
/// a line is never buffered beyond that) through `tx`. A receiver gone
/// away only stops the forwarding; the pipe is still drained so the
/// process never blocks on it. Returns the kept bytes and the dropped count.
pub(crate) fn read_stderr(
    mut r: impl Read,
    limit: usize,
    tx: &mpsc::SyncSender<String>,
) -> (Vec<u8>, u64) {
    let mut kept = Vec::new();
    let mut dropped = 0u64;
    let mut line: Vec<u8> = Vec::with_capacity(256);
    let mut line_extra = 0u64;
    let mut forwarding = true;
    let send = |line: &mut Vec<u8>, extra: &mut u64, forwarding: &mut bool| {
        if *forwarding {
            let mut text = cut_line(line, *extra);
            if text.ends_with('\r') {
                text.pop();
            }
            *forwarding = tx.send(text).is_ok();
        }
        line.clear();
        *extra = 0;
    };
    let mut buf = [0u8; 8192];
    loop {
        let n = match r.read(&mut buf) {
            Ok(0) => break,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
            Ok(n) => n,
        };
        let chunk = &buf[..n];
        let room = limit.saturating_sub(kept.len());
        let take = n.min(room);
        kept.extend_from_slice(&chunk[..take]);
        dropped += (n - take) as u64;
        let mut rest = chunk;
        while !rest.is_empty() {
            let (part, done) = match memchr::memchr(b'\n', rest) {
                Some(i) => (&rest[..i], Some(i + 1)),
                None => (rest, None),
            };
            let room = (MAX_LINE_BYTES + 1).saturating_sub(line.len());
            let take = part.len().min(room);
            line.extend_from_slice(&part[..take]);
            line_extra += (part.len() - take) as u64;
            match done {
                Some(i) => {
                    send(&mut line, &mut line_extra, &mut forwarding);
                    rest = &rest[i..];
                }
                None => rest = &[],
            }
        }
    }
    if !line.is_empty() || line_extra > 0 {
        send(&mut line, &mut line_extra, &mut forwarding);
    }
    (kept, dropped)
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
/// and stderr (each bounded by `limits`), handing every stderr line to
/// `on_stderr` as it arrives. Any process the command left behind in its
/// group is killed when it exits, so the pipes close and the call returns.
pub fn run_process(
    mut cmd: Command,
    timeout: Option<Duration>,
    limits: OutputLimits,
    on_stderr: &mut dyn FnMut(&str),
) -> Result<ProcessOutput, ProcessError> {
    let program = cmd.get_program().to_string_lossy().into_owned();
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let start = Instant::now();
    let mut child = cmd.spawn().map_err(|e| ProcessError::Spawn {
        path: program.clone(),
        message: e.to_string(),
    })?;
    let pid = child.id();
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let out_thread = thread::spawn(move || match stdout {
        Some(s) => read_bounded(s, limits.stdout),
        None => (Vec::new(), 0),
    });
    let (tx, rx) = mpsc::sync_channel::<String>(LINE_QUEUE);
    let err_thread = thread::spawn(move || match stderr {
        Some(s) => read_stderr(s, limits.stderr, &tx),
        None => (Vec::new(), 0),
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
            if deadline.is_some_and(|d| Instant::now() >= d) {
                break;
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
    // Drain the line queue before joining: the reader may be waiting for
    // room in it. It ends when the pipe closes, which the kill ensures.
    for line in rx.iter() {
        on_stderr(&line);
    }
    let (out, stdout_dropped) = out_thread.join().unwrap_or_default();
    let (err, stderr_dropped) = err_thread.join().unwrap_or_default();
    if timed_out {
        return Err(ProcessError::Timeout(timeout.unwrap_or_default()));
    }
    let status = status.ok_or_else(|| ProcessError::Spawn {
        path: program,
        message: "cannot wait for the process".into(),
    })?;
    Ok(ProcessOutput {
        status,
        stdout: String::from_utf8_lossy(&out).into_owned(),
        stderr: String::from_utf8_lossy(&err).into_owned(),
        truncated: stdout_dropped > 0 || stderr_dropped > 0,
        stdout_dropped,
        stderr_dropped,
        duration: start.elapsed(),
    })
}

/// Why [`read_capped`] returned no content.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReadCappedError {
    #[error("{0}")]
    Io(String),
    /// A FIFO, socket or device: reading it could block forever or never end.
    #[error("is a {0}, not a regular file")]
    NotRegular(&'static str),
    #[error("is larger than the {} limit", fmt_bytes(*.0 as u64))]
    TooLarge(usize),
}

fn file_kind(ft: rustix::fs::FileType) -> Option<&'static str> {
    use rustix::fs::FileType;
    match ft {
        FileType::RegularFile => None,
        FileType::Directory => Some("directory"),
        FileType::Fifo => Some("FIFO"),
        FileType::Socket => Some("socket"),
        FileType::CharacterDevice => Some("character device"),
        FileType::BlockDevice => Some("block device"),
        _ => Some("special file"),
    }
}

/// Reads a file someone else wrote (a hook, a user) with a size cap: at
/// most `limit` bytes, else [`ReadCappedError::TooLarge`]. It is opened
/// non-blocking and checked to be a regular file (symlinks followed)
/// before anything is read, so a FIFO left in its place never blocks and
/// `/dev/zero` never fills memory.
pub fn read_capped(path: &Path, limit: usize) -> Result<Vec<u8>, ReadCappedError> {
    use rustix::fs::{FileType, Mode, OFlags};
    let io = |e: std::io::Error| ReadCappedError::Io(e.to_string());
    let fd = rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| io(e.into()))?;
    let st = rustix::fs::fstat(&fd).map_err(|e| io(e.into()))?;
    if let Some(kind) = file_kind(FileType::from_raw_mode(st.st_mode)) {
        return Err(ReadCappedError::NotRegular(kind));
    }
    if u64::try_from(st.st_size).unwrap_or(0) > limit as u64 {
        return Err(ReadCappedError::TooLarge(limit));
    }
    let mut buf = Vec::new();
    // A file growing while it is read is still cut at the limit.
    File::from(fd)
        .take(limit as u64 + 1)
        .read_to_end(&mut buf)
        .map_err(io)?;
    if buf.len() > limit {
        return Err(ReadCappedError::TooLarge(limit));
    }
    Ok(buf)
}

impl ReadCappedError {
    /// The message after "<what> ": an I/O error as the OS says it, else
    /// "is a FIFO, …" / "is larger than …" (`what` names the file's role).
    pub fn describe(&self, what: &str) -> String {
        match self {
            ReadCappedError::Io(m) => m.clone(),
            other => format!("{what} {other}"),
        }
    }
}

/// [`read_capped`] as text (invalid UTF-8 replaced), the error naming the file.
pub fn read_capped_text(path: &Path, limit: usize) -> Result<String, String> {
    read_capped(path, limit)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .map_err(|e| format!("{}: {e}", path.display()))
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

    /// The file `var` names, at most `limit` bytes of it (see [`read_capped`]).
    pub fn read(&self, var: &str, limit: usize) -> Result<String, ReadCappedError> {
        read_capped(&self.path(var), limit).map(|b| String::from_utf8_lossy(&b).into_owned())
    }
}

impl Drop for RunFiles {
    fn drop(&mut self) {
        if !self.keep {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that yields `total` bytes of `byte` in `chunk`-sized reads
    /// without ever holding them all, like a pipe from a chatty hook.
    struct Endless {
        left: usize,
        byte: u8,
    }

    impl Read for Endless {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = buf.len().min(self.left);
            buf[..n].fill(self.byte);
            self.left -= n;
            Ok(n)
        }
    }

    #[test]
    fn stderr_reader_keeps_the_limit_and_cuts_long_lines() {
        let (tx, rx) = mpsc::sync_channel(16);
        let reader = Endless {
            left: 50 << 20,
            byte: b'x',
        };
        let (kept, dropped) = read_stderr(reader, 1000, &tx);
        drop(tx);
        assert_eq!(kept.len(), 1000);
        assert_eq!(dropped, (50 << 20) - 1000);
        let lines: Vec<String> = rx.iter().collect();
        assert_eq!(lines.len(), 1);
        assert!(lines[0].starts_with(&"x".repeat(MAX_LINE_BYTES)));
        assert!(
            lines[0].ends_with(&format!("x… ({} bytes cut)", (50 << 20) - MAX_LINE_BYTES)),
            "{}",
            &lines[0][MAX_LINE_BYTES - 5..]
        );
    }

    #[test]
    fn stderr_reader_forwards_lines_and_survives_a_gone_receiver() {
        let (tx, rx) = mpsc::sync_channel(16);
        let (kept, dropped) = read_stderr(&b"one\r\ntwo\nlast"[..], 1 << 20, &tx);
        drop(tx);
        assert_eq!(kept, b"one\r\ntwo\nlast");
        assert_eq!(dropped, 0);
        assert_eq!(rx.iter().collect::<Vec<_>>(), ["one", "two", "last"]);
        // Nobody listening: the pipe is still drained to its end.
        let (tx, rx) = mpsc::sync_channel(1);
        drop(rx);
        let (kept, dropped) = read_stderr(&b"a\nb\nc\n"[..], 2, &tx);
        assert_eq!((kept.as_slice(), dropped), (&b"a\n"[..], 4));
    }

    #[test]
    fn capped_reads_refuse_big_files_fifos_and_devices() {
        let dir = tempfile::tempdir().unwrap();
        let small = dir.path().join("small");
        std::fs::write(&small, "12345").unwrap();
        assert_eq!(read_capped(&small, 5).unwrap(), b"12345");
        assert_eq!(
            read_capped(&small, 4).unwrap_err().to_string(),
            "is larger than the 4 bytes limit"
        );
        let fifo = dir.path().join("fifo");
        let st = Command::new("mkfifo").arg(&fifo).status().unwrap();
        assert!(st.success());
        assert_eq!(
            read_capped(&fifo, 5).unwrap_err(),
            ReadCappedError::NotRegular("FIFO")
        );
        assert_eq!(
            read_capped(Path::new("/dev/zero"), 5).unwrap_err(),
            ReadCappedError::NotRegular("character device")
        );
        assert!(matches!(
            read_capped(&dir.path().join("missing"), 5),
            Err(ReadCappedError::Io(_))
        ));
    }

    #[test]
    fn sizes_read_in_their_unit() {
        assert_eq!(fmt_bytes(16 << 20), "16 MiB");
        assert_eq!(fmt_bytes(1024), "1 KiB");
        assert_eq!(fmt_bytes(1000), "1000 bytes");
        assert_eq!(fmt_bytes(1), "1 byte");
    }
}

//! Running `jqFilter`s where a hostile filter cannot take the process down.
//!
//! jaq evaluates in-process and without budgets: `def f: [f]; f` overflows
//! the stack (SIGSEGV), `def f: f; f` never ends and `[range(1e8)]` takes
//! memory until the allocator aborts. Filters come from hooks other people
//! write and will run on every watched object, so [`JqRunner`] evaluates
//! them in a child process: a long-lived worker (the `antiopa` binary's
//! hidden `__jq-worker` subcommand, which calls [`serve`]) that compiles and
//! caches filters by source and answers one request per line. The worker
//! runs under an address-space limit, evaluates on a thread with a bounded
//! stack and caps each result; the parent waits with a deadline. A worker
//! that times out, dies or answers garbage is killed and replaced by a fresh
//! one on the next call, and the error names the filter.
//!
//! The protocol, one JSON document per line: request `{"filter": SOURCE,
//! "input": VALUE}`; reply `{"ok": VALUE}` or `{"error": TEXT}`.
//!
//! Compiling stays in-process ([`JqFilter::compile`] when a hook's config is
//! parsed): it does not execute the filter.

use std::collections::HashMap;
use std::ffi::OsString;
use std::io::{BufRead, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::Value;

use super::exec::{fmt_bytes, fmt_duration};
use super::jq::JqFilter;

/// Budgets of a sandboxed evaluation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JqLimits {
    /// One evaluation may take this long (wall time, parent side).
    pub timeout: Duration,
    /// The worker's address-space limit (`RLIMIT_AS`).
    pub max_memory_bytes: u64,
    /// The evaluation thread's stack.
    pub stack_bytes: usize,
    /// The JSON of one result may be this long.
    pub max_result_bytes: usize,
}

impl Default for JqLimits {
    fn default() -> Self {
        JqLimits {
            // A filter runs per watched object: anything near a second is
            // already a bug; five leaves room for a slow machine.
            timeout: Duration::from_secs(5),
            max_memory_bytes: 1 << 30,
            // Real filters nest a few dozen calls deep; this is generous.
            stack_bytes: 64 << 20,
            max_result_bytes: 16 << 20,
        }
    }
}

impl JqLimits {
    /// The worker's command-line arguments for these limits (read back by
    /// the CLI's `__jq-worker`).
    pub fn worker_args(&self) -> Vec<OsString> {
        vec![
            "__jq-worker".into(),
            format!("--max-memory={}", self.max_memory_bytes).into(),
            format!("--stack={}", self.stack_bytes).into(),
            format!("--max-result={}", self.max_result_bytes).into(),
        ]
    }
}

/// Why an evaluation gave no result. Every variant but `Filter` means the
/// worker was replaced.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum JqError {
    /// The filter raised an error (`error("x")`, a type error): as jq says it.
    #[error("{0}")]
    Filter(String),
    #[error("jq filter `{filter}`: timed out after {}", fmt_duration(*.limit))]
    Timeout { filter: String, limit: Duration },
    #[error("jq filter `{filter}`: the evaluation crashed (stack overflow or memory limit; {how})")]
    Crashed { filter: String, how: String },
    #[error("jq filter `{filter}`: {message}")]
    Worker { filter: String, message: String },
    #[error("jq filter `{filter}`: cannot start the jq worker {program}: {message}")]
    Spawn {
        filter: String,
        program: String,
        message: String,
    },
}

/// Where `jqFilter`s run. Cheap to clone: clones share one worker, which
/// is killed when the last clone is dropped.
#[derive(Clone, Debug, Default)]
pub enum JqRunner {
    /// In this process, without budgets: only for filters known to be
    /// harmless (library tests; hostile filters crash the process).
    #[default]
    InProcess,
    /// In a worker process (see the module docs).
    Sandboxed(Arc<Sandbox>),
}

impl JqRunner {
    /// A runner whose worker is `program` with `__jq-worker` arguments:
    /// the `antiopa` binary (the CLI passes `std::env::current_exe()`).
    pub fn sandboxed(program: impl Into<PathBuf>, limits: JqLimits) -> JqRunner {
        JqRunner::Sandboxed(Arc::new(Sandbox {
            program: program.into(),
            limits,
            worker: Mutex::new(None),
        }))
    }

    /// Runs `filter` on `input` with shell-operator's output rules (see
    /// [`JqFilter::apply`]).
    pub fn apply(&self, filter: &JqFilter, input: &Value) -> Result<Value, JqError> {
        match self {
            JqRunner::InProcess => filter.apply(input).map_err(JqError::Filter),
            JqRunner::Sandboxed(s) => s.apply(filter, input),
        }
    }
}

/// The worker process of a [`JqRunner::Sandboxed`], started on first use.
pub struct Sandbox {
    program: PathBuf,
    limits: JqLimits,
    worker: Mutex<Option<Worker>>,
}

impl std::fmt::Debug for Sandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sandbox")
            .field("program", &self.program)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

/// A filter's source as messages quote it: long programs cut.
fn quoted(filter: &JqFilter) -> String {
    let src = filter.source().trim();
    match src.char_indices().nth(200) {
        Some((i, _)) => format!("{}…", &src[..i]),
        None => src.to_string(),
    }
}

/// What the reader thread hands over: a reply line, or why there is none.
type Line = Result<Vec<u8>, String>;

struct Worker {
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<Line>,
    reader: Option<JoinHandle<()>>,
}

impl Worker {
    fn start(program: &PathBuf, limits: &JqLimits) -> std::io::Result<Worker> {
        let mut child = Command::new(program)
            // The environment is inherited: `env` / `$ENV` in a filter see
            // the operator's, as with shell-operator's in-process gojq.
            .args(limits.worker_args())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            // Its own process group, so a kill reaches anything it started.
            .process_group(0)
            .spawn()?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(std::io::Error::other("no pipes to the worker"));
        };
        // The reply line is capped a little above the result limit, so a
        // worker printing garbage without newlines cannot fill our memory.
        let cap = limits.max_result_bytes + 4096;
        let (tx, lines) = mpsc::channel();
        let reader = std::thread::Builder::new()
            .name("jq-worker-reader".into())
            .spawn(move || read_lines(stdout, cap, &tx))?;
        Ok(Worker {
            child,
            stdin,
            lines,
            reader: Some(reader),
        })
    }

    /// How the worker ended, once it is known to be gone.
    fn exit_text(&mut self) -> String {
        use std::os::unix::process::ExitStatusExt;
        let st = (0..50).find_map(|_| match self.child.try_wait() {
            Ok(Some(st)) => Some(st),
            _ => {
                std::thread::sleep(Duration::from_millis(10));
                None
            }
        });
        match st {
            Some(st) => match (st.code(), st.signal()) {
                (_, Some(11)) => "the worker got SIGSEGV".into(),
                (_, Some(6)) => "the worker aborted".into(),
                (_, Some(9)) => "the worker was killed".into(),
                (_, Some(n)) => format!("the worker got signal {n}"),
                (Some(c), _) => format!("the worker exited with status {c}"),
                _ => "the worker ended".into(),
            },
            None => "the worker stopped answering".into(),
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        if let Ok(pid) = i32::try_from(self.child.id()) {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        // The pipe is closed now, so the reader ends.
        if let Some(r) = self.reader.take() {
            let _ = r.join();
        }
    }
}

/// Reads `r` line by line, each at most `cap` bytes, until it closes or a
/// line is too long (then the worker is treated as broken).
fn read_lines(r: impl Read, cap: usize, tx: &mpsc::Sender<Line>) {
    let mut reader = std::io::BufReader::new(r);
    loop {
        let mut line = Vec::new();
        let limit = u64::try_from(cap).unwrap_or(u64::MAX) + 1;
        match (&mut reader).take(limit).read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) if line.last() == Some(&b'\n') => {
                if tx.send(Ok(line)).is_err() {
                    return;
                }
            }
            Ok(_) if line.len() > cap => {
                let _ = tx.send(Err(format!(
                    "the worker's answer is longer than {}",
                    fmt_bytes(cap as u64)
                )));
                return;
            }
            // End of output in the middle of a line: the worker died.
            Ok(_) => return,
        }
    }
}

#[derive(serde::Serialize)]
struct Request<'a> {
    filter: &'a str,
    input: &'a Value,
}

#[derive(serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
enum Reply {
    Ok(Value),
    Error(String),
}

impl Sandbox {
    fn apply(&self, filter: &JqFilter, input: &Value) -> Result<Value, JqError> {
        let mut line = serde_json::to_vec(&Request {
            filter: filter.source(),
            input,
        })
        .map_err(|e| JqError::Worker {
            filter: quoted(filter),
            message: format!("cannot encode the input: {e}"),
        })?;
        line.push(b'\n');
        // A panic elsewhere while holding the lock leaves a worker that is
        // still usable or will be replaced: poisoning does not matter.
        let mut slot = self.worker.lock().unwrap_or_else(|e| e.into_inner());
        // One retry: a worker that died since the last call (killed from
        // outside) fails the write; a fresh one is started.
        for attempt in 0..2 {
            if slot.is_none() {
                *slot = Some(Worker::start(&self.program, &self.limits).map_err(|e| {
                    JqError::Spawn {
                        filter: quoted(filter),
                        program: self.program.display().to_string(),
                        message: e.to_string(),
                    }
                })?);
            }
            let Some(w) = slot.as_mut() else { continue };
            if w.stdin
                .write_all(&line)
                .and_then(|()| w.stdin.flush())
                .is_err()
            {
                *slot = None;
                if attempt == 0 {
                    continue;
                }
                return Err(JqError::Worker {
                    filter: quoted(filter),
                    message: "the jq worker does not accept requests".into(),
                });
            }
            let answer = w.lines.recv_timeout(self.limits.timeout);
            let res = match answer {
                Ok(Ok(reply)) => match serde_json::from_slice::<Reply>(&reply) {
                    Ok(Reply::Ok(v)) => return Ok(v),
                    Ok(Reply::Error(e)) => return Err(JqError::Filter(e)),
                    Err(e) => JqError::Worker {
                        filter: quoted(filter),
                        message: format!("the jq worker answered garbage ({e})"),
                    },
                },
                Ok(Err(message)) => JqError::Worker {
                    filter: quoted(filter),
                    message,
                },
                Err(mpsc::RecvTimeoutError::Timeout) => JqError::Timeout {
                    filter: quoted(filter),
                    limit: self.limits.timeout,
                },
                Err(mpsc::RecvTimeoutError::Disconnected) => JqError::Crashed {
                    filter: quoted(filter),
                    how: w.exit_text(),
                },
            };
            // Dropping the worker kills it; the next call starts afresh.
            *slot = None;
            return Err(res);
        }
        Err(JqError::Worker {
            filter: quoted(filter),
            message: "the jq worker cannot be started".into(),
        })
    }
}

/// At most this many compiled filters are kept by the worker; beyond, the
/// cache starts over (hooks have a handful each).
const CACHE_MAX: usize = 4096;

/// The worker's loop: reads requests from `input` until it closes and
/// writes one reply line per request to `output`. Evaluation happens on a
/// thread with a `stack_bytes` stack, owned and joined here. Process-wide
/// limits (address space, core dumps, parent death) are the caller's to
/// set: they belong to the process, not to this loop.
pub fn serve(
    input: impl BufRead + Send,
    output: impl Write + Send,
    stack_bytes: usize,
    max_result_bytes: usize,
) -> std::io::Result<()> {
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("jq-eval".into())
            .stack_size(stack_bytes)
            .spawn_scoped(scope, move || serve_loop(input, output, max_result_bytes))?
            .join()
            .unwrap_or_else(|_| Err(std::io::Error::other("the evaluation thread panicked")))
    })
}

fn serve_loop(
    mut input: impl BufRead,
    mut output: impl Write,
    max_result_bytes: usize,
) -> std::io::Result<()> {
    let mut cache: HashMap<String, JqFilter> = HashMap::new();
    let mut line = String::new();
    loop {
        line.clear();
        if input.read_line(&mut line)? == 0 {
            return Ok(());
        }
        let reply = answer(&line, &mut cache, max_result_bytes);
        let mut text = serde_json::to_vec(&reply)
            .unwrap_or_else(|_| br#"{"error":"jq worker: cannot encode the result"}"#.to_vec());
        if text.len() > max_result_bytes + 1024 {
            text = serde_json::to_vec(&Reply::Error(format!(
                "jq: error: the result is larger than the {} limit",
                fmt_bytes(max_result_bytes as u64)
            )))
            .unwrap_or_default();
        }
        text.push(b'\n');
        output.write_all(&text)?;
        output.flush()?;
    }
}

#[derive(serde::Deserialize)]
struct OwnedRequest {
    filter: String,
    input: Value,
}

fn answer(line: &str, cache: &mut HashMap<String, JqFilter>, max_result_bytes: usize) -> Reply {
    let req: OwnedRequest = match serde_json::from_str(line) {
        Ok(r) => r,
        Err(e) => return Reply::Error(format!("jq worker: bad request: {e}")),
    };
    if !cache.contains_key(&req.filter) {
        if cache.len() >= CACHE_MAX {
            cache.clear();
        }
        match JqFilter::compile(&req.filter) {
            Ok(f) => {
                cache.insert(req.filter.clone(), f);
            }
            Err(e) => return Reply::Error(format!("jq: compile error: {e}")),
        }
    }
    let Some(f) = cache.get(&req.filter) else {
        return Reply::Error("jq worker: filter cache lost the filter".into());
    };
    match f.apply(&req.input) {
        Ok(v) => {
            // The JSON is built once more to be sent; measuring it first
            // keeps a huge result out of the reply.
            let len = serde_json::to_vec(&v).map(|t| t.len()).unwrap_or(0);
            if len > max_result_bytes {
                Reply::Error(format!(
                    "jq: error: the result is larger than the {} limit",
                    fmt_bytes(max_result_bytes as u64)
                ))
            } else {
                Reply::Ok(v)
            }
        }
        Err(e) => Reply::Error(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn serve_text(requests: &str, max_result: usize) -> Vec<Value> {
        let mut out = Vec::new();
        serve(requests.as_bytes(), &mut out, 8 << 20, max_result).unwrap();
        String::from_utf8(out)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    #[test]
    fn worker_answers_each_request_on_a_line() {
        let reqs = [
            json!({"filter": ".a", "input": {"a": 1}}),
            json!({"filter": ".[]", "input": [1, 2]}),
            json!({"filter": "error(\"boom\")", "input": null}),
            json!({"filter": ".a", "input": {"a": "cached"}}),
        ]
        .iter()
        .map(|r| format!("{r}\n"))
        .collect::<String>();
        let got = serve_text(&reqs, 1 << 20);
        assert_eq!(got[0], json!({"ok": 1}));
        assert_eq!(got[1], json!({"ok": [1, 2]}));
        assert!(
            got[2]["error"].as_str().unwrap().contains("boom"),
            "{got:?}"
        );
        assert_eq!(got[3], json!({"ok": "cached"}));
    }

    #[test]
    fn worker_caps_results_and_reports_bad_requests() {
        let reqs = format!(
            "{}\nnot json\n",
            json!({"filter": "[range(1000)]", "input": null})
        );
        let got = serve_text(&reqs, 100);
        let e = got[0]["error"].as_str().unwrap();
        assert!(e.contains("larger than the 100 bytes limit"), "{e}");
        assert!(got[1]["error"].as_str().unwrap().contains("bad request"));
    }

    #[test]
    fn in_process_runner_applies_benign_filters() {
        let f = JqFilter::compile(".metadata.name").unwrap();
        let v = JqRunner::default()
            .apply(&f, &json!({"metadata": {"name": "x"}}))
            .unwrap();
        assert_eq!(v, json!("x"));
    }

    #[test]
    fn a_worker_that_cannot_start_is_an_error_naming_the_filter() {
        let f = JqFilter::compile(".a").unwrap();
        let r = JqRunner::sandboxed("/nonexistent/antiopa", JqLimits::default());
        let e = r.apply(&f, &json!({})).unwrap_err().to_string();
        assert!(e.contains("jq filter `.a`"), "{e}");
        assert!(e.contains("/nonexistent/antiopa"), "{e}");
    }

    #[test]
    fn a_worker_that_answers_garbage_or_dies_is_replaced() {
        // `sh -c` stands in for the worker: it ignores the arguments.
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("worker.sh");
        std::fs::write(&script, "#!/bin/sh\nread line\necho 'not json'\nsleep 5\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        let f = JqFilter::compile(".").unwrap();
        let r = JqRunner::sandboxed(&script, JqLimits::default());
        let e = r.apply(&f, &json!(1)).unwrap_err().to_string();
        assert!(e.contains("answered garbage"), "{e}");
        std::fs::write(&script, "#!/bin/sh\nread line\nkill -SEGV $$\n").unwrap();
        let e = r.apply(&f, &json!(1)).unwrap_err().to_string();
        assert!(e.contains("crashed") && e.contains("SIGSEGV"), "{e}");
        std::fs::write(&script, "#!/bin/sh\nread line\nsleep 5\n").unwrap();
        let r = JqRunner::sandboxed(
            &script,
            JqLimits {
                timeout: Duration::from_millis(200),
                ..JqLimits::default()
            },
        );
        let e = r.apply(&f, &json!(1)).unwrap_err().to_string();
        assert!(e.contains("timed out after 200ms"), "{e}");
    }
}

//! `cargo bench --bench template`: wall time and peak memory of `antiopa template` against the
//! real `helm template` on every `ok` case of the shared corpus.
//!
//! It builds nothing: it runs the release build (build it first with `cargo build --release`, the
//! build a user gets) and the helm oracle (`$HELM`, else the path printed by
//! `../shared/tools/install-helm.sh`), each `BENCH_RUNS` times (default 5) per case, with the same
//! arguments and isolated HELM_* homes. Each run is two runs: one started directly and timed
//! with a monotonic clock from spawn to exit (its output going to files, and no thread of the
//! harness running meanwhile), and one under GNU time (`/usr/bin/time -f %M`, the
//! child's `ru_maxrss`) for peak RSS. Timing the run under GNU time would add GNU time's own
//! start-up (exec, dynamic loading, writing its report: 2–4 ms here) to every run of both tools,
//! which is a fifth of antiopa's few-millisecond runs and hides what it costs. It prints one row
//! per case (medians) and the median of the per-case ratios, and whether the targets are met:
//! antiopa ≥ 8× faster (a floor to keep) and ≤ 0.3× of helm's memory. `BENCH_FILTER=substr`
//! selects cases; `ANTIOPA_BIN` measures another binary instead of the release build (e.g. the
//! opt-in tuned build of `cargo tuned-release`).

#[path = "../integration/common/mod.rs"]
mod common;

use common::{CorpusCase, RunResult, corpus_dir, isolate_env, read_corpus_cases, repo_root};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const SPEED_TARGET: f64 = 8.0;
const MEMORY_TARGET: f64 = 0.3;

/// One measured run: wall seconds of the timed run, peak RSS in KiB of the run under GNU time.
struct Sample {
    secs: f64,
    rss_kib: u64,
    stdout: Vec<u8>,
}

fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Kills a run that takes longer than [`LIMIT`]. One thread for the whole benchmark, started
/// before the first run and waking twice a second: threads of the harness that start or wake
/// while a run is under way (pipe readers, a waiter) would take a core from the process being
/// timed, which on a two-core machine slowed the few-millisecond antiopa runs by some 8 %.
#[derive(Clone, Default)]
struct Watchdog(Arc<Mutex<WatchState>>);

#[derive(Default)]
struct WatchState {
    /// The run under way: its pid and when it must have ended.
    run: Option<(u32, Instant)>,
    fired: bool,
}

const LIMIT: Duration = Duration::from_secs(300);

impl Watchdog {
    fn start() -> Watchdog {
        let w = Watchdog::default();
        let state = w.0.clone();
        std::thread::spawn(move || {
            loop {
                std::thread::sleep(Duration::from_millis(500));
                let mut st = state.lock().unwrap_or_else(|e| e.into_inner());
                if let Some((pid, deadline)) = st.run
                    && Instant::now() > deadline
                {
                    if let Some(pid) = i32::try_from(pid)
                        .ok()
                        .and_then(rustix::process::Pid::from_raw)
                    {
                        let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
                    }
                    st.fired = true;
                    st.run = None;
                }
            }
        });
        w
    }

    fn arm(&self, pid: u32, deadline: Instant) {
        let mut st = self.0.lock().unwrap_or_else(|e| e.into_inner());
        *st = WatchState {
            run: Some((pid, deadline)),
            fired: false,
        };
    }

    /// Whether the run was killed.
    fn disarm(&self) -> bool {
        let mut st = self.0.lock().unwrap_or_else(|e| e.into_inner());
        st.run = None;
        st.fired
    }
}

/// Run `cmd` with stdout and stderr going to files in `scratch` (no pipe to drain while it
/// runs), timed from spawn to exit, waiting for it on this thread.
fn run_timed(cmd: &mut Command, scratch: &Path, watchdog: &Watchdog) -> std::io::Result<RunResult> {
    let (out_path, err_path) = (scratch.join("stdout"), scratch.join("stderr"));
    let out = std::fs::File::create(&out_path)?;
    let err = std::fs::File::create(&err_path)?;
    let start = Instant::now();
    let mut child = cmd.stdin(Stdio::null()).stdout(out).stderr(err).spawn()?;
    watchdog.arm(child.id(), start + LIMIT);
    let status = child.wait()?;
    let elapsed = start.elapsed();
    let timed_out = watchdog.disarm();
    Ok(RunResult {
        code: if timed_out { None } else { status.code() },
        stdout: std::fs::read(&out_path)?,
        stderr: std::fs::read(&err_path)?,
        timed_out,
        elapsed,
    })
}

fn measure(
    tool: &Path,
    case: &CorpusCase,
    home: &Path,
    scratch: &Path,
    watchdog: &Watchdog,
) -> Result<Sample, String> {
    let run = |cmd: &mut Command| {
        // No `current_dir`: the harness runs in the corpus (see `main`).
        cmd.args(case.template_args());
        isolate_env(cmd, home);
        let r = run_timed(cmd, scratch, watchdog)
            .map_err(|e| format!("cannot run {}: {e}", tool.display()))?;
        if r.code != Some(0) {
            return Err(format!(
                "{} failed ({}): {}",
                tool.display(),
                r.describe_exit(),
                common::clip(String::from_utf8_lossy(&r.stderr).trim(), 200)
            ));
        }
        Ok(r)
    };
    let timed = run(&mut Command::new(tool))?;
    let rss_file = scratch.join("rss");
    let _ = std::fs::remove_file(&rss_file);
    let mut cmd = Command::new("/usr/bin/time");
    cmd.arg("-f").arg("%M").arg("-o").arg(&rss_file).arg(tool);
    run(&mut cmd)?;
    let rss_text =
        std::fs::read_to_string(&rss_file).map_err(|e| format!("no GNU time output: {e}"))?;
    let rss_kib = rss_text
        .lines()
        .last()
        .and_then(|l| l.trim().parse().ok())
        .ok_or_else(|| format!("unexpected GNU time output {rss_text:?}"))?;
    Ok(Sample {
        secs: timed.elapsed.as_secs_f64(),
        rss_kib,
        stdout: timed.stdout,
    })
}

fn find_helm() -> Result<PathBuf, String> {
    if let Some(h) = std::env::var_os("HELM").filter(|h| !h.is_empty()) {
        return Ok(PathBuf::from(h));
    }
    let script = repo_root().join("../shared/tools/install-helm.sh");
    let out = Command::new("bash")
        .arg(&script)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", script.display()))?;
    let path = String::from_utf8_lossy(&out.stdout)
        .lines()
        .last()
        .unwrap_or("")
        .trim()
        .to_string();
    if out.status.success() && !path.is_empty() {
        Ok(PathBuf::from(path))
    } else {
        Err(format!(
            "{} failed; set HELM=/path/to/helm",
            script.display()
        ))
    }
}

fn main() {
    let antiopa = common::release_bin();
    if !antiopa.is_file() {
        eprintln!(
            "bench: {} is missing; build it first with `cargo build --release`",
            antiopa.display()
        );
        std::process::exit(1);
    }
    if !Path::new("/usr/bin/time").is_file() {
        eprintln!(
            "bench: GNU time (/usr/bin/time) is needed for peak memory; apt-get install time"
        );
        std::process::exit(1);
    }
    let helm = match find_helm() {
        Ok(h) => h,
        Err(e) => {
            eprintln!("bench: {e}");
            std::process::exit(1);
        }
    };
    let corpus = corpus_dir();
    let cases = match read_corpus_cases(&corpus) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("bench: no corpus ({e}); set ANTIOPA_CORPUS");
            std::process::exit(1);
        }
    };
    let runs: usize = std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5)
        .max(1);
    let filter = std::env::var("BENCH_FILTER").unwrap_or_default();
    // Every run starts in the corpus, so the harness moves there itself rather than give each
    // `Command` a working directory. With one set, std spawns through `fork` and `exec` here (it
    // needs glibc's `posix_spawn_file_actions_addchdir_np`, which it looks up with `dlsym`, and a
    // static binary has nothing to look up), and each timed run then included the harness
    // copying its own page tables (compat/BENCHMARK.md). Without one std uses `posix_spawn`,
    // whose child shares the harness's memory until its `exec` (`vfork`), so a run's time is
    // the tool's own, as `perf stat` counts it. The paths are made absolute first: they may be
    // relative to where the harness started.
    let (antiopa, helm) = match (std::path::absolute(&antiopa), std::path::absolute(&helm)) {
        (Ok(a), Ok(h)) => (a, h),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("bench: {e}");
            std::process::exit(1);
        }
    };
    let corpus = match std::path::absolute(&corpus)
        .and_then(|c| std::env::set_current_dir(&c).map(|()| c))
    {
        Ok(c) => c,
        Err(e) => {
            eprintln!("bench: cannot enter the corpus {}: {e}", corpus.display());
            std::process::exit(1);
        }
    };
    let watchdog = Watchdog::start();
    let home = match tempfile::tempdir() {
        Ok(h) => h,
        Err(e) => {
            eprintln!("bench: temp dir: {e}");
            std::process::exit(1);
        }
    };

    println!(
        "antiopa {} vs helm {} — {runs} run(s) per case, medians",
        antiopa.display(),
        helm.display()
    );
    println!(
        "{:<44} {:>9} {:>9} {:>8} {:>9} {:>9} {:>8}  output",
        "case", "helm ms", "anti ms", "speedup", "helm MiB", "anti MiB", "mem"
    );
    let (mut speedups, mut mem_ratios) = (Vec::new(), Vec::new());
    let mut errors = Vec::new();
    let mut wrong = Vec::new();
    for case in cases
        .iter()
        .filter(|c| !c.expect_error && c.name.contains(&filter))
    {
        let mut samples: [Vec<Sample>; 2] = [Vec::new(), Vec::new()];
        let mut failed = None;
        // Alternate the tools so that machine noise hits both alike.
        'runs: for _ in 0..runs {
            for (i, tool) in [&helm, &antiopa].into_iter().enumerate() {
                match measure(tool, case, home.path(), home.path(), &watchdog) {
                    Ok(s) => samples[i].push(s),
                    Err(e) => {
                        failed = Some(e);
                        break 'runs;
                    }
                }
            }
        }
        if let Some(e) = failed {
            println!("{:<44} error: {}", case.name, common::clip(&e, 120));
            errors.push(case.name.clone());
            continue;
        }
        let t = |s: &Vec<Sample>| median(s.iter().map(|x| x.secs).collect());
        let m = |s: &Vec<Sample>| median(s.iter().map(|x| x.rss_kib as f64).collect());
        let (ht, at, hm, am) = (
            t(&samples[0]),
            t(&samples[1]),
            m(&samples[0]),
            m(&samples[1]),
        );
        let (speed, mem) = (ht / at, am / hm);
        // Speed means little if the output is wrong: say whether antiopa matched helm's
        // recorded output (nondeterministic cases are only compared by tests/integration/corpus.rs).
        let expected = std::fs::read(corpus.join("expected").join(format!("{}.yaml", case.name)));
        let output = match (&expected, samples[1].first()) {
            (_, _) if case.nondeterministic => "nondet",
            (Ok(e), Some(s)) if *e == s.stdout => "same",
            (Ok(_), Some(_)) => "DIFFERS",
            _ => "?",
        };
        if output == "DIFFERS" {
            wrong.push(case.name.clone());
        }
        speedups.push(speed);
        mem_ratios.push(mem);
        println!(
            "{:<44} {:>9.1} {:>9.1} {:>7.1}× {:>9.1} {:>9.1} {:>8.3}  {}",
            case.name,
            ht * 1e3,
            at * 1e3,
            speed,
            hm / 1024.0,
            am / 1024.0,
            mem,
            output
        );
    }
    let (ms, mm) = (median(speedups.clone()), median(mem_ratios.clone()));
    println!();
    println!(
        "cases measured: {}, failed to run: {}",
        speedups.len(),
        errors.len()
    );
    println!(
        "median speedup (helm time / antiopa time): {ms:.1}×  target ≥ {SPEED_TARGET}×: {}",
        if ms >= SPEED_TARGET { "MET" } else { "NOT MET" }
    );
    println!(
        "median memory (antiopa peak RSS / helm peak RSS): {mm:.3}  target ≤ {MEMORY_TARGET}: {}",
        if mm <= MEMORY_TARGET {
            "MET"
        } else {
            "NOT MET"
        }
    );
    if !wrong.is_empty() {
        println!(
            "cases whose output differs from helm's: {}",
            wrong.join(" ")
        );
    }
    if !errors.is_empty() {
        println!("cases that failed to render: {}", errors.join(" "));
    }
}

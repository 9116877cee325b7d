//! `antiopa __jq-worker`: the process [`crate::hooks::JqRunner`] evaluates
//! `jqFilter`s in (hidden from help; only antiopa starts it).
//!
//! Its arguments are the limits [`crate::hooks::JqLimits::worker_args`]
//! writes. Before serving it sets the process-wide limits that make a
//! hostile filter kill only this process: an address-space limit (an
//! allocation beyond it aborts here, not in antiopa), no core dumps, and
//! death with its parent (so a filter looping forever cannot outlive an
//! antiopa that was killed). It is dispatched before the CLI's 1 GiB stack
//! is mapped, which would otherwise use up the address-space limit.

use std::io::Write;

use rustix::process::{Resource, Rlimit, Signal, set_parent_process_death_signal, setrlimit};

use crate::hooks::JqLimits;
use crate::hooks::jq_sandbox::serve;

/// Whether the command line asks for the worker.
pub fn is_worker_call() -> bool {
    std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == "__jq-worker")
}

fn parse_args() -> Result<JqLimits, String> {
    let mut limits = JqLimits::default();
    for arg in std::env::args().skip(2) {
        let (key, value) = arg
            .split_once('=')
            .ok_or_else(|| format!("unexpected argument '{arg}'"))?;
        let n = || value.parse::<u64>().map_err(|e| format!("{key}: {e}"));
        match key {
            "--max-memory" => limits.max_memory_bytes = n()?,
            "--stack" => limits.stack_bytes = usize::try_from(n()?).map_err(|e| e.to_string())?,
            "--max-result" => {
                limits.max_result_bytes = usize::try_from(n()?).map_err(|e| e.to_string())?
            }
            _ => return Err(format!("unknown flag '{key}'")),
        }
    }
    Ok(limits)
}

/// Runs the worker until its stdin closes; the process's exit code.
pub fn run() -> i32 {
    let limits = match parse_args() {
        Ok(l) => l,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "Error: __jq-worker: {e}");
            return 1;
        }
    };
    // Best effort each: a kernel refusing one still leaves the parent's
    // deadline and crash handling.
    let _ = set_parent_process_death_signal(Some(Signal::KILL));
    let _ = setrlimit(
        Resource::Core,
        Rlimit {
            current: Some(0),
            maximum: Some(0),
        },
    );
    let _ = setrlimit(
        Resource::As,
        Rlimit {
            current: Some(limits.max_memory_bytes),
            maximum: Some(limits.max_memory_bytes),
        },
    );
    let input = std::io::BufReader::new(std::io::stdin());
    let output = std::io::BufWriter::new(std::io::stdout());
    match serve(input, output, limits.stack_bytes, limits.max_result_bytes) {
        Ok(()) => 0,
        // The parent went away mid-answer, or stdin broke: nothing to tell.
        Err(_) => 1,
    }
}

//! Replays the kept fuzz corpus (`tests/fuzz/corpus/<target>/`) through the
//! fuzz targets' own bodies (`tests/fuzz/targets.rs`), so `cargo test`
//! re-runs every input the fuzzers found interesting, each crash they found
//! included, without the fuzzing toolchain. A panic fails the test and
//! names the input.

#[path = "../fuzz/targets.rs"]
mod targets;

use std::path::Path;

type Target = fn(&[u8]);

/// Runs every file of `corpus/<name>/`.
fn replay(name: &str, target: Target) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fuzz/corpus")
        .join(name);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("corpus entry").path())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "{name}: empty corpus");
    for f in &files {
        let data = std::fs::read(f).expect("read corpus file");
        // On a stack like the fuzzer's: libFuzzer runs an input on the main
        // thread (8 MiB) of an optimised build; a test thread has 2 MiB and
        // unoptimised frames several times larger.
        let r = std::thread::Builder::new()
            .stack_size(STACK)
            .spawn(move || target(&data))
            .expect("spawn")
            .join();
        assert!(r.is_ok(), "{name}: {} panics", f.display());
    }
}

const STACK: usize = 64 << 20;

#[test]
fn template_corpus() {
    replay("template", targets::template);
}

#[test]
fn yaml_corpus() {
    replay("yaml", targets::yaml);
}

#[test]
fn set_corpus() {
    replay("set", targets::set);
}

#[test]
fn hook_config_corpus() {
    replay("hook_config", targets::hook_config);
}

#[test]
fn hook_output_corpus() {
    replay("hook_output", targets::hook_output);
}

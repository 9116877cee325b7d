//! libFuzzer entry point of the `set` target; its body is in
//! `../targets.rs`, shared with the corpus replay in `cargo test`.
#![no_main]

#[path = "../targets.rs"]
mod targets;

libfuzzer_sys::fuzz_target!(|data: &[u8]| targets::set(data));

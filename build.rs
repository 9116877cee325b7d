//! Link layout of the opt-in tuned build (`cargo tuned-release`, see
//! .cargo/config.toml), which decides a large part of `antiopa template`'s
//! peak memory in the race against helm. Plain builds (`cargo build
//! --release`, the image's `dist` profile) keep the toolchain's defaults:
//! a position-independent executable, so the binary is address-randomised.
//!
//! The kernel maps executable pages in 64 KiB blocks around each page a
//! process runs, so the scattered few thousand functions one render uses
//! keep nearly the whole 10 MB text resident. Two link options cut that:
//!
//! - The functions a render runs (`tests/bench/hot-functions.txt`: section-name
//!   patterns of v0-mangled Rust functions with crate hashes replaced by `*`,
//!   and archive members of glibc, collected from callgrind runs over the
//!   corpus by `tests/bench/hot_functions.py`) are placed together in one output section ahead of
//!   `.text`, by a GNU ld script that only `INSERT`s that section into the
//!   default layout. A stale or missing pattern only costs memory, never
//!   correctness.
//! - The binary is linked as a position-dependent executable (`-no-pie`):
//!   a PIE applies ~50,000 relocations at start-up, which writes to (and so
//!   keeps private copies of) all 1.4 MB of `.data.rel.ro` and reads 1.3 MB
//!   of relocation records. The cost is that the binary's own image is not
//!   address-randomised.
//!
//! Only optimised builds of Linux GNU targets with `ANTIOPA_TUNED_LINK` set
//! are affected.

use std::env;
use std::fmt::Write as _;
use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=tests/bench/hot-functions.txt");
    println!("cargo:rerun-if-env-changed=ANTIOPA_TUNED_LINK");
    let var = |k: &str| env::var(k).unwrap_or_default();
    if var("PROFILE") != "release"
        || var("CARGO_CFG_TARGET_OS") != "linux"
        || var("CARGO_CFG_TARGET_ENV") != "gnu"
        || var("ANTIOPA_TUNED_LINK").is_empty()
    {
        return;
    }
    let manifest = PathBuf::from(var("CARGO_MANIFEST_DIR"));
    let Ok(list) = std::fs::read_to_string(manifest.join("tests/bench/hot-functions.txt")) else {
        return;
    };
    let mut script = String::from("SECTIONS\n{\n  .text.antiopa_hot :\n  {\n");
    for pattern in list
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        if pattern.contains('(') {
            // An archive member of a C library, `*libc.a:malloc.o(.text …)`.
            let _ = writeln!(script, "    {pattern}");
        } else {
            // LLVM puts functions it judges cold in `.text.unlikely.NAME`.
            let _ = writeln!(script, "    *(.text.{pattern} .text.unlikely.{pattern})");
        }
    }
    script.push_str("  }\n}\nINSERT BEFORE .text;\n");
    let out = PathBuf::from(var("OUT_DIR")).join("hot.ld");
    if std::fs::write(&out, script).is_err() {
        return;
    }
    println!("cargo:rustc-link-arg-bins=-Wl,-T,{}", out.display());
    println!("cargo:rustc-link-arg-bins=-no-pie");
}

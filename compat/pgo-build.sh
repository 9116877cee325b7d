#!/usr/bin/env bash
# pgo-build.sh — the static release build of `cargo static-release`, optimised with a profile of
# `antiopa template` rendering this suite's cases (profile-guided optimisation).
#
# Usage: compat/pgo-build.sh [--bench [BENCH ARGS...]]
#   builds  $TARGET/pgo/use/x86_64-unknown-linux-gnu/release/antiopa  (TARGET: $CARGO_TARGET_DIR
#           or ./target) and copies it to $TARGET/pgo/antiopa
#   --bench then runs `cargo static-bench BENCH ARGS` (e.g. `--bench template`) in the same target
#           and with the same flags (so it reuses the optimised build's dependencies), measuring
#           that binary
#
# Why: rendering a chart is a few milliseconds of lexing, parsing and interpreting — branchy code
# whose hot paths the compiler cannot tell from its cold ones (error paths, rare functions). With
# a profile it lays out and inlines for the paths real renders take (compat/BENCHMARK.md has the
# measured gain). The profile comes from our own cases only (never from the benchmark's corpus),
# so what the benchmark measures is how well it generalises.
#
# Steps: (1) build with -Cprofile-generate in $TARGET/pgo/gen; (2) render every case of
# compat/cases as compat/regen.sh does (errors are part of the workload); (3) merge the raw
# profiles with the toolchain's llvm-profdata (rustup component llvm-tools: its LLVM matches
# rustc's); (4) build with -Cprofile-use.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/.." && pwd)"
cd "$REPO"

TRIPLE=x86_64-unknown-linux-gnu # the triple of the static-release alias (.cargo/config.toml)
TARGET="${CARGO_TARGET_DIR:-$REPO/target}"
case "$TARGET" in /*) ;; *) TARGET="$REPO/$TARGET" ;; esac
PGO="$TARGET/pgo"

rustup component add llvm-tools >/dev/null 2>&1 || rustup component add llvm-tools
PROFDATA="$(rustc --print sysroot)/lib/rustlib/$(rustc -vV | sed -n 's/^host: //p')/bin/llvm-profdata"
[ -x "$PROFDATA" ] || { echo "pgo-build: no $PROFDATA (rustup component add llvm-tools)" >&2; exit 2; }

# The flags are added to those of the static-release alias (cargo merges the arrays).
rustflags() { echo "target.$TRIPLE.rustflags=['$1']"; }

# 1. Instrumented build, in its own target directory: other flags would rebuild the plain one.
# Same profile as the final build: measured, a profile from a build without LTO and with 16
# codegen units (minutes faster to build) matched the LTO build only in part and gained a third
# as much (generic and inlined functions get other per-unit copies and names).
rm -rf "$PGO/raw"
mkdir -p "$PGO/raw"
CARGO_TARGET_DIR="$PGO/gen" cargo static-release --quiet \
  --config "$(rustflags "-Cprofile-generate=$PGO/raw")"
GEN="$PGO/gen/$TRIPLE/release/antiopa"

# 2. Training: each case rendered as compat/regen.sh renders it.
n=0
for dir in compat/cases/*/; do
  args=()
  if [ -f "$dir/args" ]; then mapfile -t args < "$dir/args"; fi
  (cd "$dir" && "$GEN" template rel chart --namespace ns1 "${args[@]}" >/dev/null 2>&1) || true
  n=$((n + 1))
done
echo "pgo-build: profiled $n cases" >&2

# 3. One profile from the runs' raw files.
"$PROFDATA" merge -o "$PGO/merged.profdata" "$PGO/raw"

# 4. The optimised build. Functions the cases never ran are compiled as without a profile.
USE="$(rustflags "-Cprofile-use=$PGO/merged.profdata")"
CARGO_TARGET_DIR="$PGO/use" cargo static-release --quiet --config "$USE"
cp "$PGO/use/$TRIPLE/release/antiopa" "$PGO/antiopa"
echo "pgo-build: $PGO/antiopa" >&2

if [ "${1:-}" = --bench ]; then
  shift
  ANTIOPA_BIN="$PGO/antiopa" CARGO_TARGET_DIR="$PGO/use" cargo static-bench --config "$USE" "$@"
fi

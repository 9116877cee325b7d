#!/usr/bin/env bash
# regen.sh — (re)generate or check the oracle outputs of the compatibility cases with the real helm.
#
# Usage: compat/regen.sh [--check] [CASE ...]
#   default   render every case (or the CASEs named, e.g. 014-range-map-else) and write beside it
#             expected.out (stdout, when helm exits 0) or expected.err + expected.code (stderr and
#             exit code, when helm fails)
#   --check   write nothing; compare fresh renders with the stored files; exit 1 on any mismatch
# helm: $HELM if set, else the pinned oracle printed by /work/shared/tools/install-helm.sh
# (or ../shared/tools/install-helm.sh next to the repository).
#
# Each case is rendered from its own directory, exactly as
#     helm template rel chart --namespace ns1 [args...]
# where args are the lines of the case's `args` file (one argument per line, no shell quoting;
# paths in it are relative to the case directory). Every run gets empty private
# HELM_{CACHE,CONFIG,DATA}_HOME dirs, KUBECONFIG=/dev/null and, where `unshare -n` works, no network.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/.." && pwd)"
CHECK=0
while [ $# -gt 0 ]; do
  case "$1" in
    --check) CHECK=1; shift ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    -*) echo "unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
WANT=("$@")

if [ -z "${HELM:-}" ]; then
  for t in /work/shared/tools/install-helm.sh "$REPO/../shared/tools/install-helm.sh"; do
    if [ -x "$t" ] || [ -f "$t" ]; then HELM="$(bash "$t" 2>/dev/null | tail -n1)"; break; fi
  done
fi
[ -n "${HELM:-}" ] && [ -x "$HELM" ] || { echo "regen: no helm (set HELM or provide shared/tools/install-helm.sh)" >&2; exit 2; }
HV="$("$HELM" version --template '{{.Version}}')"
[ "$HV" = v3.17.3 ] || echo "regen: WARNING: helm $HV, the oracle is v3.17.3" >&2

NET=()
if unshare -n true 2>/dev/null; then NET=(unshare -n); else echo "regen: note: unshare -n unavailable, rendering with network access" >&2; fi
SCRATCH="$(mktemp -d)"
trap 'rm -rf "$SCRATCH"' EXIT

pass=0 fail=0
for dir in "$HERE"/cases/*/; do
  dir="${dir%/}"; c="$(basename "$dir")"
  if [ ${#WANT[@]} -gt 0 ]; then k=0; for w in "${WANT[@]}"; do [ "$w" = "$c" ] && k=1; done; [ $k = 1 ] || continue; fi
  [ -d "$dir/chart" ] || { echo "FAIL $c: no chart/ directory"; fail=$((fail+1)); continue; }
  args=()
  if [ -f "$dir/args" ]; then
    while IFS= read -r line || [ -n "$line" ]; do [ -n "$line" ] && args+=("$line"); done < "$dir/args"
  fi
  hh="$SCRATCH/helmhome"; rm -rf "$hh"; mkdir -p "$hh/cache" "$hh/config" "$hh/data"
  set +e
  (cd "$dir" && HELM_CACHE_HOME="$hh/cache" HELM_CONFIG_HOME="$hh/config" HELM_DATA_HOME="$hh/data" \
     KUBECONFIG=/dev/null "${NET[@]}" "$HELM" template rel chart --namespace ns1 "${args[@]}" \
     > "$SCRATCH/out" 2> "$SCRATCH/err")
  rc=$?
  set -e
  if [ $CHECK = 1 ]; then
    if [ $rc = 0 ]; then
      if [ -f "$dir/expected.out" ] && cmp -s "$SCRATCH/out" "$dir/expected.out"; then pass=$((pass+1))
      else fail=$((fail+1)); echo "FAIL $c: stdout differs (or helm now succeeds)"; diff "$dir/expected.out" "$SCRATCH/out" 2>&1 | head -8 || true; fi
    else
      if [ -f "$dir/expected.err" ] && cmp -s "$SCRATCH/err" "$dir/expected.err" && [ "$(cat "$dir/expected.code" 2>/dev/null)" = "$rc" ]; then pass=$((pass+1))
      else fail=$((fail+1)); echo "FAIL $c: error or exit code differs (rc $rc)"; diff "$dir/expected.err" "$SCRATCH/err" 2>&1 | head -8 || true; fi
    fi
  else
    rm -f "$dir/expected.out" "$dir/expected.err" "$dir/expected.code"
    if [ $rc = 0 ]; then cp "$SCRATCH/out" "$dir/expected.out"; echo "ok    $c"
    else cp "$SCRATCH/err" "$dir/expected.err"; echo "$rc" > "$dir/expected.code"; echo "error $c (exit $rc): $(head -c 160 "$SCRATCH/err" | tr '\n' ' ')"; fi
    pass=$((pass+1))
  fi
done
echo "regen (helm $HV): $pass passed, $fail failed"
[ $fail = 0 ]

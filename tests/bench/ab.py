#!/usr/bin/env python3
"""Interleaved A/B timing of two `antiopa` binaries over the corpus.

Usage, from the repository root:

    sync; echo 3 > /proc/sys/vm/drop_caches; cat A B > /dev/null   # cache both alike
    python3 tests/bench/ab.py RUNS A B [CASE-SUBSTRING]

Each case of ../shared/corpus/cases.tsv (`ok` cases, without the four whose time is
RSA key generation) is run RUNS times with each binary, the two alternating run by
run and case by case, so that a slow minute of the machine hits both alike. Output
goes to /dev/null; the time is from spawn to exit. Prints the median per case and
binary, B/A per case, and the geometric mean of B/A: below 1, B is faster.

Why not the harness of tests/bench/template.rs: it runs each binary's cases as one
block, and the median of helm/antiopa ratios moves by ±0.6 between runs of the same
binary (helm's own times move by 5–15 %), more than most single changes. Compare
builds only when both binaries are cached the same way: a binary just written by
`cp` ran 4 % faster than the same file after `drop_caches` and a `cat`
(compat/BENCHMARK.md).
"""
import math
import os
import statistics
import sys
import time

from corpus_cases import corpus_dir, read_cases, template_args

# The time of these is RSA key generation (genCA, genPrivateKey), noise for this.
SKIP = {"bitnami-nginx-default", "linkerd-control-plane-certs",
        "linkerd-control-plane-ha", "metrics-server-helmtls"}


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    runs = int(sys.argv[1])
    bins = [os.path.abspath(b) for b in sys.argv[2:4]]
    only = sys.argv[4] if len(sys.argv) > 4 else ""
    corpus = corpus_dir()
    cases = [(row["case"], template_args(row)) for row in read_cases(corpus)
             if row["expect"] == "ok" and only in row["case"] and row["case"] not in SKIP]
    os.chdir(corpus)
    null = os.open(os.devnull, os.O_WRONLY)
    actions = [(os.POSIX_SPAWN_DUP2, null, 1), (os.POSIX_SPAWN_DUP2, null, 2)]
    times = {case: ([], []) for case, _ in cases}
    for i in range(runs):
        for case, args in cases:
            for k in ((0, 1) if i % 2 == 0 else (1, 0)):
                start = time.perf_counter()
                pid = os.posix_spawn(bins[k], [bins[k]] + args, os.environ, file_actions=actions)
                os.waitpid(pid, 0)
                times[case][k].append(time.perf_counter() - start)
    logs = []
    for case, _ in cases:
        a, b = (statistics.median(t) for t in times[case])
        logs.append(math.log(b / a))
        print(f"{case:45s} {a * 1e3:7.2f} {b * 1e3:7.2f} {b / a:6.3f}")
    print(f"geomean B/A {math.exp(sum(logs) / len(logs)):.4f}")


if __name__ == "__main__":
    main()

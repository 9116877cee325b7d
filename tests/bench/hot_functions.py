#!/usr/bin/env python3
"""Regenerate tests/bench/hot-functions.txt (see build.rs) from callgrind runs.

Usage, from the repository root, after `cargo static-release` (the build the
benchmark measures):

    cd ../shared/corpus
    for c in ao-sysctl-tuner-201-cm bitnami-redis-replication ingress-nginx-default \
             kube-prometheus-stack-default grafana-default vault-ha argo-rollouts-default \
             dh-sds-node-configurator-ha bitnami-wordpress-features; do
      valgrind --tool=callgrind --demangle=no --callgrind-out-file=/tmp/hot.$c.cg \
        ../../<repo>/target/x86_64-unknown-linux-gnu/release/antiopa template <args of $c from cases.tsv> >/dev/null
    done
    python3 tests/bench/hot_functions.py /tmp/hot.*.cg > tests/bench/hot-functions.txt

(`--object=NAME[,NAME…]` as the first argument selects binaries profiled
under other file names. valgrind does not name the object of code placed in
the hot section of a binary linked with the current list, so when profiling
such a build pass `--object=???,antiopa`.)

Patterns come out most-shared first: functions that ran in every profile,
then those of fewer profiles. The linker places them in that order, so a
small chart touches only the front of the hot section (the kernel maps code
in 64 KiB blocks, so scattering the common code over the whole section would
make every run resident in all of it).

Every function of the antiopa binary that ran in any profile becomes one
section-name pattern: the mangled name with its hash (and LLVM's local
suffix) replaced by `*`, and `$` by `?` (GNU ld's wildcard syntax).
"""
import re
import sys


def main():
    args = sys.argv[1:]
    objects = ["antiopa"]
    if args and args[0].startswith("--object="):
        objects = args.pop(0).split("=", 1)[1].split(",")
    names = []
    seen = set()
    # name -> the profiles it ran in
    used_in = {}
    for path in args:
        objs, fns, cur_obj = {}, {}, ""
        for line in open(path, encoding="utf-8", errors="replace"):
            m = re.match(r"(c?ob)=\((\d+)\)(?: (.*))?", line)
            if m:
                if m.group(3):
                    objs[m.group(2)] = m.group(3).strip()
                if m.group(1) == "ob":
                    cur_obj = objs.get(m.group(2), "")
                continue
            m = re.match(r"(c?fn)=\((\d+)\)(?: (.*))?", line)
            if m:
                if m.group(3):
                    fns[m.group(2)] = m.group(3).strip()
                name = fns.get(m.group(2))
                if m.group(1) == "fn" and name and any(o in cur_obj for o in objects):
                    used_in.setdefault(name, set()).add(path)
                    if name not in seen:
                        seen.add(name)
                        names.append(name)
    # Stable: within one level of sharing, first-seen order is kept.
    names.sort(key=lambda n: -len(used_in[n]))
    patterns = []
    done = set()
    for n in names:
        if not n.startswith(("_ZN", "_R")):
            continue
        n = re.sub(r"'\d+$", "", n)
        p = re.sub(r"17h[0-9a-f]{16}E(\.llvm\.\d+)?$", "17h*", n).replace("$", "?")
        if p not in done:
            done.add(p)
            patterns.append(p)
    for p in patterns:
        print(p)


if __name__ == "__main__":
    main()

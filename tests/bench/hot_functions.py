#!/usr/bin/env python3
"""Regenerate tests/bench/hot-functions.txt (see build.rs) from callgrind runs.

Usage, from the repository root, after `cargo static-release` (the build the
benchmark measures):

    python3 tests/bench/hot_functions.py --run [case…] > /tmp/hot.txt
    mv /tmp/hot.txt tests/bench/hot-functions.txt

`--run` profiles the release binary with callgrind on the given cases of
../shared/corpus/cases.tsv (default: a spread of small, mid-size and large
charts) and writes the list; without it the arguments are callgrind output
files made with `--demangle=no`. (`--object=NAME[,NAME…]` as the first
argument selects binaries profiled under other file names. valgrind does not
name the object of code placed in the hot section of a binary linked with the
current list, so `???` is always accepted too.)

Patterns come out most-shared first: functions that ran in every profile,
then those of fewer profiles. The linker places them in that order, so a
small chart touches only the front of the hot section (the kernel maps code
in 64 KiB blocks, so scattering the common code over the whole section would
make every run resident in all of it).

Rust functions: the build uses v0 symbol mangling (.cargo/config.toml), whose
names spell out every generic argument, so one pattern matches one
instantiation (legacy names end in an opaque hash, and a pattern with the
hash replaced matched every instantiation of, say, `RawVec::grow_one` in the
binary: the hot section was 2.5 MB). Crate disambiguators (`Cs…_`, which
change with the toolchain and the dependency versions) and LTO's local
suffixes become `*`; `$` becomes `?` (GNU ld's wildcard syntax).

C functions (glibc, libm, libgcc): each becomes its archive member, e.g.
`*libc.a:malloc.o(.text .text.*)`, since their objects are built without
per-function sections. For a member that is one CPU variant of a function
glibc picks at run time (`memchr-avx2.o`), the variants listed are the ones
glibc picks on this machine's CPU, read from the release binary's resolved
`IRELATIVE` slots under gdb (valgrind's virtual CPU picks others, and the
unused variants were 143 KB of the 1.6 MB hot section); without gdb, every
variant.
"""
import os
import re
import subprocess
import sys

from corpus_cases import corpus_dir, read_cases, template_args

DEFAULT_CASES = [
    "ao-sysctl-tuner-201-cm", "ao-backend-default", "metrics-server-default",
    "external-dns-default", "prometheus-node-exporter-default",
    "kube-state-metrics-default", "vault-ha", "grafana-default", "ingress-nginx-default",
    "argo-workflows-default", "dh-sds-node-configurator-ha", "bitnami-postgresql-replication",
    "bitnami-redis-replication", "bitnami-wordpress-features", "argo-rollouts-default",
    "kube-prometheus-stack-default",
]

# The release build the benchmark measures (`cargo static-release`).
BINARY = "target/x86_64-unknown-linux-gnu/release/antiopa"

ARCHIVES = [
    "/usr/lib/x86_64-linux-gnu/libc.a",
    "/usr/lib/x86_64-linux-gnu/libm-2.36.a",
    "/usr/lib/gcc/x86_64-linux-gnu/12/libgcc.a",
    "/usr/lib/gcc/x86_64-linux-gnu/12/libgcc_eh.a",
]


def run_profiles(cases):
    """Profile the release binary on corpus cases; returns the output files."""
    binary = os.path.join(os.getcwd(), BINARY)
    corpus = corpus_dir()
    rows = {row["case"]: row for row in read_cases(corpus)}
    out = []
    for case in cases or DEFAULT_CASES:
        args = [binary] + template_args(rows[case])
        path = f"/tmp/hot.{case}.cg"
        done = subprocess.run(
            ["valgrind", "--tool=callgrind", "--demangle=no", f"--callgrind-out-file={path}"] + args,
            cwd=corpus, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        # A run valgrind cannot finish is skipped, not fatal (the list
        # then misses what only that case runs).
        if done.returncode == 0:
            out.append(path)
        else:
            print(f"# skipped {case}: exit {done.returncode} under valgrind", file=sys.stderr)
    return out


def archive_members():
    """Function name -> (archive file name, member) for the C libraries, and
    the members that dispatch between CPU variants (define an ifunc)."""
    members, dispatchers = {}, set()
    for archive in ARCHIVES:
        if not os.path.exists(archive):
            continue
        listing = subprocess.run(["nm", "-A", "--defined-only", archive],
                                 capture_output=True, text=True, check=False).stdout
        for line in listing.splitlines():
            # /usr/lib/x86_64-linux-gnu/libc.a:malloc.o:00000000000042a0 T malloc
            head, _, sym = line.rpartition(" ")
            parts = head.split(":")
            if len(parts) < 3 or head[-1] not in "TtWwi":
                continue
            members.setdefault(sym, (os.path.basename(archive), parts[1]))
            if head[-1] == "i":
                dispatchers.add((os.path.basename(archive), parts[1]))
    return members, dispatchers


def rust_pattern(name):
    name = re.sub(r"'\d+$", "", name)  # callgrind's recursion marker
    name = re.sub(r"\.llvm\.\d+$", ".llvm.*", name)
    if name.startswith("_R"):
        name = re.sub(r"Cs[0-9a-zA-Z]{1,13}_(?=\d)", "Cs*_", name)
    else:  # legacy mangling (none expected with v0 builds)
        name = re.sub(r"17h[0-9a-f]{16}E(\.llvm\.\*)?$", "17h*", name)
    return name.replace("$", "?")


def selected_variants(members):
    """The archive members of the CPU variants glibc's resolvers picked in
    the release binary on this machine: the targets its `IRELATIVE` slots
    hold once start-up has run (gdb stops it at `main`). None if that
    cannot be read."""
    try:
        relocs = subprocess.run(["readelf", "-rW", BINARY],
                                capture_output=True, text=True, check=True).stdout
        slots = [l.split()[0] for l in relocs.splitlines() if "IRELATIVE" in l]
        cmds = ["set pagination off", "break main", "run --version > /dev/null",
                "set language c"] + [f"info symbol *(long*)0x{o}" for o in slots]
        out = subprocess.run(["gdb", "-batch", "-nx"] + [a for c in cmds for a in ("-ex", c)]
                             + [BINARY], capture_output=True, text=True, check=False).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    targets = re.findall(r"^(\S+)(?: \+ \d+)? in section", out, re.M)
    if not slots or len(targets) != len(slots):
        return None
    return {members[t] for t in targets if t in members}


def member_pattern(archive, member, dispatchers, selected):
    # memchr-avx2.o or the dispatcher memchr.o -> memchr.o and the variants
    # memchr-*.o this CPU runs (valgrind runs its own string functions in
    # place of some, and its virtual CPU picks other variants), or all of
    # them when that is not known
    stem = member[:-2] if member.endswith(".o") else member
    family = stem.split("-", 1)[0]
    if (archive, member) in dispatchers or (archive, f"{family}.o") in dispatchers:
        if selected is None:
            variants = [f"*{archive}:{family}-*.o(.text .text.*)"]
        else:
            variants = sorted(f"*{archive}:{m}(.text .text.*)" for a, m in selected
                              if a == archive and m.startswith(f"{family}-"))
        return [f"*{archive}:{family}.o(.text .text.*)"] + variants
    return [f"*{archive}:{member}(.text .text.*)"]


def main():
    args = sys.argv[1:]
    objects = ["antiopa", "???"]
    if args and args[0].startswith("--object="):
        objects += args.pop(0).split("=", 1)[1].split(",")
    if args and args[0] == "--run":
        args = run_profiles(args[1:])
    names = []
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
                    if name not in used_in:
                        names.append(name)
                    used_in.setdefault(name, set()).add(path)
    # Stable: within one level of sharing, first-seen order is kept.
    names.sort(key=lambda n: -len(used_in[n]))
    members, dispatchers = archive_members()
    selected = selected_variants(members)
    if selected is None:
        print("# CPU variants not known (no gdb?): all are listed", file=sys.stderr)
    patterns = []
    done = set()
    for n in names:
        if n.startswith(("_ZN", "_R")):
            found = [rust_pattern(n)]
        else:
            n = re.sub(r"'\d+$", "", n)
            base = re.sub(r"(\.(part|constprop|isra|cold)\.\d+)+$", "", n)
            hit = members.get(n) or members.get(base)
            found = member_pattern(*hit, dispatchers, selected) if hit else []
        for p in found:
            if p not in done:
                done.add(p)
                patterns.append(p)
    for p in patterns:
        print(p)


if __name__ == "__main__":
    main()

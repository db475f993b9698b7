#!/usr/bin/env bash
# Cost of `record --alloc` (issue 13), side by side with heaptrack in one run:
#   - the added cost of an unsampled malloc + free pair (bench/alloc_pair_benchmark run bare and
#     under `record --alloc`): goal <= 10 ns;
#   - an allocation-heavy word count (bench/alloc_heavy, ~20 M allocation calls/s as issue 13
#     sets it): slowdown at the default rate (goal <= 1.3x) and with --alloc=1 (every allocation
#     sampled), against heaptrack's on the same program; nativeprof's extra memory (its own peak
#     RSS plus what the target grew by) goal <= 50 MB;
#   - at the default rate, besides: the same calls twice as densely (`alloc_heavy 1 dense`, ~42 M
#     calls/s: reported, the issue sets no goal for it), and a buffer grown by realloc to 64 MiB
#     (bench/alloc_grow, as a Rust Vec grows), whose large steps are all sampled (goal <= 1.3x).
# Slowdown = wall time of the profiled run / of the bare run, medians of ROUNDS. Exits 1 when a
# goal is missed. Usage: bench/alloc_e2e.sh [BUILD_DIR=build] [ROUNDS=3]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
rounds=${2:-3}
np="$build/tools/nativeprof"
heavy="$build/bench/alloc_heavy"
pair="$build/bench/alloc_pair_benchmark"
for f in "$np" "$heavy" "$pair" "$build/bench/alloc_pair_loop" "$build/bench/alloc_grow"; do
  [[ -x "$f" ]] || { echo "missing $f (build it first)" >&2; exit 1; }
done
command -v heaptrack >/dev/null || { echo "heaptrack is not installed (tools/setup.sh)" >&2; exit 1; }
[[ -x /usr/bin/time ]] || { echo "/usr/bin/time is missing (apt-get install time)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

python3 - "$np" "$heavy" "$pair" "$rounds" "$work" "$build/bench/alloc_pair_loop" \
  "$build/bench/alloc_grow" <<'PY'
import json, os, statistics, subprocess, sys, time

np, heavy, pair, rounds, work, pair_loop, grow = sys.argv[1:8]
rounds = int(rounds)

def run(argv):
    """Wall seconds."""
    t = time.monotonic()
    if subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode != 0:
        sys.exit(f"failed: {' '.join(argv)}")
    return time.monotonic() - t

def peak_rss_kib(argv, name):
    """argv prefixed with /usr/bin/time, whose %M is its child's own peak RSS. A child forked
    from this Python process would carry Python's RSS into its high-water mark across exec."""
    out = f"{work}/{name}.rss"
    def read():
        return int(open(out).read().split()[-1])
    return ["/usr/bin/time", "-f", "%M", "-o", out] + argv, read

def record(rate, out):
    return [np, "record", "--no-counters", f"--alloc={rate}" if rate else "--alloc", "-o", out, "--"]

results = {"bare": [], "default": [], "every": [], "heaptrack": []}
# The other workloads, bare and at the default rate: label -> argv, goal (None: reported only).
others = {"alloc_heavy dense": ([heavy, "1", "dense"], None), "alloc_grow": ([grow], 1.3)}
other_runs = {label: {"bare": [], "default": []} for label in others}
for r in range(rounds):
    for label, (argv, _) in others.items():
        other_runs[label]["bare"].append(run(argv))
        other_runs[label]["default"].append(run(record(None, f"{work}/o.folded") + argv))
    results["bare"].append(run([heavy]))
    results["default"].append(run(record(None, f"{work}/d.folded") + [heavy]))
    meta = json.load(open(f"{work}/d.folded.json"))
    results["every"].append(run(record("1", f"{work}/e.folded") + [heavy]))
    results["heaptrack"].append(run(["heaptrack", "-o", f"{work}/ht{r}", heavy]))
# Memory, in one more untimed run: the bare target, nativeprof's own process and the target
# under the preload (each /usr/bin/time reports the process it started).
argv, bare_rss = peak_rss_kib([heavy], "bare")
run(argv)
target_argv, target_rss = peak_rss_kib([heavy], "target")
argv, np_rss = peak_rss_kib(record(None, f"{work}/m.folded") + target_argv, "np")
run(argv)
bare_rss, target, tree = bare_rss(), target_rss(), np_rss()

med = {k: statistics.median(v) for k, v in results.items()}
slow = {k: med[k] / med["bare"] for k in ("default", "every", "heaptrack")}
exact = meta["allocations"]["exact"]
calls = exact["allocation_calls"]
print(f"alloc_heavy: {calls:,} allocation calls, bare {med['bare']:.3f} s "
      f"({calls / med['bare'] / 1e6:.1f} M calls/s), medians of {rounds}")
for k, label in (("default", "nativeprof --alloc (512 KiB)"), ("every", "nativeprof --alloc=1"),
                 ("heaptrack", "heaptrack")):
    print(f"  {label:30s} {med[k]:7.3f} s  {slow[k]:6.2f}x")
other_slow = {}
for label, runs in other_runs.items():
    m = {k: statistics.median(v) for k, v in runs.items()}
    other_slow[label] = m["default"] / m["bare"]
    print(f"{label}: bare {m['bare']:.3f} s, nativeprof --alloc {m['default']:.3f} s "
          f"{other_slow[label]:6.2f}x")
# Extra = nativeprof's own peak + what the target grew by under the preload.
extra = (tree + max(0, target - bare_rss)) / 1024
print(f"  memory: bare target {bare_rss / 1024:.1f} MiB, target under the preload "
      f"{target / 1024:.1f} MiB, nativeprof itself {tree / 1024:.1f} MiB; extra {extra:.1f} MiB")

def pair_ns(argv):
    out = f"{work}/pair.json"
    subprocess.run(argv + [pair, "--benchmark_format=json", f"--benchmark_out={out}",
                           "--benchmark_repetitions=3", "--benchmark_report_aggregates_only=true"],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    data = json.load(open(out))
    return {b["run_name"]: b["real_time"] for b in data["benchmarks"] if b["aggregate_name"] == "median"}

# This VM's speed drifts by up to 2x over seconds, so bare and profiled runs alternate and each
# side keeps its fastest: the least disturbed run of each is what the hooks themselves cost.
bare_pair, prof_pair = {}, {}
for _ in range(5):
    for side, argv in ((bare_pair, []), (prof_pair, record(None, f"{work}/p.folded"))):
        for name, ns in pair_ns(argv).items():
            side[name] = min(ns, side.get(name, ns))
worst = 0.0
for name, ns in sorted(bare_pair.items()):
    added = prof_pair[name] - ns
    worst = max(worst, added)
    print(f"  {name}: {ns:.1f} ns bare, {prof_pair[name]:.1f} ns profiled, +{added:.1f} ns")

def pair_instructions(prefix):
    """Instructions per malloc + free pair under callgrind: the count for 2 M pairs minus the
    count for 1 M, so start-up and the preload's attach cancel out."""
    counts = []
    for n in (1_000_000, 2_000_000):
        argv = prefix + ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                         pair_loop, str(n)]
        out = subprocess.run(argv, capture_output=True, text=True).stderr
        counts.append(int(next(l for l in out.splitlines() if "Collected :" in l).split()[-1]))
    return (counts[1] - counts[0]) / 1_000_000

if subprocess.run(["valgrind", "--version"], capture_output=True).returncode == 0:
    bare_ir = pair_instructions([])
    prof_ir = pair_instructions(record(None, f"{work}/v.folded"))
    print(f"  instructions per malloc(64) + free pair (callgrind): {bare_ir:.0f} bare, "
          f"{prof_ir:.0f} profiled, +{prof_ir - bare_ir:.0f}")
else:
    print("  (valgrind not installed: no instruction counts)")

missed = []
if worst > 10: missed.append(f"unsampled pair +{worst:.1f} ns > 10 ns")
if slow["default"] > 1.3: missed.append(f"default-rate slowdown {slow['default']:.2f}x > 1.3x")
for label, (_, goal) in others.items():
    if goal is not None and other_slow[label] > goal:
        missed.append(f"{label} slowdown {other_slow[label]:.2f}x > {goal}x")
if slow["every"] >= slow["heaptrack"]: missed.append("--alloc=1 not below heaptrack")
if extra > 50: missed.append(f"extra memory {extra:.1f} MiB > 50 MiB")
print("goals: " + ("all met" if not missed else "MISSED: " + "; ".join(missed)))
sys.exit(1 if missed else 0)
PY

#!/usr/bin/env bash
# Cost of `record --alloc` (issue 13), side by side with heaptrack in one run:
#   - the added cost of an unsampled malloc + free pair (bench/alloc_pair_benchmark run bare and
#     under `record --alloc`): goal <= 10 ns;
#   - an allocation-heavy word count (bench/alloc_heavy, ~20 M allocation calls/s): slowdown at
#     the default rate (goal <= 1.3x) and with --alloc=1 (every allocation sampled), against
#     heaptrack's on the same program; nativeprof's extra memory (its own peak RSS plus what the
#     target grew by) goal <= 50 MB.
# Slowdown = wall time of the profiled run / of the bare run, medians of ROUNDS. Exits 1 when a
# goal is missed. Usage: bench/alloc_e2e.sh [BUILD_DIR=build] [ROUNDS=3]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
rounds=${2:-3}
np="$build/tools/nativeprof"
heavy="$build/bench/alloc_heavy"
pair="$build/bench/alloc_pair_benchmark"
for f in "$np" "$heavy" "$pair"; do [[ -x "$f" ]] || { echo "missing $f (build it first)" >&2; exit 1; }; done
command -v heaptrack >/dev/null || { echo "heaptrack is not installed (tools/setup.sh)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

python3 - "$np" "$heavy" "$pair" "$rounds" "$work" <<'PY'
import json, os, statistics, subprocess, sys, time

np, heavy, pair, rounds, work = sys.argv[1:6]
rounds = int(rounds)

def run(argv):
    """Wall seconds and the peak RSS (KiB) of the process tree's largest process."""
    t = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.monotonic() - t
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"failed: {' '.join(argv)}")
    return wall, ru.ru_maxrss

def record(rate, out):
    return [np, "record", "--no-counters", f"--alloc={rate}" if rate else "--alloc", "-o", out, "--"]

results = {"bare": [], "default": [], "every": [], "heaptrack": []}
rss = {}
for r in range(rounds):
    results["bare"].append(run([heavy])[0])
    wall, maxrss = run(record(None, f"{work}/d.folded") + [heavy])
    results["default"].append(wall)
    meta = json.load(open(f"{work}/d.folded.json"))
    rss.setdefault("default_tree_kib", []).append(maxrss)
    rss.setdefault("target_kib", []).append(meta["allocations"].get("peak_rss_bytes", 0) // 1024)
    results["every"].append(run(record("1", f"{work}/e.folded") + [heavy])[0])
    results["heaptrack"].append(run(["heaptrack", "-o", f"{work}/ht{r}", heavy])[0])
bare_rss = run([heavy])[1]

med = {k: statistics.median(v) for k, v in results.items()}
slow = {k: med[k] / med["bare"] for k in ("default", "every", "heaptrack")}
exact = meta["allocations"]["exact"]
calls = exact["allocation_calls"]
print(f"alloc_heavy: {calls:,} allocation calls, bare {med['bare']:.3f} s "
      f"({calls / med['bare'] / 1e6:.1f} M calls/s), medians of {rounds}")
for k, label in (("default", "nativeprof --alloc (512 KiB)"), ("every", "nativeprof --alloc=1"),
                 ("heaptrack", "heaptrack")):
    print(f"  {label:30s} {med[k]:7.3f} s  {slow[k]:6.2f}x")
# wait4 gives the largest process of nativeprof's tree: nativeprof itself when larger than the
# target (whose own peak the metadata has). Extra = nativeprof's own + what the target grew by.
tree = statistics.median(rss["default_tree_kib"])
target = statistics.median(rss["target_kib"])
extra = ((tree if tree > target else 0) + max(0, target - bare_rss)) / 1024
print(f"  memory: bare target {bare_rss / 1024:.1f} MiB, target under the preload "
      f"{target / 1024:.1f} MiB, largest process of the nativeprof run {tree / 1024:.1f} MiB; "
      f"extra {extra:.1f} MiB")

def pair_ns(argv):
    out = f"{work}/pair.json"
    subprocess.run(argv + [pair, "--benchmark_format=json", f"--benchmark_out={out}",
                           "--benchmark_repetitions=3", "--benchmark_report_aggregates_only=true"],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    data = json.load(open(out))
    return {b["run_name"]: b["real_time"] for b in data["benchmarks"] if b["aggregate_name"] == "median"}

bare_pair = pair_ns([])
prof_pair = pair_ns(record(None, f"{work}/p.folded"))
worst = 0.0
for name, ns in sorted(bare_pair.items()):
    added = prof_pair[name] - ns
    worst = max(worst, added)
    print(f"  {name}: {ns:.1f} ns bare, {prof_pair[name]:.1f} ns profiled, +{added:.1f} ns")

missed = []
if worst > 10: missed.append(f"unsampled pair +{worst:.1f} ns > 10 ns")
if slow["default"] > 1.3: missed.append(f"default-rate slowdown {slow['default']:.2f}x > 1.3x")
if slow["every"] >= slow["heaptrack"]: missed.append("--alloc=1 not below heaptrack")
if extra > 50: missed.append(f"extra memory {extra:.1f} MiB > 50 MiB")
print("goals: " + ("all met" if not missed else "MISSED: " + "; ".join(missed)))
sys.exit(1 if missed else 0)
PY

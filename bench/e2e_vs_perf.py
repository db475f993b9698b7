#!/usr/bin/env python3
"""End-to-end cost of profiling one workload, measured side by side in the same run.

Runs the workload (a) unprofiled, (b) under `perf record -F HZ -g` followed by `perf script` and
collapsing to folded stacks, and (c) under `nativeprof record -F HZ`, REPEAT times each, and prints
the target's slowdown (wall time ratio) and the profiler's own CPU time (CPU of the profiled run
minus the workload's unprofiled CPU, plus post-processing) as ratios against perf.

Usage: bench/e2e_vs_perf.py --nativeprof BUILD/tools/nativeprof --workload BUILD/bench/e2e_workload
                            [--args 4000] [--freq 999] [--repeat 3] [--call-graph fp|dwarf]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from perf_collapse import collapse_perf_script  # noqa: E402


def run(argv, stdout=subprocess.DEVNULL):
    """Runs argv; returns (wall seconds, CPU seconds of the whole process tree, max RSS KiB)."""
    start = time.monotonic()
    proc = subprocess.Popen(argv, stdout=stdout, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - start
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{argv[0]} failed with status {status}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nativeprof", required=True)
    ap.add_argument("--workload", required=True)
    ap.add_argument("--args", default="4000")
    ap.add_argument("--freq", default="999")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--call-graph", default="fp", choices=["fp", "dwarf"])
    a = ap.parse_args()
    workload = [a.workload] + a.args.split()
    tmp = tempfile.mkdtemp(prefix="np-bench-")
    perf_g = ["-g"] if a.call_graph == "fp" else ["--call-graph", "dwarf"]

    base, perf_rec, perf_post, nat = [], [], [], []
    for _ in range(a.repeat):
        base.append(run(workload))
        data = os.path.join(tmp, "perf.data")
        perf_rec.append(run(["perf", "record", "-q", "-F", a.freq, "-e", "cpu-clock"] + perf_g +
                            ["-o", data, "--"] + workload))
        script = os.path.join(tmp, "perf.script")
        with open(script, "w") as out:
            s_wall, s_cpu, s_rss = run(["perf", "script", "-i", data, "-F", "comm,ip,sym"],
                                       stdout=out)
        _, collapse_cpu = collapse_perf_script(script)
        perf_post.append((s_wall, s_cpu + collapse_cpu, s_rss, os.path.getsize(data)))
        nat.append(run([a.nativeprof, "record", "-F", a.freq, "-e", "cpu-clock",
                        "--call-graph", a.call_graph, "-o", os.path.join(tmp, "np.folded"),
                        "--"] + workload))

    med = statistics.median
    base_wall, base_cpu = med(r[0] for r in base), med(r[1] for r in base)
    perf_wall = med(r[0] for r in perf_rec)
    nat_wall = med(r[0] for r in nat)
    perf_cpu = med(r[1] for r in perf_rec) - base_cpu + med(p[1] for p in perf_post)
    nat_cpu = med(r[1] for r in nat) - base_cpu
    print(f"workload: {' '.join(workload)}  ({a.repeat} runs each, medians, -F {a.freq}, "
          f"call graph {a.call_graph})")
    print(f"unprofiled          wall {base_wall:7.3f} s   cpu {base_cpu:7.3f} s")
    print(f"perf record         wall {perf_wall:7.3f} s   slowdown {perf_wall / base_wall:5.3f}x   "
          f"perf.data {med(p[3] for p in perf_post) / 1e6:.1f} MB")
    print(f"perf script+collapse cpu {med(p[1] for p in perf_post):7.3f} s")
    print(f"nativeprof record   wall {nat_wall:7.3f} s   slowdown {nat_wall / base_wall:5.3f}x   "
          f"peak RSS (tree) {med(r[2] for r in nat) / 1024:.1f} MB")
    print(f"profiler CPU        perf {perf_cpu:7.3f} s   nativeprof {nat_cpu:7.3f} s   "
          f"ratio nativeprof/perf {nat_cpu / perf_cpu if perf_cpu > 0 else float('nan'):.3f}")


if __name__ == "__main__":
    main()

#!/usr/bin/env bash
# Cost of `record --off-cpu` (issue 12), side by side with perf in one run:
#   - a 2-thread program handing a byte back and forth ~20k times a second (each hand-off a
#     voluntary switch; tests/targets/offcpu_workload pingpong SECONDS WORK_US):
#       target slowdown with nativeprof --off-cpu <= slowdown with
#       perf record -e context-switches -c 1 --call-graph dwarf, and
#       nativeprof's own CPU <= 1/10 of that perf record + perf script + collapsing;
#   - the worst case, the same ping-pong with no work between hand-offs: slowdown, lost records
#     and own CPU with the default 8 KiB stack copy per switch and with --off-cpu-stack 0.
# Slowdown = hand-offs per second without a profiler / with it. A tool's own CPU = CPU of its
# process tree minus the target's (bench/exit_stamp). Exits 1 when a goal is missed.
# Usage: bench/off_cpu_e2e.sh [BUILD_DIR=build] [SECONDS=10]; OFFCPU_ROUNDS (3) and
# OFFCPU_WORK_US (40) change the rounds and the work per hand-off.
target_name=offcpu_workload
source "$(dirname "${BASH_SOURCE[0]}")/e2e_setup.sh"

PYTHONPATH="$(dirname "${BASH_SOURCE[0]}")" python3 - "$np" "$target" "$stamp" "$seconds" "$work" <<'PY'
import json, os, statistics, subprocess, sys, time
from perf_collapse import collapse_perf_script

np, target, stamp, seconds, work = sys.argv[1:6]
seconds = int(seconds)

def run(argv, stdout_path=None):
    out = open(stdout_path, "w") if stdout_path else subprocess.DEVNULL
    proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(proc.pid, 0)
    if stdout_path:
        out.close()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{argv[:4]} failed: status {status}")
    return ru.ru_utime + ru.ru_stime

def handoffs(path):
    for line in open(path):
        if line.startswith("switches "):
            return int(line.split()[1])
    sys.exit(f"no switch count in {path}")

def wrapped(work_us):
    # Both threads on CPU 0: hand-offs are then direct switches, and their rate varies ~2% from
    # run to run instead of ~10% when the scheduler moves the threads between CPUs. Profilers
    # run unpinned.
    return [stamp, f"{work}/exit", "taskset", "-c", "0", target, "pingpong", str(seconds),
            str(work_us)]

def target_cpu():
    return float(open(f"{work}/exit").read().split()[1])

def baseline(work_us):
    run(wrapped(work_us), f"{work}/base.out")
    return handoffs(f"{work}/base.out") / seconds

def nativeprof(work_us, extra):
    out = f"{work}/np.folded"
    cpu = run([np, "record", "--off-cpu", "--no-counters", *extra, "-o", out, "--"] + wrapped(work_us),
              f"{work}/np.out")
    meta = json.load(open(out + ".json"))
    lost = meta["lost"]["records"] + meta["lost"]["samples"]
    return handoffs(f"{work}/np.out") / seconds, cpu - target_cpu(), lost, meta["off_cpu"]["switch_samples"]

PERF_REFERENCE = ["-e", "context-switches", "-c", "1", "--call-graph", "dwarf"]
# The same recording with what --off-cpu needs besides: switch records (switch-in times), the
# CLOCK_MONOTONIC clock, and CPU samples.
PERF_SAME_WORK = ["-k", "mono", "--switch-events", "-e", "context-switches/period=1/",
                  "-e", "cpu-clock/freq=999/", "--call-graph", "dwarf"]

def perf(work_us, args=PERF_REFERENCE):
    cpu = run(["perf", "record", "-q", *args, "-o", f"{work}/perf.data", "--"] + wrapped(work_us),
              f"{work}/perf.out")
    rate, record_cpu = handoffs(f"{work}/perf.out") / seconds, cpu - target_cpu()
    script_cpu = run(["perf", "script", "-i", f"{work}/perf.data", "-F", "comm,tid,ip,sym"],
                     f"{work}/perf.txt")
    counts, collapse_cpu = collapse_perf_script(f"{work}/perf.txt")
    return rate, record_cpu, script_cpu, collapse_cpu, sum(counts.values())

paced_us = int(os.environ.get("OFFCPU_WORK_US", "40"))
rounds = int(os.environ.get("OFFCPU_ROUNDS", "3"))
# The hand-off rate of a 2-thread ping-pong on 2 CPUs varies by several percent from run to run:
# the three are run in turn, `rounds` times, and compared by their medians.
runs = {"base": [], "np": [], "np0": [], "perf": [], "perf_same": []}
for _ in range(rounds):
    runs["base"].append(baseline(paced_us))
    runs["np"].append(nativeprof(paced_us, []))
    runs["np0"].append(nativeprof(paced_us, ["--off-cpu-stack", "0"]))
    runs["perf"].append(perf(paced_us))
    runs["perf_same"].append(perf(paced_us, PERF_SAME_WORK))
base = statistics.median(runs["base"])
np_rate = statistics.median(r[0] for r in runs["np"])
np_cpu = statistics.median(r[1] for r in runs["np"])
np_lost = max(r[2] for r in runs["np"])
np_switches = statistics.median(r[3] for r in runs["np"])
p_rate = statistics.median(r[0] for r in runs["perf"])
p_record = statistics.median(r[1] for r in runs["perf"])
p_script = statistics.median(r[2] for r in runs["perf"])
p_collapse = statistics.median(r[3] for r in runs["perf"])
p_samples = statistics.median(r[4] for r in runs["perf"])
perf_total = p_record + p_script + p_collapse
np_slow, p_slow = base / np_rate, base / p_rate
print(f"paced ping-pong: {paced_us} us of work per hand-off, {base:.0f} hand-offs/s without a profiler, {seconds} s, medians of {rounds} rounds")
print(f"  nativeprof --off-cpu: {np_rate:.0f}/s (slowdown {np_slow:.3f}x), own CPU {np_cpu:.3f} s, {np_switches:.0f} switch samples, at most {np_lost} lost")
print(f"  perf record -e context-switches -c 1 --call-graph dwarf: {p_rate:.0f}/s (slowdown {p_slow:.3f}x), own CPU {p_record:.3f} s; perf script {p_script:.3f} s; collapse {p_collapse:.3f} s ({p_samples:.0f} samples)")
ratio = np_cpu / perf_total if perf_total > 0 else float("nan")
print(f"  CPU ratio nativeprof / (perf record + script + collapse) = {np_cpu:.3f} / {perf_total:.3f} = {ratio:.3f} (goal <= 0.100)")
print(f"  slowdown nativeprof {np_slow:.3f}x vs perf {p_slow:.3f}x (goal: nativeprof <= perf)")
same_rate = statistics.median(r[0] for r in runs["perf_same"])
np0_rate = statistics.median(r[0] for r in runs["np0"])
print(f"  perf doing what --off-cpu does ({' '.join(PERF_SAME_WORK)}): {same_rate:.0f}/s (slowdown {base / same_rate:.3f}x)")
print(f"  nativeprof --off-cpu --off-cpu-stack 0: {np0_rate:.0f}/s (slowdown {base / np0_rate:.3f}x), own CPU {statistics.median(r[1] for r in runs['np0']):.3f} s")
print(f"  slowdown goal with --off-cpu-stack 0: {base / np0_rate:.3f}x vs perf {p_slow:.3f}x: {'met' if base / np0_rate <= p_slow * 1.02 else 'missed'}")
ok = ratio <= 0.1 and np_slow <= p_slow * 1.02  # 2%: what is left of the rate's noise in a median

worst = baseline(0)
print(f"worst case: ping-pong with no work, {worst:.0f} hand-offs/s without a profiler")
for label, extra in (("--off-cpu (8 KiB stack per switch)", []), ("--off-cpu --off-cpu-stack 0", ["--off-cpu-stack", "0"])):
    rate, cpu, lost, switches = nativeprof(0, extra)
    print(f"  nativeprof {label}: {rate:.0f}/s (slowdown {worst / rate:.2f}x), own CPU {cpu:.3f} s, {switches} switch samples, {lost} lost")
print("PASS" if ok else "FAIL")
sys.exit(0 if ok else 1)
PY

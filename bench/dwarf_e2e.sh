#!/usr/bin/env bash
# End to end cost of `--call-graph dwarf`, side by side with perf (issue 4's speed goals):
#   - nativeprof record --call-graph dwarf must finish within 1 s of the target's exit,
#   - its CPU time must be at most 1/10 of perf record --call-graph dwarf + perf script +
#     collapsing to folded stacks for the same run,
#   - its peak RSS must stay under 100 MB.
# nativeprof runs twice over a fresh cache (NATIVEPROF_CACHE_DIR): cold, then warm; the ratio
# goal is checked on the warm run, the delay and RSS goals on both.
# The target is tests/targets/nofp_workload (-O2 -fomit-frame-pointer), SECONDS long, 2 threads,
# sampled at 999 Hz. A tool's own CPU = CPU of its whole process tree minus the target's CPU
# (measured by bench/exit_stamp around the target in the same run).
# Usage: bench/dwarf_e2e.sh [BUILD_DIR=build] [SECONDS=10]
target_name=nofp_workload
source "$(dirname "${BASH_SOURCE[0]}")/e2e_setup.sh"

PYTHONPATH="$(dirname "${BASH_SOURCE[0]}")" python3 - "$np" "$target" "$stamp" "$seconds" "$work" <<'PY'
import collections, os, subprocess, sys, time
from perf_collapse import collapse_perf_script

np, target, stamp, seconds, work = sys.argv[1:6]
# exit_stamp runs the target, then writes its exit time and its CPU seconds.
wrapper = [stamp, f"{work}/exit", target, seconds, "2", "40", "20"]

def run(argv, stdout=subprocess.DEVNULL):
    start = time.time()
    proc = subprocess.Popen(argv, stdout=stdout, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(proc.pid, 0)
    end = time.time()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{argv[:3]} failed: status {status}")
    return end, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024.0

def target_exit():
    t, cpu = open(f"{work}/exit").read().split()
    return float(t), float(cpu)

def nativeprof_run(out):
    end, cpu, rss = run([np, "record", "--call-graph", "dwarf", "-F", "999", "-o", out, "--"] + wrapper)
    t_exit, t_cpu = target_exit()
    samples = sum(int(l.rsplit(" ", 1)[1]) for l in open(out) if l.strip())
    return cpu - t_cpu, end - t_exit, rss, samples, t_cpu

# nativeprof, twice over one fresh cache: the first run ("cold") pays for decompressing debug
# files and reading /proc/kallsyms; the second ("warm") is what every later profile costs.
os.environ["NATIVEPROF_CACHE_DIR"] = f"{work}/cache"
cold = nativeprof_run(f"{work}/np-cold.folded")
warm = nativeprof_run(f"{work}/np.folded")
np_cpu, np_delay, np_rss, np_samples, t_cpu = warm

# perf record + perf script + collapse
end, cpu, rss = run(["perf", "record", "-q", "--call-graph", "dwarf", "-F", "999", "-o", f"{work}/perf.data", "--"] + wrapper)
t_exit2, t_cpu2 = target_exit()
perf_record_cpu, perf_delay, perf_rss = cpu - t_cpu2, end - t_exit2, rss
with open(f"{work}/perf.txt", "w") as out:
    _, script_cpu, script_rss = run(["perf", "script", "-i", f"{work}/perf.data", "-F", "comm,tid,ip,sym"], stdout=out)
counts, collapse_cpu = collapse_perf_script(f"{work}/perf.txt")
perf_total = perf_record_cpu + script_cpu + collapse_cpu

print(f"target: nofp_workload {seconds} s, 2 threads, 999 Hz; target CPU {t_cpu:.2f} s (nativeprof run), {t_cpu2:.2f} s (perf run)")
for label, (cpu_s, delay, rss_mb, samples, _) in (("cold cache", cold), ("warm cache", warm)):
    print(f"nativeprof record --call-graph dwarf ({label}): own CPU {cpu_s:.3f} s, finished {delay:.3f} s after the target's exit, peak RSS {rss_mb:.1f} MB, {samples} samples")
print(f"perf record --call-graph dwarf: own CPU {perf_record_cpu:.3f} s, finished {perf_delay:.3f} s after exit, RSS {perf_rss:.1f} MB")
print(f"perf script: CPU {script_cpu:.3f} s, RSS {script_rss:.1f} MB; collapsing: CPU {collapse_cpu:.3f} s ({sum(counts.values())} samples)")
ratio = np_cpu / perf_total if perf_total > 0 else float("nan")
cold_ratio = cold[0] / perf_total if perf_total > 0 else float("nan")
print(f"CPU ratio nativeprof / (perf record + perf script + collapse) = {np_cpu:.3f} / {perf_total:.3f} = {ratio:.3f} warm (goal <= 0.100), {cold_ratio:.3f} cold")
print(f"finish delay after target exit: {np_delay:.3f} s (goal <= 1 s); peak RSS {max(np_rss, cold[2]):.1f} MB (goal < 100 MB)")
ok = ratio <= 0.1 and max(np_delay, cold[1]) <= 1.0 and max(np_rss, cold[2]) < 100
print("PASS" if ok else "FAIL")
sys.exit(0 if ok else 1)
PY

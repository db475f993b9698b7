#!/usr/bin/env python3
"""Attaching to an overloaded process (issue 15): wall time, lost records and the profiler's own
run-queue wait of `nativeprof record -p PID --duration D`, and of `perf record -p PID` for the
same D, against tests/targets/overload_spinners (THREADS always-runnable threads).

nativeprof's own metadata adds its priority and startup_ms (its age when it raised its priority;
before that, exec and dynamic loading wait for a CPU at normal priority). The script itself runs
at SCHED_FIFO 2 when it may (so its clock and its /proc sampling are not
starved like the profilers it measures) and starts each profiler at SCHED_OTHER, nice 0, exactly
as a user's shell would. The run-queue wait is read from /proc/PID/schedstat of the profiler's
main thread every 10 ms until it exits (the last reading before exit).

Usage: bench/overload_attach.py --nativeprof BUILD/tools/nativeprof
           --target BUILD/tests/targets/overload_spinners [--threads 500] [--duration 2]
           [--repeat 3] [--perf] [--extra-args "--no-counters"]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time


def normal_priority():
    os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
    os.setpriority(os.PRIO_PROCESS, 0, 0)


def timed(argv):
    """Runs argv at normal priority; returns (wall s, run-queue wait s, on-CPU s, stderr)."""
    err = tempfile.TemporaryFile()
    start = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err,
                            preexec_fn=normal_priority)
    on_cpu = wait = 0.0
    while proc.poll() is None:
        try:
            with open(f"/proc/{proc.pid}/schedstat") as f:
                fields = f.read().split()
            on_cpu, wait = int(fields[0]) / 1e9, int(fields[1]) / 1e9
        except (OSError, IndexError, ValueError):
            pass
        time.sleep(0.01)
    wall = time.monotonic() - start
    err.seek(0)
    return wall, wait, on_cpu, err.read().decode(errors="replace")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nativeprof", required=True)
    ap.add_argument("--target", required=True)
    ap.add_argument("--threads", type=int, default=500)
    ap.add_argument("--duration", default="2")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--perf", action="store_true", help="also measure perf record -p")
    ap.add_argument("--extra-args", default="", help="more nativeprof record options")
    a = ap.parse_args()
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(2))
    except PermissionError:
        print("note: not permitted to run at SCHED_FIFO; timings include this script's waits")
    tmp = tempfile.mkdtemp(prefix="np-overload-")
    target = subprocess.Popen([a.target, str(a.threads)], stdout=subprocess.PIPE,
                              preexec_fn=normal_priority)
    print(target.stdout.readline().decode().strip(), f"on {os.cpu_count()} CPUs")
    try:
        time.sleep(1)
        for i in range(a.repeat):
            folded = f"{tmp}/run{i}.folded"
            wall, wait, cpu, err = timed([a.nativeprof, "record", "-p", str(target.pid),
                                          "--duration", a.duration, "-o", folded] +
                                         a.extra_args.split())
            meta = {}
            try:
                with open(folded + ".json") as f:
                    meta = json.load(f)
            except (OSError, ValueError):
                pass
            lost = meta.get("lost", {})
            lost_n = lost.get("records", 0) + lost.get("samples", 0)
            samples = meta.get("samples", 0)
            share = 100.0 * lost_n / max(1, samples + lost_n)
            threads = set()
            try:
                with open(folded) as f:
                    threads = {line.split(";", 1)[0] for line in f}
            except OSError:
                pass
            summary = [line for line in err.splitlines() if "lost" in line]
            sched = meta.get("scheduling", {})
            startup = sched.get("startup_ms")
            print(f"nativeprof: wall {wall:.2f} s, samples {samples}, lost {lost_n} "
                  f"({share:.2f} %), run-queue wait {wait * 1000:.0f} ms, on-CPU "
                  f"{cpu * 1000:.0f} ms, {len(threads)} threads sampled, "
                  f"sampling {meta.get('duration_seconds', 0):.2f} s" +
                  (f", {sched.get('priority')}, startup {startup:.0f} ms, wall after startup "
                   f"{wall - startup / 1000:.2f} s" if startup is not None else ""))
            for line in summary:
                print("   ", line)
        if a.perf:
            for i in range(a.repeat):
                data = f"{tmp}/perf{i}.data"
                wall, wait, cpu, err = timed(["perf", "record", "-p", str(target.pid), "-F",
                                              "999", "-g", "-o", data, "--", "sleep",
                                              a.duration])
                stats = subprocess.run(["perf", "report", "-i", data, "--stats"],
                                       capture_output=True, text=True).stdout
                samples = re.search(r"SAMPLE events:\s+(\d+)", stats)
                lost = re.search(r"LOST events:\s+(\d+)", stats)
                print(f"perf: wall {wall:.2f} s, samples {samples.group(1) if samples else '?'}, "
                      f"LOST events {lost.group(1) if lost else 0}, run-queue wait "
                      f"{wait * 1000:.0f} ms, on-CPU {cpu * 1000:.0f} ms")
    finally:
        target.kill()
        target.wait()


if __name__ == "__main__":
    sys.exit(main())

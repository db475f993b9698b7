"""stackcollapse-perf.pl's job for the benchmarks: `perf script -F comm,...,ip,sym` text to folded
stacks, timed, so a comparison can charge perf's pipeline for it."""
import collections
import time


def collapse_perf_script(path):
    """Returns (Counter of "comm;root;...;leaf" -> samples, CPU seconds spent collapsing)."""
    cpu0 = time.process_time()
    counts = collections.Counter()
    comm, frames = None, []
    with open(path, errors="replace") as f:
        for line in f:
            if not line.strip():
                if comm is not None:
                    counts[";".join([comm] + frames[::-1])] += 1
                comm, frames = None, []
            elif line[0] not in " \t":
                comm = line.split(None, 1)[0]
            else:
                parts = line.split()
                frames.append(parts[1].split("+")[0] if len(parts) > 1 else "[unknown]")
    if comm is not None:
        counts[";".join([comm] + frames[::-1])] += 1
    return counts, time.process_time() - cpu0

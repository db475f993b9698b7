#!/usr/bin/env bash
# From a fresh machine: installs dependencies, builds nativeprof (release, with symbols), profiles
# the bundled demo workload, and shows the five hottest stacks, the counter summary and where the
# outputs are.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

bash tools/setup.sh
build=${NATIVEPROF_RELEASE_DIR:-build-release}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DNATIVEPROF_BUILD_TESTS=OFF -DNATIVEPROF_BUILD_BENCH=OFF >/dev/null
cmake --build "$build" -j2 --target nativeprof nativeprof_alloc nativeprof-demo-workload

out="$root/out"
mkdir -p "$out"
echo
echo "== nativeprof record -F 999 -- nativeprof-demo-workload 3"
"$build/tools/nativeprof" record -F 999 -o "$out/demo.folded" -o "$out/demo.svg" \
  -- "$build/tools/nativeprof-demo-workload" 3
echo
echo "== five hottest stacks (samples, then stack root;...;leaf)"
# Sorted into a file first: `sort | head` would end sort with SIGPIPE, which pipefail reports.
awk '{n=$NF; $NF=""; printf "%8d  %s\n", n, $0}' "$out/demo.folded" | sort -rn >"$out/demo.hottest.txt"
head -5 "$out/demo.hottest.txt" | cut -c1-220
echo
echo "== where the threads wait: nativeprof record --off-cpu -- nativeprof-demo-workload 2"
# Off-CPU sampling needs kernel-side events; without them nativeprof says which setting to change.
if "$build/tools/nativeprof" record --off-cpu --no-counters -o "$out/wait.folded" \
  -o "$out/wait.svg" -- "$build/tools/nativeprof-demo-workload" 2; then
  echo
  echo "== the calls that blocked longest, and each thread's time on and off the CPU"
  "$build/tools/nativeprof" report --top 5 "$out/wait.offcpu.folded" >"$out/wait.report.txt"
  sed -n '/^Top [0-9]* blocking/,$p' "$out/wait.report.txt"
fi
echo
echo "== where the memory goes: nativeprof record --alloc -- nativeprof-demo-workload 1"
"$build/tools/nativeprof" record --alloc --no-counters -o "$out/mem.folded" -o "$out/mem.svg" \
  -o "$out/mem.pb.gz" -- "$build/tools/nativeprof-demo-workload" 1
echo
echo "== the call sites that allocate the most bytes"
"$build/tools/nativeprof" report --top 5 "$out/mem.alloc.folded" >"$out/mem.report.txt"
# The whole allocation section: a line count cut it in the middle of a table.
sed -n '/^Allocations/,$p' "$out/mem.report.txt" | cut -c1-220
echo
echo "outputs: $out/demo.folded (folded stacks), $out/demo.svg (flame graph), $out/demo.folded.json (metadata + counters)"
echo "         $out/wait.offcpu.folded and $out/wait.offcpu.svg (off-CPU time, us), $out/wait.folded (CPU)"
echo "         $out/mem.{alloc,allocs,temporary,peak,leaked}.{folded,svg} (allocation sites), $out/mem.heap.pb.gz (go tool pprof)"

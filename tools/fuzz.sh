#!/usr/bin/env bash
# Builds the libFuzzer targets with clang-14 + ASan/UBSan and runs each over its seed corpus
# (tests/fuzz/corpus/<target>/). Fails on any crash, leak, sanitizer report, or allocation over the
# per-input ceiling (-malloc_limit_mb: a large allocation is reported as the bug it is).
#
# CI runs are deterministic: a fixed seed and a fixed number of executions per target
# (target_runs below), so a submission cannot fail on an input that an earlier
# run happened not to reach; every finding becomes a seed in the corpus with its fix. Explore for
# new findings with a time budget instead: tools/fuzz.sh --explore SECONDS [TARGET...].
# Usage: tools/fuzz.sh [SECONDS_LIMIT_PER_TARGET]   (a safety limit; the run count ends the run)
#        tools/fuzz.sh --explore SECONDS [TARGET...]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
explore=0
if [[ "${1:-}" == "--explore" ]]; then
  explore=1
  shift
fi
seconds=${1:-60}
shift || true
# Executions per target in CI, each about 30-45 s on a busy 2-core machine (their speeds differ
# 20-fold); NATIVEPROF_FUZZ_RUNS overrides them all.
declare -A target_runs=(
  [alloc_writer_fuzzer]=200000 [alloc_stack_decoder_fuzzer]=200000 [demangle_fuzzer]=100000 [elf_loader_fuzzer]=300000 [folded_reader_fuzzer]=25000
  [kernel_symbol_index_fuzzer]=50000 [perf_map_fuzzer]=300000 [proc_maps_fuzzer]=400000
  [record_parser_fuzzer]=400000 [tracker_fuzzer]=300000 [unwind_memo_fuzzer]=50000
)
build=${NATIVEPROF_FUZZ_BUILD_DIR:-build-fuzz}

cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
  -DNATIVEPROF_BUILD_TESTS=ON -DNATIVEPROF_BUILD_BENCH=OFF -DNATIVEPROF_BUILD_FUZZERS=ON >/dev/null
targets=${*:-$(cd tests/fuzz && ls *_fuzzer.cc 2>/dev/null | sed 's/\.cc$//')}
if [[ -z "$targets" ]]; then
  echo "fuzz: no fuzz targets" >&2
  exit 0
fi
cmake --build "$build" -j2 --target $targets

status=0
for t in $targets; do
  seeds="tests/fuzz/corpus/$t"
  if (( explore )); then
    # Exploration keeps what it found interesting for the next exploration.
    corpus="$build/corpus/$t"
    mkdir -p "$corpus"
    echo "fuzz: exploring with $t for ${seconds}s" >&2
    budget=(-max_total_time="$seconds")
  else
    runs=${NATIVEPROF_FUZZ_RUNS:-${target_runs[$t]:-200000}}
    corpus="$build/corpus-run/$t"
    rm -rf "$corpus"
    mkdir -p "$corpus"
    echo "fuzz: running $t for $runs executions (seed 1, at most $((seconds * 3))s)" >&2
    # The time limit only guards CI's clock; its runs are the same inputs every time.
    budget=(-seed=1 -runs="$runs" -max_total_time="$((seconds * 3))")
  fi
  if ! "$build/tests/fuzz/$t" "${budget[@]}" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=512 \
      -print_final_stats=0 "$corpus" $( [[ -d "$seeds" ]] && echo "$seeds" ) \
      >"$build/$t.log" 2>&1; then
    echo "fuzz: $t FAILED; last lines of $build/$t.log:" >&2
    tail -40 "$build/$t.log" >&2
    status=1
  else
    echo "fuzz: $t passed ($(grep -o 'Done [0-9]* runs' "$build/$t.log" | tail -1))" >&2
  fi
done
exit $status

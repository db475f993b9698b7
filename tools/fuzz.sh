#!/usr/bin/env bash
# Builds the libFuzzer targets with clang-14 + ASan/UBSan and runs each for a bounded time over
# its seed corpus (tests/fuzz/corpus/<target>/). Fails on any crash, leak or sanitizer report.
# Usage: tools/fuzz.sh [SECONDS_PER_TARGET]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
seconds=${1:-60}
build=${NATIVEPROF_FUZZ_BUILD_DIR:-build-fuzz}

cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
  -DNATIVEPROF_BUILD_TESTS=ON -DNATIVEPROF_BUILD_BENCH=OFF -DNATIVEPROF_BUILD_FUZZERS=ON >/dev/null
targets=$(cd tests/fuzz && ls *_fuzzer.cc 2>/dev/null | sed 's/\.cc$//')
if [[ -z "$targets" ]]; then
  echo "fuzz: no fuzz targets" >&2
  exit 0
fi
cmake --build "$build" -j2 --target $targets

status=0
for t in $targets; do
  corpus="$build/corpus/$t"
  mkdir -p "$corpus"
  seeds="tests/fuzz/corpus/$t"
  echo "fuzz: running $t for ${seconds}s" >&2
  if ! "$build/tests/fuzz/$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
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

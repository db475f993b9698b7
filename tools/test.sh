#!/usr/bin/env bash
# Installs dependencies, builds nativeprof and runs the whole test suite (unit, integration, and a
# bounded libFuzzer run of every fuzz target). Exit status is non-zero if anything fails.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

bash tools/setup.sh

build=${NATIVEPROF_BUILD_DIR:-build}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j2
(cd "$build" && ctest -j2 --output-on-failure --timeout 600)

bash tools/fuzz.sh "${NATIVEPROF_FUZZ_SECONDS:-60}"

# Sourced by the end-to-end comparisons against perf (bench/*_e2e.sh) after setting `target_name`
# (a program in BUILD/tests/targets): reads the arguments [BUILD_DIR=build] [SECONDS=10] and sets
# root, build, seconds, np (the nativeprof binary), target, stamp (bench/exit_stamp) and work (a
# temporary directory removed on exit); exits 1 when a binary or perf is missing.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
seconds=${2:-10}
np="$build/tools/nativeprof"
target="$build/tests/targets/$target_name"
stamp="$build/bench/exit_stamp"
for f in "$np" "$target" "$stamp"; do [[ -x "$f" ]] || { echo "missing $f (build it first)" >&2; exit 1; }; done
command -v perf >/dev/null || { echo "perf is not installed" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

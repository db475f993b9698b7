#!/usr/bin/env bash
# Derives the symbolizer test binaries from sym_prog (run by CMake after it is linked):
#   sym_prog_stripped (+ .debug/sym_prog_stripped.debug via .gnu_debuglink, and a copy of the
#   debug file under sym-debug-root/.build-id/xx/yyyy.debug), sym_prog_minidebug (.gnu_debugdata),
#   sym_prog_zlib and sym_prog_zstd (compressed DWARF sections).
# Usage: sym_make_variants.sh SYM_PROG OUTPUT_DIR
set -euo pipefail
prog=$1
out=$2
cd "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Separate debug file, found by debuglink (in .debug/) and by build-id (in sym-debug-root/).
mkdir -p .debug
objcopy --only-keep-debug "$prog" "$tmp/sym_prog_stripped.debug"
strip --strip-all -o "$tmp/stripped" "$prog"
(cd "$tmp" && objcopy --add-gnu-debuglink=sym_prog_stripped.debug stripped)
cp "$tmp/sym_prog_stripped.debug" .debug/sym_prog_stripped.debug
build_id=$(readelf -n "$prog" | sed -n 's/.*Build ID: *//p' | head -1)
mkdir -p "sym-debug-root/.build-id/${build_id:0:2}"
cp "$tmp/sym_prog_stripped.debug" "sym-debug-root/.build-id/${build_id:0:2}/${build_id:2}.debug"
mv -f "$tmp/stripped" sym_prog_stripped

# MiniDebugInfo: the symbol table (no DWARF) xz-compressed into .gnu_debugdata of a stripped copy.
objcopy --only-keep-debug "$prog" "$tmp/mini.full"
objcopy --strip-debug --remove-section=.comment "$tmp/mini.full" "$tmp/mini"
xz --check=crc32 -9 -c "$tmp/mini" > "$tmp/mini.xz"
strip --strip-all -o "$tmp/minidebug" "$prog"
objcopy --add-section .gnu_debugdata="$tmp/mini.xz" "$tmp/minidebug"
mv -f "$tmp/minidebug" sym_prog_minidebug

# Compressed DWARF (SHF_COMPRESSED).
objcopy --compress-debug-sections=zlib-gabi "$prog" sym_prog_zlib
if ! objcopy --compress-debug-sections=zstd "$prog" sym_prog_zstd 2>/dev/null; then
  rm -f sym_prog_zstd
fi
touch sym_variants.stamp

#!/bin/sh
# Builds the two region examples against an installed libnativeprof with pkg-config only.
# Usage: build_with_pkgconfig.sh PREFIX OUTDIR   (PREFIX as given to cmake --install --prefix)
set -eu
prefix=$1
out=$2
here=$(cd "$(dirname "$0")" && pwd)
PKG_CONFIG_PATH=$(find "$prefix" -name nativeprof.pc -printf '%h'):${PKG_CONFIG_PATH:-}
export PKG_CONFIG_PATH
libdir=$(pkg-config --variable=libdir nativeprof)
cc -O1 -g -fno-omit-frame-pointer -fno-inline -o "$out/profile_region_c" "$here/profile_region.c" \
  $(pkg-config --cflags nativeprof) $(pkg-config --libs nativeprof) -Wl,-rpath,"$libdir"
c++ -std=c++17 -O1 -g -fno-omit-frame-pointer -fno-inline -o "$out/profile_region_cpp" \
  "$here/profile_region.cc" $(pkg-config --cflags nativeprof) $(pkg-config --libs nativeprof) \
  -pthread -Wl,-rpath,"$libdir"

#!/usr/bin/env bash
# Installs everything nativeprof needs to build, test and benchmark, from Debian packages.
# Idempotent: when every package is already installed it only runs dpkg-query and exits.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  libunwind-dev libdw-dev libelf-dev libabsl-dev libspdlog-dev libfmt-dev
  libbenchmark-dev libgtest-dev libgmock-dev liblzma-dev zlib1g-dev libzstd-dev nlohmann-json3-dev
  libdeflate-dev libbz2-dev  # libbz2.a: libdw's archive needs it (cmake/static_deps.cmake)
  linux-perf heaptrack binutils elfutils xz-utils libiberty-dev
  clang-14 libclang-rt-14-dev lld libc6-dbg
  python3
  chromium golang-go
  librust-criterion-dev libcpptoml-dev
)

# The Rust tests need cargo and rustc; the image usually has them (rustup), otherwise Debian's.
if ! command -v cargo >/dev/null && ! [[ -x "$HOME/.cargo/bin/cargo" ]]; then
  packages+=(cargo rustc)
fi

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done

if ((${#missing[@]} == 0)); then
  exit 0
fi

if [[ $(id -u) -ne 0 ]]; then
  SUDO=sudo
else
  SUDO=
fi

echo "setup: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# libunwind-dev (nongnu, has the remote unwinding API) conflicts with LLVM's libunwind-14-dev;
# apt removes the latter, which nothing here needs.
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null

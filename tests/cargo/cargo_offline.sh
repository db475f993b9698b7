#!/usr/bin/env bash
# Runs cargo offline against Debian's crates (/usr/share/cargo/registry) with a CARGO_HOME and a
# target directory of the caller's choosing, never the user's ~/.cargo configuration:
#
#   cargo_offline.sh --cargo PATH --home DIR --target-dir DIR [--lib-dir DIR] -- CARGO_ARGS...
#
# --home gets a config.toml replacing crates-io with the Debian directory source (written once,
# rewritten if different). --lib-dir is exported as NATIVEPROF_LIB_DIR for bindings/rust's
# build.rs. CARGO_TARGET_DIR is exported too, so Criterion writes under <target-dir>/criterion.
# The suite's Cargo tests (tests/cargo/cargo_tests.cmake) all go through here.
set -euo pipefail

cargo="" home="" target_dir="" lib_dir=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --cargo) cargo="$2"; shift 2 ;;
    --home) home="$2"; shift 2 ;;
    --target-dir) target_dir="$2"; shift 2 ;;
    --lib-dir) lib_dir="$2"; shift 2 ;;
    --) shift; break ;;
    *) echo "cargo_offline.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
if [[ -z "$cargo" || -z "$home" || -z "$target_dir" ]]; then
  echo "usage: cargo_offline.sh --cargo PATH --home DIR --target-dir DIR [--lib-dir DIR] -- ARGS" >&2
  exit 2
fi
registry=/usr/share/cargo/registry
if [[ ! -d "$registry" ]]; then
  echo "cargo_offline.sh: $registry is missing (apt-get install librust-criterion-dev)" >&2
  exit 2
fi

mkdir -p "$home" "$target_dir"
# Absolute: cargo runs benches and tests in the package's directory, and Criterion resolves
# CARGO_TARGET_DIR from there.
home="$(cd "$home" && pwd)"
target_dir="$(cd "$target_dir" && pwd)"
if [[ -n "$lib_dir" && -d "$lib_dir" ]]; then lib_dir="$(cd "$lib_dir" && pwd)"; fi
config="[source.crates-io]
replace-with = \"debian\"

[source.debian]
directory = \"$registry\"

[net]
offline = true"
if [[ ! -f "$home/config.toml" ]] || [[ "$(cat "$home/config.toml")" != "$config" ]]; then
  printf '%s\n' "$config" > "$home/config.toml.tmp.$$"
  mv "$home/config.toml.tmp.$$" "$home/config.toml"
fi

export CARGO_HOME="$home"
export CARGO_TARGET_DIR="$target_dir"
# rustup's proxies find their toolchains through RUSTUP_HOME, which defaults to ~/.rustup
# whatever CARGO_HOME says; keep it pointing at the user's.
if [[ -z "${RUSTUP_HOME:-}" && -d "$HOME/.rustup" ]]; then
  export RUSTUP_HOME="$HOME/.rustup"
fi
if [[ -n "$lib_dir" ]]; then
  export NATIVEPROF_LIB_DIR="$lib_dir"
fi
# Release with the debug info `cargo nativeprof` switches on (tools/cargo_build.h), so its tests
# find this fixture's build fresh instead of rebuilding Criterion, and the hook's profiles name
# inline frames in full.
export CARGO_PROFILE_RELEASE_DEBUG="${CARGO_PROFILE_RELEASE_DEBUG:-1}"
exec "$cargo" "$@"

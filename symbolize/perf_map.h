// JIT symbols from the perf map convention: a runtime writes /tmp/perf-PID.map with one
// "START SIZE name" line (hex START and SIZE) per generated function. Loaded once per pid on the
// first unmapped address of that pid. Not thread-safe; used by the symbolizer after recording.
#ifndef NATIVEPROF_SYMBOLIZE_PERF_MAP_H_
#define NATIVEPROF_SYMBOLIZE_PERF_MAP_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "symbolize/symbol_table.h"

namespace nativeprof::symbolize {

// Bounds on what a perf map line may claim; a line beyond them is malformed (anyone can write
// /tmp/perf-PID.map). No JIT emits a 1 GiB function, and a size that large would name every
// address after its start.
inline constexpr uint64_t kMaxPerfMapSymbolBytes = uint64_t{1} << 30;
inline constexpr size_t kMaxPerfMapNameBytes = 64 << 10;
inline constexpr size_t kMaxPerfMapFileBytes = size_t{256} << 20;

// Parses perf map text; malformed lines are skipped: no START or SIZE in hex, a SIZE of 0 or above
// kMaxPerfMapSymbolBytes, START + SIZE beyond 2^64, an empty name or one above
// kMaxPerfMapNameBytes. When entries overlap (code regenerated at the same address) the later line
// wins. Never fails; an empty table when nothing parses.
SymbolTable ParsePerfMap(absl::string_view text);

// Reads /tmp/perf-PID.map (in `dir`, for tests), or, for a process in another pid or mount
// namespace (a container) that is still running, the map in its own /tmp named after its pid
// there (/proc/PID/root/tmp/perf-NSPID.map). Errors: those of ReadSmallFile (kNotFound when the
// process wrote no map, kResourceExhausted above kMaxPerfMapFileBytes).
absl::StatusOr<SymbolTable> LoadPerfMap(int32_t pid, const std::string& dir = "/tmp");

}  // namespace nativeprof::symbolize

#endif  // NATIVEPROF_SYMBOLIZE_PERF_MAP_H_

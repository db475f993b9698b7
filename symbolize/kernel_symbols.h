// Kernel symbols from /proc/kallsyms (the core kernel and loaded modules' text symbols), loaded
// once on the first kernel frame. Not thread-safe; used by the symbolizer after recording.
#ifndef NATIVEPROF_SYMBOLIZE_KERNEL_SYMBOLS_H_
#define NATIVEPROF_SYMBOLIZE_KERNEL_SYMBOLS_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "symbolize/symbol_table.h"

namespace nativeprof::symbolize {

// Parses kallsyms text ("ffffffff81000000 T _stext\tmodule" lines). Only text symbols (t, T, w, W)
// are kept. Errors: kPermissionDenied when every address reads as zero (kptr_restrict hides
// them; run as root or set kernel.kptr_restrict=0), kInvalidArgument when no line parses.
absl::StatusOr<SymbolTable> ParseKallsyms(absl::string_view text);

// Reads and parses `path` (normally /proc/kallsyms). Errors: as ReadSmallFile and ParseKallsyms.
absl::StatusOr<SymbolTable> LoadKallsyms(const std::string& path = "/proc/kallsyms");

}  // namespace nativeprof::symbolize

#endif  // NATIVEPROF_SYMBOLIZE_KERNEL_SYMBOLS_H_

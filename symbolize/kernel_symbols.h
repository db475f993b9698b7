// Kernel symbols for kernel frames: the core kernel's and loaded modules' text symbols from
// /proc/kallsyms. Reading kallsyms costs ~35 ms of kernel CPU (it formats every symbol on each
// read), as much as the rest of a short profile's post-processing, so the symbols whose addresses
// are fixed until the next boot (core text, and module text while the same modules stay loaded)
// are kept in the cache, keyed by boot id and the module list. Addresses outside those ranges
// (BPF programs, ftrace trampolines, modules loaded since) still read the live kallsyms, once.
// Not thread-safe; used by the symbolizer after recording.
#ifndef NATIVEPROF_SYMBOLIZE_KERNEL_SYMBOLS_H_
#define NATIVEPROF_SYMBOLIZE_KERNEL_SYMBOLS_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "base/cache_dir.h"
#include "base/scoped_fd.h"
#include "sampler/blocked_thread.h"
#include "symbolize/kernel_symbol_index.h"
#include "symbolize/symbol_table.h"

namespace nativeprof::symbolize {

// Parses kallsyms text ("ffffffff81000000 T _stext\tmodule" lines). Only text symbols (t, T, w, W)
// are kept. Errors: kPermissionDenied when every address reads as zero (kptr_restrict hides
// them; run as root or set kernel.kptr_restrict=0), kInvalidArgument when no line parses.
absl::StatusOr<SymbolTable> ParseKallsyms(absl::string_view text);

// Reads and parses `path` (normally /proc/kallsyms). Errors: as ReadSmallFile and ParseKallsyms.
absl::StatusOr<SymbolTable> LoadKallsyms(const std::string& path = "/proc/kallsyms");

// The addresses of kernel frames known by name and offset (sampler::ParseProcStack: /proc shows
// no addresses unless kptr_restrict allows them), placed in kallsyms `table`: the frame's own
// address when it has one, else its function's start plus its offset; 0 for a frame whose
// function is not in the table, or whose offset lies past every symbol of that name. Of several
// symbols with the name (static functions of different files), the first that is long enough.
std::vector<uint64_t> ResolveKernelFrames(const SymbolTable& table,
                                          std::span<const sampler::KernelFrameName> frames);

// Where the kernel describes itself; tests point these at files of their own.
struct KernelSources {
  std::string kallsyms = "/proc/kallsyms";
  std::string modules = "/proc/modules";
  std::string boot_id = "/proc/sys/kernel/random/boot_id";
};

class KernelSymbols {
 public:

  // Nothing is read until the first Lookup. Without a cache every run reads kallsyms.
  explicit KernelSymbols(std::optional<CacheDir> cache, KernelSources sources = KernelSources());

  // The name of the kernel function at `avma`; empty when unknown (status() says why when the
  // symbols could not be read at all).
  absl::string_view Lookup(uint64_t avma);
  // OK, or why kernel frames are unnamed (kPermissionDenied: kptr_restrict).
  const absl::Status& status() const { return status_; }
  // Whether this instance read the live kallsyms (for tests and -v).
  bool read_live() const { return read_kallsyms_; }

 private:
  // The cache entry of this boot and module list, when valid; else reads kallsyms and stores it.
  void LoadStable();
  // Reads kallsyms, keeps the symbols of the core kernel and of the `modules` listed, stores them
  // as cache entry `entry` and uses them for this run.
  void BuildEntry(const std::string& entry, absl::string_view modules);
  void LoadLive();

  std::optional<CacheDir> cache_;
  KernelSources sources_;
  bool stable_loaded_ = false;
  ScopedMmap stable_file_;                    // the cache entry, mapped
  std::string stable_bytes_;                  // or the entry just built, when it was a miss
  std::optional<KernelSymbolIndex> stable_;   // over one of them
  std::unique_ptr<char[]> live_text_;         // kallsyms read on a miss, parsed only if needed
  size_t live_text_size_ = 0;
  std::optional<absl::StatusOr<SymbolTable>> live_;  // the whole kallsyms of this moment
  absl::Status status_;
  bool read_kallsyms_ = false;
};

}  // namespace nativeprof::symbolize

#endif  // NATIVEPROF_SYMBOLIZE_KERNEL_SYMBOLS_H_

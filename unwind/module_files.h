// Opens the ELF file behind each mapped module once and keeps its unwind tables (ElfCfi) for the
// life of the unwinder: by its path, through /proc/<first_pid>/root (another mount namespace) or
// /proc/<pid>/map_files (deleted or replaced files), and the vdso from the live process's memory.
// Anonymous memory (JIT code, heap, stack) has no file. Failures are remembered so a module is
// tried once. Drain thread only.
#ifndef NATIVEPROF_UNWIND_MODULE_FILES_H_
#define NATIVEPROF_UNWIND_MODULE_FILES_H_

#include <memory>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "sampler/address_space.h"
#include "unwind/elf_cfi.h"
#include "unwind/unwinder.h"

namespace nativeprof::unwind {

class ModuleFiles {
 public:
  // The tables of the module mapped at `mapping`, or nullptr when it has no file or the file
  // cannot be opened.
  ElfCfi* Get(const sampler::Mapping& mapping, const ProcessView& process);

  // True for paths the kernel reports for memory with no file behind it ("//anon", "[heap]",
  // "[stack]", "[anon:...]", "" ...), and "[vsyscall]", which has no ELF image.
  static bool IsAnonymous(const std::string& path);

  // Sum of the per-module CFI cache statistics.
  CfiCacheStats TotalStats() const;
  // Drops every opened module (tests and benchmarks measure cold lookups with it).
  void Clear() { modules_.clear(); }

 private:
  std::unique_ptr<ElfCfi> OpenModule(const sampler::Mapping& mapping, const ProcessView& process);

  absl::flat_hash_map<sampler::ModuleId, std::unique_ptr<ElfCfi>> modules_;
};

// Reads the vdso image of process `pid` (whose [vdso] mapping is [start, end)) from
// /proc/PID/mem; falls back to this process's own vdso, which is the same image when both run on
// the same kernel. Errors: kNotFound when neither can be read.
absl::StatusOr<std::string> ReadVdsoImage(int32_t pid, uint64_t start, uint64_t end);

}  // namespace nativeprof::unwind

#endif  // NATIVEPROF_UNWIND_MODULE_FILES_H_

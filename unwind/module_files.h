// Opens the ELF file behind each mapped module once and keeps its unwind tables (ElfCfi) for the
// life of the unwinder: by its path, through /proc/<first_pid>/root (another mount namespace) or
// /proc/<pid>/map_files (deleted or replaced files), and the vdso from the live process's memory.
// Anonymous memory (JIT code, heap, stack) has no file. Failures are remembered so a module is
// tried once. Drain thread only.
#ifndef NATIVEPROF_UNWIND_MODULE_FILES_H_
#define NATIVEPROF_UNWIND_MODULE_FILES_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "sampler/address_space.h"
#include "unwind/elf_cfi.h"
#include "unwind/unwinder.h"

namespace nativeprof::unwind {

class ModuleFiles {
 public:
  // The tables of the module mapped at `mapping`, or nullptr when it has no file or the file
  // cannot be opened.
  ElfCfi* Get(const sampler::Mapping& mapping, const ProcessView& process) {
    // Inline: called for every frame, and almost always answered by by_id_.
    if (mapping.module < by_id_.size() && by_id_[mapping.module].tried) {
      return by_id_[mapping.module].elf;
    }
    return GetSlow(mapping, process);
  }

  // True for paths the kernel reports for memory with no file behind it ("//anon", "[heap]",
  // "[stack]", "[anon:...]", "" ...), and "[vsyscall]", which has no ELF image.
  static bool IsAnonymous(const std::string& path);

  // Sum of the per-module CFI cache statistics.
  CfiCacheStats TotalStats() const;
  // Drops every opened module (tests and benchmarks measure cold lookups with it).
  void Clear() {
    modules_.clear();
    by_id_.clear();
  }

 private:
  struct Slot {
    ElfCfi* elf = nullptr;  // nullptr: the module has no usable file
    bool tried = false;
  };

  ElfCfi* GetSlow(const sampler::Mapping& mapping, const ProcessView& process);
  std::unique_ptr<ElfCfi> OpenModule(const sampler::Mapping& mapping, const ProcessView& process);

  absl::flat_hash_map<sampler::ModuleId, std::unique_ptr<ElfCfi>> modules_;
  // ModuleIds are small and dense: a per-frame lookup is an index, not a hash probe.
  std::vector<Slot> by_id_;
};

// Reads the vdso image of process `pid` (whose [vdso] mapping is [start, end)) from
// /proc/PID/mem; falls back to this process's own vdso, which is the same image when both run on
// the same kernel. Errors: kNotFound when neither can be read.
absl::StatusOr<std::string> ReadVdsoImage(int32_t pid, uint64_t start, uint64_t end);

}  // namespace nativeprof::unwind

#endif  // NATIVEPROF_UNWIND_MODULE_FILES_H_

// Keeps each mapped module's unwind tables (ElfCfi) for the life of the unwinder, built from the
// image module/ opens: the file through module/module_opener.h (the same candidates and identity
// check as the symbolizer, so a file replaced since it was mapped is refused by both), the vdso
// from the live process's memory (module/vdso.h). Memory without a file (module/module_path.h)
// gets none. Failures are remembered so a module is tried once. Drain thread only.
#ifndef NATIVEPROF_UNWIND_MODULE_FILES_H_
#define NATIVEPROF_UNWIND_MODULE_FILES_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "sampler/address_space.h"
#include "unwind/elf_cfi.h"
#include "unwind/unwinder.h"

namespace nativeprof::unwind {

class ModuleFiles {
 public:
  // `debug_dirs`: where separate debug files are searched for .debug_frame.
  explicit ModuleFiles(std::vector<std::string> debug_dirs = module::DefaultDebugDirs())
      : debug_dirs_(std::move(debug_dirs)) {}

  // The tables of the module mapped at `mapping`, or nullptr when it has no file or the file
  // cannot be opened.
  ElfCfi* Get(const sampler::Mapping& mapping, const ProcessView& process) {
    // Inline: called for every frame, and almost always answered by by_id_.
    if (mapping.module < by_id_.size() && by_id_[mapping.module].tried) {
      return by_id_[mapping.module].elf;
    }
    return GetSlow(mapping, process);
  }

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

  std::vector<std::string> debug_dirs_;
  absl::flat_hash_map<sampler::ModuleId, std::unique_ptr<ElfCfi>> modules_;
  // ModuleIds are small and dense: a per-frame lookup is an index, not a hash probe.
  std::vector<Slot> by_id_;
};

}  // namespace nativeprof::unwind

#endif  // NATIVEPROF_UNWIND_MODULE_FILES_H_

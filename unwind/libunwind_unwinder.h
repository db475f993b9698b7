// The second DWARF backend (`--unwinder=libunwind`, DwarfBackend::kLibunwind): libunwind's remote
// API over the same inputs as the native unwinder (sampled registers, copied stack, the mapped
// ELF files through ModuleFiles), with .eh_frame_hdr tables handed to libunwind's table search.
// Slower than the native unwinder; kept as an independent cross-check. Kernel frames and the
// hybrid splice are shared with the native backend. Drain thread only; not thread-safe.
#ifndef NATIVEPROF_UNWIND_LIBUNWIND_UNWINDER_H_
#define NATIVEPROF_UNWIND_LIBUNWIND_UNWINDER_H_

#include <cstdint>
#include <memory>

#include "unwind/chain_splice.h"
#include "unwind/module_files.h"
#include "unwind/unwinder.h"
#include "unwind/x86_64_regs.h"

namespace nativeprof::unwind {

struct LibunwindUnwinderOptions {
  uint64_t regs_mask = DwarfSampleRegsMask();
  bool splice_kernel_chain = true;
  std::vector<std::string> debug_dirs = module::DefaultDebugDirs();  // as DwarfUnwinderOptions
};

class LibunwindUnwinder : public Unwinder {
 public:
  explicit LibunwindUnwinder(LibunwindUnwinderOptions options = {});
  ~LibunwindUnwinder() override;

  void Unwind(const sampler::SampleView& sample, const ProcessView& process,
              UnwoundStack* out) override;


  struct State;  // per-Unwind context the libunwind accessors read (defined in the .cc)

 private:
  LibunwindUnwinderOptions options_;
  ModuleFiles files_;
  std::unique_ptr<State> state_;
  void* address_space_ = nullptr;  // unw_addr_space_t
};

}  // namespace nativeprof::unwind

#endif  // NATIVEPROF_UNWIND_LIBUNWIND_UNWINDER_H_

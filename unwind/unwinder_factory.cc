#include <memory>

#include "unwind/callchain_unwinder.h"
#include "unwind/dwarf_unwinder.h"
#include "unwind/libunwind_unwinder.h"
#include "unwind/unwinder.h"
#include "unwind/x86_64_regs.h"

namespace nativeprof::unwind {

const char* StackEndName(StackEnd end) {
  switch (end) {
    case StackEnd::kComplete:
      return "complete";
    case StackEnd::kTruncatedStack:
      return "truncated-stack-copy";
    case StackEnd::kNoUnwindInfo:
      return "no-unwind-info";
    case StackEnd::kNoModule:
      return "no-module";
    case StackEnd::kBadFrame:
      return "bad-frame";
    case StackEnd::kMaxDepth:
      return "max-depth";
  }
  return "unknown";
}

absl::StatusOr<std::unique_ptr<Unwinder>> MakeUnwinder(CallGraphMode mode, DwarfBackend backend,
                                                       const std::vector<std::string>& debug_dirs) {
  switch (mode) {
    case CallGraphMode::kFramePointer:
      return std::unique_ptr<Unwinder>(std::make_unique<CallchainUnwinder>());
    case CallGraphMode::kDwarf: {
      if (backend == DwarfBackend::kLibunwind) {
        LibunwindUnwinderOptions options;
        options.debug_dirs = debug_dirs;
        return std::unique_ptr<Unwinder>(std::make_unique<LibunwindUnwinder>(options));
      }
      DwarfUnwinderOptions options;
      options.debug_dirs = debug_dirs;
      return std::unique_ptr<Unwinder>(std::make_unique<DwarfUnwinder>(options));
    }
  }
  return absl::UnimplementedError("unknown call-graph mode; use fp or dwarf");
}

void RequestSampleFields(CallGraphMode mode, uint32_t dwarf_stack_bytes,
                         sampler::SamplingAttrOptions* sampling) {
  sampling->callchain = true;
  if (mode == CallGraphMode::kDwarf) {
    sampling->regs_user_mask = DwarfSampleRegsMask();
    sampling->stack_user_bytes = dwarf_stack_bytes;
  } else {
    sampling->regs_user_mask = 0;
    sampling->stack_user_bytes = 0;
  }
}

}  // namespace nativeprof::unwind

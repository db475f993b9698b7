#include <memory>

#include "unwind/callchain_unwinder.h"
#include "unwind/unwinder.h"

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

absl::StatusOr<std::unique_ptr<Unwinder>> MakeUnwinder(CallGraphMode mode, DwarfBackend backend) {
  switch (mode) {
    case CallGraphMode::kFramePointer:
      return std::unique_ptr<Unwinder>(std::make_unique<CallchainUnwinder>());
    case CallGraphMode::kDwarf:
      break;
  }
  return absl::UnimplementedError("--call-graph dwarf is not available in this build; use fp");
}

}  // namespace nativeprof::unwind

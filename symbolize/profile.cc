#include "symbolize/profile.h"

namespace nativeprof::symbolize {

const char* FrameKindSuffix(FrameKind kind) {
  switch (kind) {
    case FrameKind::kKernel:
      return "_[k]";
    case FrameKind::kInlined:
      return "_[i]";
    case FrameKind::kJit:
      return "_[j]";
    case FrameKind::kUser:
      break;
  }
  return "";
}

}  // namespace nativeprof::symbolize

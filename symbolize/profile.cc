#include "symbolize/profile.h"

namespace nativeprof::symbolize {

const char* ProfileFrameKindSuffix(ProfileFrameKind kind) {
  switch (kind) {
    case ProfileFrameKind::kKernel:
      return "_[k]";
    case ProfileFrameKind::kInlined:
      return "_[i]";
    case ProfileFrameKind::kJit:
      return "_[j]";
    case ProfileFrameKind::kUser:
      break;
  }
  return "";
}

}  // namespace nativeprof::symbolize

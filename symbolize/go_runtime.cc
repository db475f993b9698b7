#include "symbolize/go_runtime.h"

#include "absl/strings/match.h"
#include "absl/strings/strip.h"

namespace nativeprof::symbolize {

absl::string_view WithoutGoAbiSuffix(absl::string_view function) {
  if (absl::StartsWith(function, "runtime.") && !absl::ConsumeSuffix(&function, ".abi0")) {
    absl::ConsumeSuffix(&function, ".abiinternal");
  }
  return function;
}

bool IsGoStackSwitch(absl::string_view function) {
  const absl::string_view name = WithoutGoAbiSuffix(function);
  return name == "runtime.mcall" || name == "runtime.morestack";
}

}  // namespace nativeprof::symbolize

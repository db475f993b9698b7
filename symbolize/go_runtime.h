// What Go's runtime functions mean to a stack, by name (Go binaries keep their symbols).
#ifndef NATIVEPROF_SYMBOLIZE_GO_RUNTIME_H_
#define NATIVEPROF_SYMBOLIZE_GO_RUNTIME_H_

#include "absl/strings/string_view.h"

namespace nativeprof::symbolize {

// A runtime.* function's name without the ABI suffix Go 1.17 and later give its assembly and
// wrapper functions (runtime.goexit.abi0, runtime.mcall.abiinternal); other names unchanged.
absl::string_view WithoutGoAbiSuffix(absl::string_view function);

// runtime.mcall and runtime.morestack move the goroutine onto its thread's scheduler stack (g0)
// and call there, never to return on it: what lies above their frame on g0 is left over from
// its earlier use, not their caller (Go's own traceback stops at them, as at every function
// that writes the stack pointer). A stack through one ends there.
bool IsGoStackSwitch(absl::string_view function);

}  // namespace nativeprof::symbolize

#endif  // NATIVEPROF_SYMBOLIZE_GO_RUNTIME_H_

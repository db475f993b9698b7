// Turns a raw symbol name from an ELF table, kallsyms or a perf map into the name profiles show:
// symbol versions ("@GLIBC_2.2.5") dropped, C++/Rust names demangled through the project
// demangler, arguments dropped unless full names are asked for. Pure function; any thread.
#ifndef NATIVEPROF_SYMBOLIZE_DISPLAY_NAME_H_
#define NATIVEPROF_SYMBOLIZE_DISPLAY_NAME_H_

#include <string>

#include "absl/strings/string_view.h"

namespace nativeprof::symbolize {

// Returns the display form of `raw`; never fails (an undecodable name is returned as is).
std::string DisplayName(absl::string_view raw, bool full_names);

}  // namespace nativeprof::symbolize

#endif  // NATIVEPROF_SYMBOLIZE_DISPLAY_NAME_H_

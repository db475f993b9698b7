#include "symbolize/display_name.h"

#include <cxxabi.h>

#include <cstdlib>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace nativeprof::symbolize {
namespace {

// Interim demangler until symbolize/demangle.h lands: the C++ runtime's, with the argument list
// and Rust hash removed here.
std::string StripArguments(std::string name) {
  std::vector<std::string> clones;
  while (absl::EndsWith(name, "]")) {
    size_t open = name.rfind(" [clone ");
    if (open == std::string::npos) break;
    clones.insert(clones.begin(), name.substr(open));
    name.resize(open);
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (const char* q : {" const", " volatile", " &&", " &"}) {
      if (absl::EndsWith(name, q)) {
        name.resize(name.size() - std::char_traits<char>::length(q));
        changed = true;
      }
    }
  }
  if (absl::EndsWith(name, ")")) {
    int depth = 0;
    for (size_t i = name.size(); i-- > 0;) {
      if (name[i] == ')') ++depth;
      if (name[i] == '(' && --depth == 0) {
        if (i > 0) name.resize(i);
        break;
      }
    }
  }
  for (const std::string& c : clones) name += c;
  return name;
}

std::string StripRustHash(std::string name) {
  // Legacy Rust symbols end in "::h" + 16 hex digits.
  if (name.size() > 19 && name.compare(name.size() - 19, 3, "::h") == 0) {
    bool hex = true;
    for (size_t i = name.size() - 16; i < name.size(); ++i) hex &= absl::ascii_isxdigit(name[i]);
    if (hex) name.resize(name.size() - 19);
  }
  return name;
}

std::string InterimDemangle(absl::string_view mangled, bool full_names) {
  std::string raw(mangled);
  if (!absl::StartsWith(raw, "_Z")) {
    // A C function clone from GCC ("foo.cold", "foo.part.0"): shown as c++filt shows C++ ones.
    size_t dot = raw.find('.');
    if (dot != std::string::npos && dot > 0) {
      return absl::StrCat(raw.substr(0, dot), " [clone ", raw.substr(dot), "]");
    }
    return raw;
  }
  int status = 0;
  char* out = abi::__cxa_demangle(raw.c_str(), nullptr, nullptr, &status);
  if (out == nullptr) return raw;
  std::string demangled(out);
  std::free(out);
  if (full_names) return demangled;
  return StripRustHash(StripArguments(std::move(demangled)));
}

}  // namespace

std::string DisplayName(absl::string_view raw, bool full_names) {
  // "name@VER" / "name@@VER" from .symtab of versioned libraries.
  size_t at = raw.find('@');
  if (at != absl::string_view::npos && at > 0) raw = raw.substr(0, at);
  return InterimDemangle(raw, full_names);
}

}  // namespace nativeprof::symbolize

#include "symbolize/display_name.h"

#include "absl/strings/match.h"
#include "symbolize/demangle.h"

namespace nativeprof::symbolize {

std::string DisplayName(absl::string_view raw, bool full_names) {
  // PLT stubs (synthesized by SymbolTable::AddPltSymbols) keep their suffix, as perf shows them,
  // so time in a stub is not mistaken for time in the function it jumps to.
  const bool plt = absl::EndsWith(raw, "@plt");
  if (plt) raw.remove_suffix(4);
  // "name@VER" / "name@@VER" from .symtab of versioned libraries.
  size_t at = raw.find('@');
  if (at != absl::string_view::npos && at > 0) raw = raw.substr(0, at);
  DemangleOptions options;
  options.full_names = full_names;
  std::string name = DemangleSymbol(raw, options);
  if (plt) name += "@plt";
  return name;
}

}  // namespace nativeprof::symbolize

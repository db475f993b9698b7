#include "symbolize/display_name.h"

#include "symbolize/demangle.h"

namespace nativeprof::symbolize {

std::string DisplayName(absl::string_view raw, bool full_names) {
  // "name@VER" / "name@@VER" from .symtab of versioned libraries.
  size_t at = raw.find('@');
  if (at != absl::string_view::npos && at > 0) raw = raw.substr(0, at);
  DemangleOptions options;
  options.full_names = full_names;
  return DemangleSymbol(raw, options);
}

}  // namespace nativeprof::symbolize

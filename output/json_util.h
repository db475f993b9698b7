// JSON string escaping for the hand-built JSON writers (speedscope) and XML/HTML escaping for the
// SVG writers: building large documents by appending is several times faster than a DOM.
// Pure functions; any thread.
#ifndef NATIVEPROF_OUTPUT_JSON_UTIL_H_
#define NATIVEPROF_OUTPUT_JSON_UTIL_H_

#include <string>

#include "absl/strings/string_view.h"

namespace nativeprof::output {

// Appends `s` as a quoted JSON string (escapes quotes, backslashes and control characters;
// invalid UTF-8 bytes are passed through, as most JSON readers accept them).
void AppendJsonString(std::string* out, absl::string_view s);

// Appends `s` escaped for XML text and attribute values (& < > " ').
void AppendXmlEscaped(std::string* out, absl::string_view s);

}  // namespace nativeprof::output

#endif  // NATIVEPROF_OUTPUT_JSON_UTIL_H_

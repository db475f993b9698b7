// JSON string escaping for the hand-built JSON writers (speedscope) and XML/HTML escaping for the
// SVG writers: building large documents by appending is several times faster than a DOM; and the
// text of the small nlohmann::json documents (run metadata, stat --json). Pure functions; any
// thread.
#ifndef NATIVEPROF_OUTPUT_JSON_UTIL_H_
#define NATIVEPROF_OUTPUT_JSON_UTIL_H_

#include <string>

#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace nativeprof::output {

// Appends `s` as a quoted JSON string (escapes quotes, backslashes and control characters;
// invalid UTF-8 bytes are passed through, as most JSON readers accept them).
void AppendJsonString(std::string* out, absl::string_view s);

// `document` as indented JSON text for a file. Strings that are not valid UTF-8 (a command or a
// mapped file's name can be any bytes) get U+FFFD for each bad byte, where plain dump() would
// throw (type_error 316) and abort the run before its metadata is written.
std::string RenderJsonDocument(const nlohmann::json& document);
// The same for a document whose members keep the order they were added in (report --format json).
std::string RenderJsonDocument(const nlohmann::ordered_json& document);

// Appends `s` escaped for XML text and attribute values (& < > " ').
void AppendXmlEscaped(std::string* out, absl::string_view s);

}  // namespace nativeprof::output

#endif  // NATIVEPROF_OUTPUT_JSON_UTIL_H_

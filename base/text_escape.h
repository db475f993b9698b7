// Escaping of bytes read from input files (folded lines, /proc and fixture lines, names from
// ELF files and perf records) before an error message or warning quotes them: the terminal must
// never receive raw control bytes from a file, and one bad line must stay one short line. Pure;
// any thread.
#ifndef NATIVEPROF_BASE_TEXT_ESCAPE_H_
#define NATIVEPROF_BASE_TEXT_ESCAPE_H_

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"

namespace nativeprof {

// How many input bytes a message quotes by default, and for a path (PATH_MAX: paths are quoted
// whole).
inline constexpr size_t kMaxQuotedBytes = 80;
inline constexpr size_t kMaxQuotedPathBytes = 4096;

// `bytes` made safe to print: printable ASCII and well-formed UTF-8 stay as they are; a backslash
// becomes "\\", newline, tab and carriage return "\n", "\t", "\r"; every other byte (C0 and C1
// controls, DEL, bytes of malformed UTF-8, and the line separators and bidirectional controls
// U+2028..U+202E, U+2066..U+2069, which reorder or break a terminal line) becomes "\xNN". At most
// the first `max_bytes` input bytes are shown (never cutting a character); the rest becomes
// "... (N more bytes)".
std::string EscapeForMessage(absl::string_view bytes, size_t max_bytes = kMaxQuotedBytes);

}  // namespace nativeprof

#endif  // NATIVEPROF_BASE_TEXT_ESCAPE_H_

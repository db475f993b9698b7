// libiberty-backed C++ demangling and the reduction of demangled C++ names to frame names.
#include "symbolize/cxx_names.h"

#include <csetjmp>
#include <cstddef>
#include <optional>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/string_view.h"

// libiberty's public demangler interface (Debian libiberty-dev). Its cplus_demangle is the exact
// code path of c++filt; see docs/demangling.md for why it beats abi::__cxa_demangle here.
// libiberty.h would redeclare basename() in a way that clashes with glibc's C++ declaration;
// telling it the declaration exists skips that.
#ifndef HAVE_DECL_BASENAME
#define HAVE_DECL_BASENAME 1
#endif
#include <libiberty/demangle.h>

namespace nativeprof::symbolize::cxx_internal {
namespace {

bool IsLower(char c) { return c >= 'a' && c <= 'z'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsIdentStart(char c) { return IsLower(c) || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsIdentChar(char c) { return IsIdentStart(c) || IsDigit(c); }

// Index of the `(` matching the `)` at `close`, or npos.
size_t MatchingOpen(absl::string_view s, size_t close) {
  int depth = 0;
  for (size_t i = close + 1; i-- > 0;) {
    if (s[i] == ')') {
      ++depth;
    } else if (s[i] == '(') {
      if (--depth == 0) return i;
    }
  }
  return absl::string_view::npos;
}

// Removes one trailing qualifier of a function type (` const`, ` &&`, ` noexcept(...)`, ...).
bool StripOneQualifier(absl::string_view* s) {
  static constexpr absl::string_view kWords[] = {" const", " volatile", " restrict",        " &&",
                                                 " &",     " noexcept", " transaction_safe"};
  for (absl::string_view w : kWords) {
    if (absl::EndsWith(*s, w)) {
      s->remove_suffix(w.size());
      return true;
    }
  }
  if (absl::EndsWith(*s, ")")) {
    size_t open = MatchingOpen(*s, s->size() - 1);
    if (open == absl::string_view::npos) return false;
    absl::string_view before = s->substr(0, open);
    for (absl::string_view w : {absl::string_view(" noexcept"), absl::string_view(" throw")}) {
      if (absl::EndsWith(before, w)) {
        *s = before.substr(0, before.size() - w.size());
        return true;
      }
    }
  }
  return false;
}

// A few hundred bytes of substitutions can expand to gigabytes of text (each `S<n>_` reference
// doubling the output), and c++filt would print all of it. Names are capped at this size instead.
constexpr size_t kMaxCxxOutputBytes = 1000000;

struct OutputSink {
  std::string out;
  jmp_buf too_long;
};

// libiberty's print callback. Past the cap it jumps back to DemangleCxx: libiberty's callback
// interface keeps all its state in stack arrays (no heap, no destructors), so abandoning those C
// frames leaks nothing, and this frame holds no C++ objects when it jumps.
void AppendOutput(const char* text, size_t len, void* opaque) {
  OutputSink* sink = static_cast<OutputSink*>(opaque);
  if (len > kMaxCxxOutputBytes - sink->out.size()) longjmp(sink->too_long, 1);
  sink->out.append(text, len);
}

// libiberty's status (1 demangled, 0 invalid), or -1 when AppendOutput jumped back.
int RunDemangler(const char* name, int flags, OutputSink* sink) {
  if (setjmp(sink->too_long) != 0) return -1;
  return cplus_demangle_v3_callback(name, flags, &AppendOutput, sink);
}

}  // namespace

std::optional<std::string> DemangleCxx(absl::string_view mangled, bool drop_return_type) {
  // libiberty needs a NUL-terminated string; symbol names are short, so copy.
  std::string name(mangled.data(), mangled.size());
  if (name.find('\0') != std::string::npos) return std::nullopt;
  // DMGL_GNU_V3 selects the C++ demangler only: Rust is handled by our own code, which follows
  // rustc-demangle rather than libiberty's Rust support.
  const int flags =
      DMGL_PARAMS | DMGL_ANSI | DMGL_VERBOSE | DMGL_GNU_V3 | (drop_return_type ? DMGL_RET_DROP : 0);
  OutputSink sink;
  // 0: not a valid C++ name; -1: output passed kMaxCxxOutputBytes.
  if (RunDemangler(name.c_str(), flags, &sink) <= 0) return std::nullopt;
  return std::move(sink.out);
}

std::string StripCxxArguments(absl::string_view demangled) {
  absl::string_view s = demangled;
  // Clone suffixes come last: `name(args) [clone .isra.0] [clone .cold]`.
  size_t clones_at = s.size();
  while (absl::EndsWith(s.substr(0, clones_at), "]")) {
    size_t open = s.substr(0, clones_at).rfind(" [clone ");
    if (open == absl::string_view::npos) break;
    absl::string_view inside = s.substr(open + 8, clones_at - open - 9);
    if (inside.find_first_of("[]") != absl::string_view::npos) break;
    clones_at = open;
  }
  absl::string_view clones = s.substr(clones_at);
  absl::string_view name = s.substr(0, clones_at);
  while (StripOneQualifier(&name)) {
  }
  if (!absl::EndsWith(name, ")")) return std::string(demangled);
  size_t open = MatchingOpen(name, name.size() - 1);
  if (open == absl::string_view::npos || open == 0) return std::string(demangled);
  absl::string_view function = name.substr(0, open);
  // The list must follow a name: an identifier, template arguments, an ABI tag, a lambda or an
  // operator. `void (*)(int)` (a type, as in `typeinfo for ...`) is left alone.
  char last = function.back();
  bool after_name = true;
  if (last == ' ' || last == '(') {
    after_name = false;
  } else if (last == ')') {
    after_name = absl::EndsWith(function, "operator()");
  } else if (last == '*' || last == '&') {
    // `operator*`, `operator&&`, `operator->*`... are names; `int*` and `Foo&` are types.
    size_t op = function.rfind("operator");
    after_name = op != absl::string_view::npos &&
                 function.substr(op + 8).find_first_not_of("*&-=>") == absl::string_view::npos;
  }
  if (!after_name) return std::string(demangled);
  std::string out(function.data(), function.size());
  out.append(clones.data(), clones.size());
  return out;
}

namespace {

// The suffixes GCC (clone_function_name) and LLVM give the copies of a function they make.
bool IsCloneKind(absl::string_view kind) {
  for (absl::string_view known : {"constprop", "isra", "part", "cold", "lto_priv", "clone",
                                  "localalias", "specialized", "simdclone", "_omp_fn",
                                  "_omp_cpyfn", "_loopfn", "resolver", "llvm"}) {
    if (kind == known) return true;
  }
  return false;
}

}  // namespace

std::optional<std::string> FormatCloneSuffixes(absl::string_view name) {
  size_t dot = name.find('.');
  if (dot == absl::string_view::npos || dot == 0 || !IsIdentStart(name[0])) return std::nullopt;
  // GCC's static-initialiser functions carry a file name: `_GLOBAL__sub_I_main.cc`.
  if (absl::StartsWith(name, "_GLOBAL_")) return std::nullopt;
  for (size_t i = 1; i < dot; ++i) {
    if (!IsIdentChar(name[i])) return std::nullopt;
  }
  std::string out(name.substr(0, dot));
  size_t pos = dot;
  auto clone_char = [](char c) { return IsLower(c) || IsDigit(c) || c == '_'; };
  // The grammar of libiberty's d_clone_suffix: `.` [a-z0-9_]+ then any `.` [0-9]+ groups. A C
  // name has no mangling to say that what follows its dot is a clone's suffix, and Go's names
  // are dotted lowercase paths (`runtime.goexit.abi0`, `main.main.func1`): only the kinds of
  // clone GCC and LLVM make are taken for one.
  while (pos + 1 < name.size() && name[pos] == '.' && clone_char(name[pos + 1])) {
    size_t start = pos;
    pos += 2;
    while (pos < name.size() && clone_char(name[pos])) ++pos;
    if (!IsCloneKind(name.substr(start + 1, pos - start - 1))) return std::nullopt;
    while (pos + 1 < name.size() && name[pos] == '.' && IsDigit(name[pos + 1])) {
      pos += 2;
      while (pos < name.size() && IsDigit(name[pos])) ++pos;
    }
    out.append(" [clone ");
    out.append(name.data() + start, pos - start);
    out.push_back(']');
  }
  if (pos != name.size()) return std::nullopt;
  return out;
}

bool SplitAtFirstDot(absl::string_view name, absl::string_view* base, std::string* clone) {
  size_t dot = name.find('.');
  if (dot == absl::string_view::npos || dot == 0 || dot + 1 == name.size()) return false;
  *base = name.substr(0, dot);
  *clone = " [clone ";
  clone->append(name.data() + dot, name.size() - dot);
  clone->push_back(']');
  return true;
}

}  // namespace nativeprof::symbolize::cxx_internal

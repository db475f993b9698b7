// Internals of the Rust v0 demangler shared by rust_demangle_v0.cc (paths, types, entry points)
// and rust_demangle_v0_const.cc (function signatures, dyn traits, const values, patterns): the
// byte-level Parser and the recursive Printer. Only those two files include this header.
// Single-threaded per Printer object; no shared state.
#ifndef NATIVEPROF_SYMBOLIZE_RUST_DEMANGLE_V0_H_
#define NATIVEPROF_SYMBOLIZE_RUST_DEMANGLE_V0_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "symbolize/rust_demangle.h"
#include "symbolize/rust_demangle_text.h"

namespace nativeprof::symbolize::rust_internal::v0 {

enum class ParseError { kNone, kInvalid, kRecursedTooDeep };

// Name of the type a basic-type tag stands for (`h` is u8...); nullptr when `tag` is not one.
const char* BasicType(uint8_t tag);

struct Parser {
  absl::string_view sym;
  size_t next = 0;
  uint32_t depth = 0;
  ParseError error = ParseError::kNone;

  bool Fail(ParseError e = ParseError::kInvalid) {
    error = e;
    return false;
  }
  int Peek() const { return next < sym.size() ? static_cast<uint8_t>(sym[next]) : -1; }
  bool Eat(uint8_t b) {
    if (Peek() != b) return false;
    ++next;
    return true;
  }
  bool Next(uint8_t* b) {
    if (next >= sym.size()) return Fail();
    *b = static_cast<uint8_t>(sym[next++]);
    return true;
  }
  bool PushDepth() {
    if (++depth > kMaxDepth) return Fail(ParseError::kRecursedTooDeep);
    return true;
  }
  void PopDepth() { --depth; }

  // `[0-9a-f]* _`; the nibbles without the terminator.
  bool HexNibbles(absl::string_view* nibbles) {
    size_t start = next;
    while (true) {
      uint8_t c;
      if (!Next(&c)) return false;
      if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')) continue;
      if (c == '_') break;
      return Fail();
    }
    *nibbles = sym.substr(start, next - 1 - start);
    return true;
  }
  bool Digit10(uint8_t* d) {
    int c = Peek();
    if (c < '0' || c > '9') return Fail();
    *d = static_cast<uint8_t>(c - '0');
    ++next;
    return true;
  }
  bool Digit62(uint64_t* d) {
    int c = Peek();
    if (c >= '0' && c <= '9') {
      *d = static_cast<uint64_t>(c - '0');
    } else if (c >= 'a' && c <= 'z') {
      *d = static_cast<uint64_t>(10 + c - 'a');
    } else if (c >= 'A' && c <= 'Z') {
      *d = static_cast<uint64_t>(36 + c - 'A');
    } else {
      return Fail();
    }
    ++next;
    return true;
  }
  // `_` is 0, `<base-62 digits>_` is the value plus one.
  bool Integer62(uint64_t* value) {
    if (Eat('_')) {
      *value = 0;
      return true;
    }
    uint64_t x = 0;
    while (!Eat('_')) {
      uint64_t d;
      if (!Digit62(&d)) return false;
      if (__builtin_mul_overflow(x, uint64_t{62}, &x) || __builtin_add_overflow(x, d, &x)) {
        return Fail();
      }
    }
    if (__builtin_add_overflow(x, uint64_t{1}, value)) return Fail();
    return true;
  }
  bool OptInteger62(uint8_t tag, uint64_t* value) {
    if (!Eat(tag)) {
      *value = 0;
      return true;
    }
    uint64_t x;
    if (!Integer62(&x)) return false;
    if (__builtin_add_overflow(x, uint64_t{1}, value)) return Fail();
    return true;
  }
  bool Disambiguator(uint64_t* value) { return OptInteger62('s', value); }
  // Uppercase namespaces are special (closures, shims); lowercase ones are `ns = 0`.
  bool Namespace(uint8_t* ns) {
    uint8_t c;
    if (!Next(&c)) return false;
    if (c >= 'A' && c <= 'Z') {
      *ns = c;
    } else if (c >= 'a' && c <= 'z') {
      *ns = 0;
    } else {
      return Fail();
    }
    return true;
  }
  bool Backref(Parser* target) {
    size_t start = next - 1;  // position of the `B` tag
    uint64_t i;
    if (!Integer62(&i)) return false;
    if (i >= start) return Fail();
    *target = Parser{sym, static_cast<size_t>(i), depth, ParseError::kNone};
    if (!target->PushDepth()) return Fail(ParseError::kRecursedTooDeep);
    return true;
  }
  bool ParseIdent(Ident* ident) {
    bool is_punycode = Eat('u');
    uint8_t d;
    if (!Digit10(&d)) return false;
    uint64_t len = d;
    if (len != 0) {
      while (Peek() >= '0' && Peek() <= '9') {
        Digit10(&d);
        if (__builtin_mul_overflow(len, uint64_t{10}, &len) ||
            __builtin_add_overflow(len, uint64_t{d}, &len)) {
          return Fail();
        }
      }
    }
    Eat('_');
    if (len > sym.size() - next) return Fail();
    absl::string_view text = sym.substr(next, len);
    next += len;
    if (!is_punycode) {
      *ident = Ident{text, absl::string_view()};
      return true;
    }
    size_t sep = text.rfind('_');
    if (sep == absl::string_view::npos) {
      *ident = Ident{absl::string_view(), text};
    } else {
      *ident = Ident{text.substr(0, sep), text.substr(sep + 1)};
    }
    if (ident->punycode.empty()) return Fail();
    return true;
  }
};

// Each Print* returns false only when output stopped at the size limit (rustc-demangle's
// fmt::Error); a syntax error is recorded in error_ and printed inline, and printing goes on.
class Printer {
 public:
  Printer(const Parser& parser, std::string* out, bool alternate)
      : parser_(parser), out_(out), alternate_(alternate) {}

  bool PrintPath(bool in_value);
  bool size_exhausted() const { return size_exhausted_; }
  ParseError error() const { return error_; }
  const Parser& parser() const { return parser_; }

 private:
  bool Ok() const { return error_ == ParseError::kNone; }
  bool Print(absl::string_view s) {
    if (out_ == nullptr) return true;
    if (size_exhausted_ || s.size() > remaining_) {
      size_exhausted_ = true;
      return false;
    }
    remaining_ -= s.size();
    out_->append(s.data(), s.size());
    return true;
  }
  bool PrintU64(uint64_t v) { return out_ == nullptr || Print(absl::StrCat(v)); }
  // A parse failure: print the marker, remember the error, stop this production.
  bool Failed() {
    ParseError e = parser_.error;
    bool r =
        Print(e == ParseError::kRecursedTooDeep ? "{recursion limit reached}" : "{invalid syntax}");
    error_ = e;
    return r;
  }
  bool Invalid() {
    parser_.error = ParseError::kInvalid;
    return Failed();
  }
  bool Eat(uint8_t b) { return Ok() && parser_.Eat(b); }
  bool PrintIdent(const Ident& ident) {
    if (out_ == nullptr) return true;
    std::string text;
    PrintIdentTo(ident, &text);
    return Print(text);
  }

  bool PrintBackref(bool (Printer::*f)(bool), bool arg);
  bool PrintSepList(bool (Printer::*f)(bool), bool arg, absl::string_view sep, size_t* count);
  bool PrintGenericArg(bool unused);
  bool PrintLifetimeFromIndex(uint64_t lt);
  bool PrintType(bool unused = false);
  bool PrintFnSig(bool unused);
  bool PrintDynTraits(bool unused);
  bool PrintDynTrait(bool unused);
  bool PrintPathMaybeOpenGenerics(bool* open);
  bool PrintConst(bool in_value);
  bool PrintConstUint(uint8_t tag);
  bool PrintConstStrLiteral();
  bool PrintConstField(bool unused);
  bool PrintPat();
  // Parses a path with printing disabled (the impl path of `M`/`X` paths is not shown).
  bool SkipPath() {
    std::string* saved = out_;
    out_ = nullptr;
    PrintPath(false);
    out_ = saved;
    return true;
  }
  bool InBinder(bool (Printer::*f)(bool));

  Parser parser_;
  ParseError error_ = ParseError::kNone;
  std::string* out_;  // nullptr while validating or skipping
  bool alternate_;
  uint64_t bound_lifetime_depth_ = 0;
  size_t remaining_ = kMaxOutputBytes;
  bool size_exhausted_ = false;
};

// Inside Printer methods: runs one parser step (a Parser method call), or returns from the
// method: printing "?" when an earlier error already stopped parsing, or the error marker when
// this step fails (rustc-demangle's `parse!`).
#define NP_V0_PARSE(call)               \
  do {                                  \
    if (!Ok()) return Print("?");       \
    if (!parser_.call) return Failed(); \
  } while (0)
// Propagates an output-limit stop (a false return) to the caller.
#define NP_V0_TRY(expr)        \
  do {                         \
    if (!(expr)) return false; \
  } while (0)

}  // namespace nativeprof::symbolize::rust_internal::v0

#endif  // NATIVEPROF_SYMBOLIZE_RUST_DEMANGLE_V0_H_

// Rust v0 mangling (RFC 2603): `_R <path> [<instantiating-crate>]`, a compact grammar of paths,
// types, consts and generic arguments with base-62 numbers and backreferences to earlier
// positions. One recursive printer both validates (printing disabled) and renders, so the two can
// never disagree; rendering and edge cases follow rustc-demangle's v0 module.
//
// Bounds on hostile input: every recursion and every backreference followed increments a depth
// counter capped at kMaxDepth, backreferences may only point strictly backwards, and output stops
// at kMaxOutputBytes (which also bounds the work of backreference DAGs that expand exponentially).
#include "symbolize/rust_demangle_v0.h"

#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "symbolize/rust_demangle.h"

namespace nativeprof::symbolize::rust_internal {
namespace v0 {

const char* BasicType(uint8_t tag) {
  // Indexed by tag - 'a'; nullptr for letters that are not basic types.
  static constexpr const char* kTypes[26] = {
      "i8",    "bool",  "char", "f64", "str",   "f32",  nullptr, "u8",    "isize",
      "usize", nullptr, "i32",  "u32", "i128",  "u128", "_",     nullptr, nullptr,
      "i16",   "u16",   "()",   "...", nullptr, "i64",  "u64",   "!"};
  return tag >= 'a' && tag <= 'z' ? kTypes[tag - 'a'] : nullptr;
}

bool Printer::PrintBackref(bool (Printer::*f)(bool), bool arg) {
  Parser target;
  NP_V0_PARSE(Backref(&target));
  // Backreferences are not followed while validating: the target was validated where it stood.
  if (out_ == nullptr) return true;
  Parser saved = parser_;
  parser_ = target;
  bool r = (this->*f)(arg);
  parser_ = saved;
  error_ = ParseError::kNone;
  return r;
}

bool Printer::PrintSepList(bool (Printer::*f)(bool), bool arg, absl::string_view sep,
                           size_t* count) {
  size_t i = 0;
  while (Ok() && !Eat('E')) {
    if (i > 0) NP_V0_TRY(Print(sep));
    NP_V0_TRY((this->*f)(arg));
    ++i;
  }
  if (count != nullptr) *count = i;
  return true;
}

bool Printer::PrintPath(bool in_value) {
  NP_V0_PARSE(PushDepth());
  uint8_t tag;
  NP_V0_PARSE(Next(&tag));
  switch (tag) {
    case 'C': {
      uint64_t dis;
      Ident name;
      NP_V0_PARSE(Disambiguator(&dis));
      NP_V0_PARSE(ParseIdent(&name));
      NP_V0_TRY(PrintIdent(name));
      if (out_ != nullptr && !alternate_ && dis != 0) {
        NP_V0_TRY(Print(absl::StrCat("[", absl::Hex(dis), "]")));
      }
      break;
    }
    case 'N': {
      uint8_t ns;
      NP_V0_PARSE(Namespace(&ns));
      NP_V0_TRY(PrintPath(in_value));
      // A failed inner path would otherwise print "?" without its "::".
      if (!Ok()) NP_V0_TRY(Print("::"));
      uint64_t dis;
      Ident name;
      NP_V0_PARSE(Disambiguator(&dis));
      NP_V0_PARSE(ParseIdent(&name));
      bool has_name = !name.ascii.empty() || !name.punycode.empty();
      if (ns != 0) {
        NP_V0_TRY(Print("::{"));
        if (ns == 'C') {
          NP_V0_TRY(Print("closure"));
        } else if (ns == 'S') {
          NP_V0_TRY(Print("shim"));
        } else {
          char c = static_cast<char>(ns);
          NP_V0_TRY(Print(absl::string_view(&c, 1)));
        }
        if (has_name) {
          NP_V0_TRY(Print(":"));
          NP_V0_TRY(PrintIdent(name));
        }
        NP_V0_TRY(Print("#"));
        NP_V0_TRY(PrintU64(dis));
        NP_V0_TRY(Print("}"));
      } else if (has_name) {
        NP_V0_TRY(Print("::"));
        NP_V0_TRY(PrintIdent(name));
      }
      break;
    }
    case 'M':
    case 'X':
    case 'Y': {
      if (tag != 'Y') {
        uint64_t dis;
        NP_V0_PARSE(Disambiguator(&dis));
        SkipPath();
      }
      NP_V0_TRY(Print("<"));
      NP_V0_TRY(PrintType());
      if (tag != 'M') {
        NP_V0_TRY(Print(" as "));
        NP_V0_TRY(PrintPath(false));
      }
      NP_V0_TRY(Print(">"));
      break;
    }
    case 'I': {
      NP_V0_TRY(PrintPath(in_value));
      if (in_value) NP_V0_TRY(Print("::"));
      NP_V0_TRY(Print("<"));
      NP_V0_TRY(PrintSepList(&Printer::PrintGenericArg, false, ", ", nullptr));
      NP_V0_TRY(Print(">"));
      break;
    }
    case 'B':
      NP_V0_TRY(PrintBackref(&Printer::PrintPath, in_value));
      break;
    default:
      return Invalid();
  }
  parser_.PopDepth();
  return true;
}

bool Printer::PrintGenericArg(bool) {
  if (Eat('L')) {
    uint64_t lt;
    NP_V0_PARSE(Integer62(&lt));
    return PrintLifetimeFromIndex(lt);
  }
  if (Eat('K')) return PrintConst(false);
  return PrintType();
}

bool Printer::PrintLifetimeFromIndex(uint64_t lt) {
  // Bound lifetimes are not tracked while validating.
  if (out_ == nullptr) return true;
  NP_V0_TRY(Print("'"));
  if (lt == 0) return Print("_");
  if (lt > bound_lifetime_depth_) return Invalid();
  uint64_t depth = bound_lifetime_depth_ - lt;
  if (depth < 26) {
    char c = static_cast<char>('a' + depth);
    return Print(absl::string_view(&c, 1));
  }
  NP_V0_TRY(Print("_"));
  return PrintU64(depth);
}

bool Printer::InBinder(bool (Printer::*f)(bool)) {
  uint64_t bound;
  NP_V0_PARSE(OptInteger62('G', &bound));
  if (out_ == nullptr) return (this->*f)(false);
  if (bound > 0) {
    NP_V0_TRY(Print("for<"));
    for (uint64_t i = 0; i < bound; ++i) {
      if (i > 0) NP_V0_TRY(Print(", "));
      ++bound_lifetime_depth_;
      NP_V0_TRY(PrintLifetimeFromIndex(1));
    }
    NP_V0_TRY(Print("> "));
  }
  bool r = (this->*f)(false);
  bound_lifetime_depth_ -= bound;
  return r;
}

bool Printer::PrintType(bool) {
  uint8_t tag;
  NP_V0_PARSE(Next(&tag));
  if (const char* basic = BasicType(tag)) return Print(basic);
  NP_V0_PARSE(PushDepth());
  switch (tag) {
    case 'R':
    case 'Q': {
      NP_V0_TRY(Print("&"));
      if (Eat('L')) {
        uint64_t lt;
        NP_V0_PARSE(Integer62(&lt));
        if (lt != 0) {
          NP_V0_TRY(PrintLifetimeFromIndex(lt));
          NP_V0_TRY(Print(" "));
        }
      }
      if (tag != 'R') NP_V0_TRY(Print("mut "));
      NP_V0_TRY(PrintType());
      break;
    }
    case 'P':
    case 'O':
      NP_V0_TRY(Print(tag == 'P' ? "*const " : "*mut "));
      NP_V0_TRY(PrintType());
      break;
    case 'A':
    case 'S':
      NP_V0_TRY(Print("["));
      NP_V0_TRY(PrintType());
      if (tag == 'A') {
        NP_V0_TRY(Print("; "));
        NP_V0_TRY(PrintConst(true));
      }
      NP_V0_TRY(Print("]"));
      break;
    case 'T': {
      NP_V0_TRY(Print("("));
      size_t count = 0;
      NP_V0_TRY(PrintSepList(&Printer::PrintType, false, ", ", &count));
      if (count == 1) NP_V0_TRY(Print(","));
      NP_V0_TRY(Print(")"));
      break;
    }
    case 'F':
      NP_V0_TRY(InBinder(&Printer::PrintFnSig));
      break;
    case 'D': {
      NP_V0_TRY(Print("dyn "));
      NP_V0_TRY(InBinder(&Printer::PrintDynTraits));
      if (!Eat('L')) return Invalid();
      uint64_t lt;
      NP_V0_PARSE(Integer62(&lt));
      if (lt != 0) {
        NP_V0_TRY(Print(" + "));
        NP_V0_TRY(PrintLifetimeFromIndex(lt));
      }
      break;
    }
    case 'B':
      NP_V0_TRY(PrintBackref(&Printer::PrintType, false));
      break;
    case 'W':
      NP_V0_TRY(PrintType());
      NP_V0_TRY(Print(" is "));
      NP_V0_TRY(PrintPat());
      break;
    default:
      // Not a type tag: it starts a path; step back so PrintPath sees the tag.
      --parser_.next;
      NP_V0_TRY(PrintPath(false));
      break;
  }
  parser_.PopDepth();
  return true;
}

}  // namespace v0

namespace {
using v0::ParseError;
using v0::Parser;
using v0::Printer;

// `_R` (or `R` from dbghelp, `__R` on macOS) stripped; empty when absent.
absl::string_view V0Inner(absl::string_view s) {
  if (s.size() > 2 && s.substr(0, 2) == "_R") return s.substr(2);
  if (s.size() > 1 && s[0] == 'R') return s.substr(1);
  if (s.size() > 3 && s.substr(0, 3) == "__R") return s.substr(3);
  return absl::string_view();
}

// Validates one path starting at `*next`, advancing it; false on any parse error.
bool ValidatePath(absl::string_view inner, size_t* next) {
  Parser parser{inner, *next};
  Printer printer(parser, nullptr, false);
  printer.PrintPath(false);
  if (printer.error() != ParseError::kNone) return false;
  *next = printer.parser().next;
  return true;
}

}  // namespace

bool ParseV0(absl::string_view symbol, absl::string_view* rest) {
  absl::string_view inner = V0Inner(symbol);
  if (inner.empty() || inner[0] < 'A' || inner[0] > 'Z') return false;
  for (char c : inner) {
    if (static_cast<unsigned char>(c) & 0x80) return false;
  }
  size_t next = 0;
  if (!ValidatePath(inner, &next)) return false;
  // An optional instantiating crate follows; it is validated but never printed.
  if (next < inner.size() && inner[next] >= 'A' && inner[next] <= 'Z') {
    if (!ValidatePath(inner, &next)) return false;
  }
  *rest = inner.substr(next);
  return true;
}

void PrintV0(absl::string_view symbol, bool alternate, std::string* out) {
  Printer printer(Parser{V0Inner(symbol)}, out, alternate);
  if (!printer.PrintPath(true) && printer.size_exhausted()) out->append("{size limit reached}");
}

}  // namespace nativeprof::symbolize::rust_internal

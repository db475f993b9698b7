// Rust v0 demangling, second half: function signatures, `dyn` trait bounds, const generic values
// (integers, bool, char, &str, arrays, tuples, ADTs) and pattern types. See rust_demangle_v0.cc.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "symbolize/rust_demangle_text.h"
#include "symbolize/rust_demangle_v0.h"

namespace nativeprof::symbolize::rust_internal::v0 {

bool Printer::PrintFnSig(bool) {
  bool is_unsafe = Eat('U');
  absl::string_view abi;
  bool has_abi = false;
  if (Eat('K')) {
    has_abi = true;
    if (Eat('C')) {
      abi = "C";
    } else {
      Ident ident;
      NP_V0_PARSE(ParseIdent(&ident));
      if (ident.ascii.empty() || !ident.punycode.empty()) return Invalid();
      abi = ident.ascii;
    }
  }
  if (is_unsafe) NP_V0_TRY(Print("unsafe "));
  if (has_abi) {
    NP_V0_TRY(Print("extern \""));
    // Mangling replaced `-` in ABI names with `_`.
    std::string name(abi.data(), abi.size());
    std::replace(name.begin(), name.end(), '_', '-');
    NP_V0_TRY(Print(name));
    NP_V0_TRY(Print("\" "));
  }
  NP_V0_TRY(Print("fn("));
  NP_V0_TRY(PrintSepList(&Printer::PrintType, false, ", ", nullptr));
  NP_V0_TRY(Print(")"));
  if (Eat('u')) return true;  // unit return type is not shown
  NP_V0_TRY(Print(" -> "));
  return PrintType();
}

bool Printer::PrintDynTraits(bool) {
  return PrintSepList(&Printer::PrintDynTrait, false, " + ", nullptr);
}

bool Printer::PrintDynTrait(bool) {
  bool open = false;
  NP_V0_TRY(PrintPathMaybeOpenGenerics(&open));
  while (Eat('p')) {
    NP_V0_TRY(Print(open ? ", " : "<"));
    open = true;
    Ident name;
    NP_V0_PARSE(ParseIdent(&name));
    NP_V0_TRY(PrintIdent(name));
    NP_V0_TRY(Print(" = "));
    // Associated types, and associated consts (`Trait<N = 0>`, a `K` argument).
    NP_V0_TRY(PrintGenericArg(false));
  }
  if (open) NP_V0_TRY(Print(">"));
  return true;
}

bool Printer::PrintPathMaybeOpenGenerics(bool* open) {
  if (Eat('B')) {
    Parser target;
    NP_V0_PARSE(Backref(&target));
    if (out_ == nullptr) return true;
    Parser saved = parser_;
    parser_ = target;
    bool r = PrintPathMaybeOpenGenerics(open);
    parser_ = saved;
    error_ = ParseError::kNone;
    return r;
  }
  if (Eat('I')) {
    NP_V0_TRY(PrintPath(false));
    NP_V0_TRY(Print("<"));
    NP_V0_TRY(PrintSepList(&Printer::PrintGenericArg, false, ", ", nullptr));
    *open = true;
    return true;
  }
  return PrintPath(false);
}

namespace {
// Value of hex nibbles when it fits in 64 bits.
bool TryParseUint(absl::string_view nibbles, uint64_t* value) {
  size_t first = nibbles.find_first_not_of('0');
  nibbles = first == absl::string_view::npos ? absl::string_view() : nibbles.substr(first);
  if (nibbles.size() > 16) return false;
  uint64_t v = 0;
  for (char c : nibbles) {
    v = v << 4 | static_cast<uint64_t>(c <= '9' ? c - '0' : c - 'a' + 10);
  }
  *value = v;
  return true;
}
}  // namespace

bool Printer::PrintConstUint(uint8_t tag) {
  absl::string_view nibbles;
  NP_V0_PARSE(HexNibbles(&nibbles));
  uint64_t v;
  if (TryParseUint(nibbles, &v)) {
    NP_V0_TRY(PrintU64(v));
  } else {
    NP_V0_TRY(Print("0x"));
    NP_V0_TRY(Print(nibbles));
  }
  if (out_ != nullptr && !alternate_) NP_V0_TRY(Print(BasicType(tag)));
  return true;
}

bool Printer::PrintConstStrLiteral() {
  absl::string_view nibbles;
  NP_V0_PARSE(HexNibbles(&nibbles));
  std::vector<uint32_t> chars;
  if (!DecodeUtf8Nibbles(nibbles, &chars)) return Invalid();
  if (out_ == nullptr) return true;
  std::string text;
  AppendQuotedEscaped('"', chars, &text);
  return Print(text);
}

bool Printer::PrintConstField(bool) {
  uint64_t dis;
  Ident name;
  NP_V0_PARSE(Disambiguator(&dis));
  NP_V0_PARSE(ParseIdent(&name));
  NP_V0_TRY(PrintIdent(name));
  NP_V0_TRY(Print(": "));
  return PrintConst(true);
}

bool Printer::PrintConst(bool in_value) {
  uint8_t tag;
  NP_V0_PARSE(Next(&tag));
  NP_V0_PARSE(PushDepth());
  // Literals can stand alone as generic arguments; other expressions get braces unless nested.
  bool opened_brace = false;
  auto open_brace = [&]() -> bool {
    if (in_value) return true;
    opened_brace = true;
    return Print("{");
  };
  switch (tag) {
    case 'p':
      NP_V0_TRY(Print("_"));
      break;
    case 'h':
    case 't':
    case 'm':
    case 'y':
    case 'o':
    case 'j':
      NP_V0_TRY(PrintConstUint(tag));
      break;
    case 'a':
    case 's':
    case 'l':
    case 'x':
    case 'n':
    case 'i':
      if (Eat('n')) NP_V0_TRY(Print("-"));
      NP_V0_TRY(PrintConstUint(tag));
      break;
    case 'b': {
      absl::string_view nibbles;
      NP_V0_PARSE(HexNibbles(&nibbles));
      uint64_t v;
      if (!TryParseUint(nibbles, &v) || v > 1) return Invalid();
      NP_V0_TRY(Print(v == 0 ? "false" : "true"));
      break;
    }
    case 'c': {
      absl::string_view nibbles;
      NP_V0_PARSE(HexNibbles(&nibbles));
      uint64_t v;
      if (!TryParseUint(nibbles, &v) || !IsScalarValue(v)) return Invalid();
      if (out_ != nullptr) {
        std::string text;
        AppendQuotedEscaped('\'', {static_cast<uint32_t>(v)}, &text);
        NP_V0_TRY(Print(text));
      }
      break;
    }
    case 'e':
      NP_V0_TRY(open_brace());
      NP_V0_TRY(Print("*"));
      NP_V0_TRY(PrintConstStrLiteral());
      break;
    case 'R':
    case 'Q':
      // `Re<hex>_` is a `&str` value: printed as the literal, not `&*"..."`.
      if (tag == 'R' && Eat('e')) {
        NP_V0_TRY(PrintConstStrLiteral());
      } else {
        NP_V0_TRY(open_brace());
        NP_V0_TRY(Print(tag == 'R' ? "&" : "&mut "));
        NP_V0_TRY(PrintConst(true));
      }
      break;
    case 'A':
      NP_V0_TRY(open_brace());
      NP_V0_TRY(Print("["));
      NP_V0_TRY(PrintSepList(&Printer::PrintConst, true, ", ", nullptr));
      NP_V0_TRY(Print("]"));
      break;
    case 'T': {
      NP_V0_TRY(open_brace());
      NP_V0_TRY(Print("("));
      size_t count = 0;
      NP_V0_TRY(PrintSepList(&Printer::PrintConst, true, ", ", &count));
      if (count == 1) NP_V0_TRY(Print(","));
      NP_V0_TRY(Print(")"));
      break;
    }
    case 'V': {
      NP_V0_TRY(open_brace());
      NP_V0_TRY(PrintPath(true));
      uint8_t kind;
      NP_V0_PARSE(Next(&kind));
      if (kind == 'T') {
        NP_V0_TRY(Print("("));
        NP_V0_TRY(PrintSepList(&Printer::PrintConst, true, ", ", nullptr));
        NP_V0_TRY(Print(")"));
      } else if (kind == 'S') {
        NP_V0_TRY(Print(" { "));
        NP_V0_TRY(PrintSepList(&Printer::PrintConstField, false, ", ", nullptr));
        NP_V0_TRY(Print(" }"));
      } else if (kind != 'U') {
        return Invalid();
      }
      break;
    }
    case 'B':
      NP_V0_TRY(PrintBackref(&Printer::PrintConst, in_value));
      break;
    default:
      return Invalid();
  }
  if (opened_brace) NP_V0_TRY(Print("}"));
  parser_.PopDepth();
  return true;
}

// Pattern of a pattern type `W <type> <pat>`: ranges, or-patterns, `!null`.
bool Printer::PrintPat() {
  uint8_t tag;
  NP_V0_PARSE(Next(&tag));
  switch (tag) {
    case 'R':
      NP_V0_TRY(PrintConst(false));
      NP_V0_TRY(Print("..="));
      return PrintConst(false);
    case 'O':
      NP_V0_PARSE(PushDepth());
      NP_V0_TRY(PrintPat());
      while (!Eat('E')) {
        // Without this check a truncated symbol would loop at its end.
        if (!Ok()) return Invalid();
        NP_V0_TRY(Print(" | "));
        NP_V0_TRY(PrintPat());
      }
      parser_.PopDepth();
      return true;
    case 'N':
      return Print("!null");
    default:
      return Invalid();
  }
}

}  // namespace nativeprof::symbolize::rust_internal::v0

// `nativeprof demangle`: a c++filt work-alike over nativeprof's demangler. Demangles each
// argument, or, with no arguments, every symbol-looking word of each line on stdin (runs of
// [A-Za-z0-9_.$] like c++filt), copying everything else through. C++ exactly as c++filt prints
// it, Rust in rustc-demangle's alternate form (full form with --full-names).
// Runs on the main thread; no state besides stdin/stdout.
#include <getopt.h>

#include <cstdio>
#include <string>

#include "absl/strings/string_view.h"
#include "symbolize/demangle.h"
#include "tools/commands.h"
#include "tools/exit_codes.h"

namespace nativeprof::tools {
namespace {

constexpr char kUsage[] =
    "usage: nativeprof demangle [--full-names] [NAME...]\n"
    "\n"
    "Demangles C++ (Itanium), Rust legacy and Rust v0 symbol names like c++filt: each NAME, or\n"
    "the symbols found in each line of stdin when no NAME is given. Names that are not mangled\n"
    "are printed unchanged. C++ names come out exactly as c++filt prints them.\n"
    "\n"
    "options:\n"
    "  -f, --full-names   Rust: keep hashes, crate disambiguators and integer type suffixes\n"
    "  -h, --help         this text\n";

bool IsSymbolChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == '$';
}

// Demangles the symbol-looking words of `line` in place of themselves, as c++filt does for its
// standard input.
std::string DemangleLine(absl::string_view line, const symbolize::DemangleOptions& options) {
  std::string out;
  out.reserve(line.size());
  size_t i = 0;
  while (i < line.size()) {
    if (!IsSymbolChar(line[i])) {
      out.push_back(line[i++]);
      continue;
    }
    size_t start = i;
    while (i < line.size() && IsSymbolChar(line[i])) ++i;
    // A ThinLTO suffix may carry a symbol version ("_RC3foo.llvm.9D1C9369@@16"): rustc-demangle
    // takes '@' as part of it, while '@' ends every other word, as in c++filt.
    if (i < line.size() && line[i] == '@' &&
        line.substr(start, i - start).find(".llvm.") != absl::string_view::npos) {
      while (i < line.size() && (IsSymbolChar(line[i]) || line[i] == '@')) ++i;
    }
    out.append(symbolize::DemangleForDisplay(line.substr(start, i - start), options));
  }
  return out;
}

int DemangleStdin(const symbolize::DemangleOptions& options) {
  std::string line;
  int c;
  bool ok = true;
  auto flush_line = [&](bool newline) {
    std::string text = DemangleLine(line, options);
    if (newline) text.push_back('\n');
    ok = ok && std::fwrite(text.data(), 1, text.size(), stdout) == text.size();
    line.clear();
  };
  while ((c = std::getc(stdin)) != EOF) {
    if (c == '\n') {
      flush_line(true);
      // Interactive use (and pipelines that wait per line) need each answer right away.
      std::fflush(stdout);
    } else {
      line.push_back(static_cast<char>(c));
    }
  }
  if (!line.empty()) flush_line(false);
  if (std::fflush(stdout) != 0 || !ok) {
    std::fprintf(stderr, "nativeprof: cannot write to stdout; check the output pipe or disk\n");
    return kExitOutput;
  }
  return kExitOk;
}

}  // namespace

int RunDemangleCommand(int argc, char** argv) {
  static const option kOptions[] = {
      {"full-names", no_argument, nullptr, 'f'},
      {"help", no_argument, nullptr, 'h'},
      {nullptr, 0, nullptr, 0},
  };
  symbolize::DemangleOptions options;
  optind = 0;
  int opt;
  while ((opt = getopt_long(argc, argv, "fh", kOptions, nullptr)) != -1) {
    switch (opt) {
      case 'f':
        options.full_names = true;
        break;
      case 'h':
        std::fputs(kUsage, stdout);
        return kExitOk;
      default:
        std::fprintf(stderr, "nativeprof: bad demangle option; run 'nativeprof demangle --help'\n");
        return kExitUsage;
    }
  }
  if (optind >= argc) return DemangleStdin(options);
  for (int i = optind; i < argc; ++i) {
    std::string text = symbolize::DemangleForDisplay(argv[i], options);
    text.push_back('\n');
    std::fwrite(text.data(), 1, text.size(), stdout);
  }
  if (std::fflush(stdout) != 0) {
    std::fprintf(stderr, "nativeprof: cannot write to stdout; check the output pipe or disk\n");
    return kExitOutput;
  }
  return kExitOk;
}

}  // namespace nativeprof::tools

#include "tools/report_options.h"

#include <getopt.h>

#include <cstdio>
#include <cstdlib>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/text_escape.h"

namespace nativeprof::tools {
namespace {

constexpr char kReportUsage[] = R"(usage: nativeprof report [FILE] [options]

Prints the top functions of a folded profile (default nativeprof.folded) by self and total
share, each with a 95% confidence interval, and the counters of FILE.json when it exists.

  -n, --top N        functions per table (default 20)
      --focus RE     only samples whose stack has a frame matching RE (POSIX extended regex);
                     shares are then of those samples
      --hide RE      drop frames matching RE from every stack; their self time goes to the
                     nearest visible caller (e.g. --hide '^(core|alloc|std)::')
      --by KEY       function (default) or module: crate, namespace or shared object
      --format F     text (default), json or markdown
      --tree         also print the call tree (text only)
      --depth D      call-tree depth in frames below the thread (default 8)
      --min-percent P  call-tree callees under P% are summarised (default 0.5)
  -h, --help         this text
)";

absl::Status Usage(const std::string& problem, const std::string& fix) {
  return absl::InvalidArgumentError(absl::StrCat(problem, "; ", fix));
}

bool ParseNumber(const char* text, double min, double max, double* out) {
  char* end = nullptr;
  const double v = std::strtod(text, &end);
  if (end == text || *end != '\0' || !(v >= min && v <= max)) return false;
  *out = v;
  return true;
}

// One --focus / --hide: compiled now, so a bad pattern fails before any input is read.
absl::Status SetRegex(const char* option, const char* pattern,
                      std::optional<output::NameRegex>* slot) {
  const std::string quoted = EscapeForMessage(pattern);
  if (slot->has_value()) {
    return Usage(absl::StrCat(option, " given twice"),
                 absl::StrCat("give it once; combine patterns with '|', as in ", option, " 'a|b'"));
  }
  absl::StatusOr<output::NameRegex> re = output::NameRegex::Compile(pattern);
  if (!re.ok()) {
    return Usage(absl::StrCat(option, " '", quoted, "' is not a valid regular expression (",
                              re.status().message(), ")"),
                 "it is POSIX extended syntax, see regex(7)");
  }
  slot->emplace(*std::move(re));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ReportOptions> ParseReportOptions(int argc, char** argv) {
  enum { kTree = 1000, kDepth, kMinPercent, kFocus, kHide, kBy, kFormat };
  static const option kLong[] = {
      {"top", required_argument, nullptr, 'n'},
      {"tree", no_argument, nullptr, kTree},
      {"depth", required_argument, nullptr, kDepth},
      {"min-percent", required_argument, nullptr, kMinPercent},
      {"focus", required_argument, nullptr, kFocus},
      {"hide", required_argument, nullptr, kHide},
      {"by", required_argument, nullptr, kBy},
      {"format", required_argument, nullptr, kFormat},
      {"help", no_argument, nullptr, 'h'},
      {nullptr, 0, nullptr, 0},
  };
  ReportOptions o;
  double top_n = 20, depth = 8;
  optind = 0;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, "n:h", kLong, nullptr)) != -1) {
    const std::string arg = optarg != nullptr ? EscapeForMessage(optarg) : "";
    switch (c) {
      case 'n':
        if (!ParseNumber(optarg, 1, 1e6, &top_n)) {
          return Usage(absl::StrCat("-n '", arg, "' is not a count"), "use e.g. -n 20");
        }
        break;
      case kTree:
        o.tree = true;
        break;
      case kDepth:
        if (!ParseNumber(optarg, 0, 10000, &depth)) {
          return Usage(absl::StrCat("--depth '", arg, "' is not a depth"), "use e.g. --depth 6");
        }
        break;
      case kMinPercent:
        if (!ParseNumber(optarg, 0, 100, &o.min_percent)) {
          return Usage(absl::StrCat("--min-percent '", arg, "' is not a percentage"),
                       "use 0 to 100");
        }
        break;
      case kFocus:
        if (absl::Status st = SetRegex("--focus", optarg, &o.focus); !st.ok()) return st;
        break;
      case kHide:
        if (absl::Status st = SetRegex("--hide", optarg, &o.hide); !st.ok()) return st;
        break;
      case kBy:
        if (std::string(optarg) == "function") {
          o.by = output::ReportKey::kFunction;
        } else if (std::string(optarg) == "module") {
          o.by = output::ReportKey::kModule;
        } else {
          return Usage(absl::StrCat("--by '", arg, "' is not a report key"),
                       "use --by function or --by module");
        }
        break;
      case kFormat:
        if (std::string(optarg) == "text") {
          o.format = ReportFormat::kText;
        } else if (std::string(optarg) == "json") {
          o.format = ReportFormat::kJson;
        } else if (std::string(optarg) == "markdown") {
          o.format = ReportFormat::kMarkdown;
        } else {
          return Usage(absl::StrCat("--format '", arg, "' is not a report format"),
                       "use text, json or markdown");
        }
        break;
      case 'h':
        std::fputs(kReportUsage, stdout);
        return absl::CancelledError("help");
      default:
        return Usage(
            absl::StrCat("unknown or incomplete option '", EscapeForMessage(argv[optind - 1]), "'"),
            "see 'nativeprof report --help'");
    }
  }
  if (argc - optind > 1) {
    return Usage(absl::StrCat("unexpected argument '", EscapeForMessage(argv[optind + 1]), "'"),
                 "usage: nativeprof report [FILE]");
  }
  if (o.tree && o.format != ReportFormat::kText) {
    return Usage("--tree prints text only", "drop --tree or use --format text");
  }
  if (optind < argc) o.path = argv[optind];
  o.top_n = static_cast<size_t>(top_n);
  o.depth = static_cast<int>(depth);
  return o;
}

}  // namespace nativeprof::tools

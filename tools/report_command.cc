// `nativeprof report [FILE] [-n N] [--tree [--depth D]]`: top functions of a folded profile with
// confidence intervals, an optional call tree, and the counter summary from FILE.json when
// present. Main thread only.
#include <getopt.h>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "base/file_util.h"
#include "nlohmann/json.hpp"
#include "output/text_report.h"
#include "tools/commands.h"
#include "tools/exit_codes.h"
#include "tools/input_profile.h"

namespace nativeprof::tools {
namespace {

constexpr char kReportUsage[] = R"(usage: nativeprof report [FILE] [options]

Prints the top functions of a folded profile (default nativeprof.folded) by self and total
share, each with a 95% confidence interval, and the counters of FILE.json when it exists.

  -n, --top N        functions per table (default 20)
      --tree         also print the call tree
      --depth D      call-tree depth in frames below the thread (default 8)
      --min-percent P  call-tree callees under P% are summarised (default 0.5)
  -h, --help         this text
)";

int Usage(const std::string& problem, const std::string& fix) {
  std::fprintf(stderr, "nativeprof: %s; %s\n", problem.c_str(), fix.c_str());
  return kExitUsage;
}

bool ParseNumber(const char* text, double min, double max, double* out) {
  char* end = nullptr;
  const double v = std::strtod(text, &end);
  if (end == text || *end != '\0' || !(v >= min && v <= max)) return false;
  *out = v;
  return true;
}

}  // namespace

int RunReportCommand(int argc, char** argv) {
  enum { kTree = 1000, kDepth, kMinPercent };
  static const option kLong[] = {
      {"top", required_argument, nullptr, 'n'},
      {"tree", no_argument, nullptr, kTree},
      {"depth", required_argument, nullptr, kDepth},
      {"min-percent", required_argument, nullptr, kMinPercent},
      {"help", no_argument, nullptr, 'h'},
      {nullptr, 0, nullptr, 0},
  };
  double top_n = 20, depth = 8, min_percent = 0.5;
  bool tree = false;
  optind = 0;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, "n:h", kLong, nullptr)) != -1) {
    switch (c) {
      case 'n':
        if (!ParseNumber(optarg, 1, 1e6, &top_n)) {
          return Usage(absl::StrCat("-n '", optarg, "' is not a count"), "use e.g. -n 20");
        }
        break;
      case kTree:
        tree = true;
        break;
      case kDepth:
        if (!ParseNumber(optarg, 0, 10000, &depth)) {
          return Usage(absl::StrCat("--depth '", optarg, "' is not a depth"), "use e.g. --depth 6");
        }
        break;
      case kMinPercent:
        if (!ParseNumber(optarg, 0, 100, &min_percent)) {
          return Usage(absl::StrCat("--min-percent '", optarg, "' is not a percentage"),
                       "use 0 to 100");
        }
        break;
      case 'h':
        std::fputs(kReportUsage, stdout);
        return kExitOk;
      default:
        return Usage(absl::StrCat("unknown or incomplete option '", argv[optind - 1], "'"),
                     "see 'nativeprof report --help'");
    }
  }
  if (argc - optind > 1) {
    return Usage(absl::StrCat("unexpected argument '", argv[optind + 1], "'"),
                 "usage: nativeprof report [FILE]");
  }
  const std::string path = optind < argc ? argv[optind] : "nativeprof.folded";
  std::optional<symbolize::Profile> profile =
      ReadInputProfile(path, "give a folded file ('comm;frame;...;frame COUNT' per line)");
  if (!profile.has_value()) return kExitBadInput;
  std::string text = output::RenderTopFunctions(*profile, static_cast<size_t>(top_n));
  if (tree) {
    text.push_back('\n');
    text += output::RenderCallTree(*profile, static_cast<int>(depth), min_percent);
  }
  // Counters recorded beside the profile; a missing or unparsable file only loses that section.
  absl::StatusOr<std::string> meta_text = ReadSmallFile(path + ".json");
  if (meta_text.ok()) {
    nlohmann::json meta = nlohmann::json::parse(*meta_text, nullptr, /*allow_exceptions=*/false);
    if (meta.is_discarded()) {
      std::fprintf(stderr, "nativeprof: %s.json is not valid JSON; counters not shown\n",
                   path.c_str());
    } else {
      const std::string counters = output::RenderCounters(meta);
      if (!counters.empty()) {
        text.push_back('\n');
        text += counters;
      }
    }
  }
  std::fwrite(text.data(), 1, text.size(), stdout);
  return kExitOk;
}

}  // namespace nativeprof::tools

// `nativeprof diff BEFORE AFTER [-o diff.svg] [--level 0.99] [-n N]`: which functions' shares
// changed between two folded profiles, tested for significance, plus a differential flame graph.
// Main thread only.
#include <getopt.h>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <tuple>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/file_util.h"
#include "output/alloc_tables.h"
#include "output/diff_report.h"
#include "output/frame_modules.h"
#include "tools/alloc_report.h"
#include "tools/cli_error.h"
#include "tools/commands.h"
#include "tools/exit_codes.h"
#include "tools/input_profile.h"

namespace nativeprof::tools {
namespace {

constexpr char kDiffUsage[] = R"(usage: nativeprof diff BEFORE AFTER [options]

Compares two folded profiles: functions whose self or total share changed, largest first, each
marked significant (*) or not by a two-proportion z-test on the shares, so profiles with
different sample counts compare fairly.

  -o, --output FILE   also write a differential flame graph SVG (widths from AFTER;
                      red = larger share after, blue = smaller)
      --level L       confidence level of the test, 0.5 to 0.999999 (default 0.99)
  -n, --top N         rows to print (default 30)
      --title TEXT    flame graph title
  -h, --help          this text
)";

int Usage(const std::string& problem, const std::string& fix) {
  return PrintCliError(CliStep::kParseOptions, absl::InvalidArgumentError(problem), {}, fix);
}

}  // namespace

int RunDiffCommand(int argc, char** argv) {
  enum { kLevel = 1000, kTitle };
  static const option kLong[] = {
      {"output", required_argument, nullptr, 'o'},
      {"level", required_argument, nullptr, kLevel},
      {"top", required_argument, nullptr, 'n'},
      {"title", required_argument, nullptr, kTitle},
      {"help", no_argument, nullptr, 'h'},
      {nullptr, 0, nullptr, 0},
  };
  std::string svg_path, title;
  double level = 0.99;
  long top_n = 30;
  optind = 0;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, "o:n:h", kLong, nullptr)) != -1) {
    switch (c) {
      case 'o':
        svg_path = optarg;
        break;
      case kLevel: {
        char* end = nullptr;
        level = std::strtod(optarg, &end);
        if (end == optarg || *end != '\0' || !(level >= 0.5 && level <= 0.999999)) {
          return Usage(absl::StrCat("--level '", optarg, "' is not a confidence level"),
                       "use e.g. --level 0.99 or 0.95");
        }
        break;
      }
      case 'n': {
        char* end = nullptr;
        top_n = std::strtol(optarg, &end, 10);
        if (end == optarg || *end != '\0' || top_n < 1) {
          return Usage(absl::StrCat("-n '", optarg, "' is not a count"), "use e.g. -n 30");
        }
        break;
      }
      case kTitle:
        title = optarg;
        break;
      case 'h':
        std::fputs(kDiffUsage, stdout);
        return kExitOk;
      default:
        return Usage(absl::StrCat("unknown or incomplete option '", argv[optind - 1], "'"),
                     "see 'nativeprof diff --help'");
    }
  }
  if (argc - optind != 2) {
    return Usage("diff needs two folded files",
                 "usage: nativeprof diff BEFORE AFTER [-o diff.svg]");
  }
  if (!svg_path.empty()) {
    if (absl::Status st = CheckOutputsSpareInputs({svg_path}, {argv[optind], argv[optind + 1]});
        !st.ok()) {
      return Usage(std::string(st.message()), "choose another output path");
    }
    absl::Status writable = CheckOutputWritable(svg_path);
    if (!writable.ok()) {
      return PrintCliError(CliStep::kWriteOutput, writable, absl::StrCat("cannot write ", svg_path),
                           "choose another output path");
    }
  }
  std::optional<symbolize::Profile> before =
      ReadInputProfile(argv[optind], "give two folded files");
  if (!before.has_value()) return kExitBadInput;
  std::optional<symbolize::Profile> after =
      ReadInputProfile(argv[optind + 1], "give two folded files");
  if (!after.has_value()) return kExitBadInput;
  std::string before_view, after_view;
  const nlohmann::json before_meta = ReadRecordMetadata(argv[optind], &before_view);
  const nlohmann::json after_meta = ReadRecordMetadata(argv[optind + 1], &after_view);
  if (before_view != after_view) {
    // What each view weighs: the off-CPU and wall views are time, the allocation views bytes or
    // counts; their file names say which.
    auto describe = [](const std::string& view) {
      return view.empty() ? std::string("a CPU profile")
                          : absl::StrCat("a .", view, ". view");
    };
    return PrintCliError(
        CliStep::kReadInput,
        absl::InvalidArgumentError(absl::StrCat("cannot compare ", describe(before_view),
                                                " with ", describe(after_view))),
        {}, "diff two files of the same view (X.folded with Y.folded, X.offcpu.folded with Y.offcpu.folded)");
  }
  for (auto [path, view, profile] : {std::tuple(argv[optind], &before_view, &*before),
                                     std::tuple(argv[optind + 1], &after_view, &*after)}) {
    if (absl::Status st = MarkRecordedView(path, *view, profile); !st.ok()) {
      return PrintCliError(CliStep::kReadInput, st);
    }
  }
  const output::DiffResult diff = output::DiffProfiles(*before, *after, level);
  std::string table = output::RenderAllocTotalsDiff(before_meta, after_meta);
  if (!table.empty()) table.push_back('\n');
  if (const AllocView* alloc = FindAllocView(before_view); alloc != nullptr) {
    // An allocation view's sites in its own unit, as `report` names them: where the bytes (or
    // the temporary allocations, or the peak) went, not only how the shares moved.
    const output::FrameModuleMap before_modules = output::ParseFrameModules(before_meta);
    const output::FrameModuleMap after_modules = output::ParseFrameModules(after_meta);
    table += output::RenderAllocSitesDiff(alloc->metric, symbolize::AllocViewUnit(alloc->view),
                                          *before, &before_modules, *after, &after_modules,
                                          static_cast<size_t>(top_n));
    table.push_back('\n');
  }
  table += output::RenderDiffTable(diff, static_cast<size_t>(top_n));
  std::fwrite(table.data(), 1, table.size(), stdout);
  if (!svg_path.empty()) {
    absl::Status st =
        WriteFileAtomically(svg_path, output::RenderDiffSvg(*before, *after, title));
    if (!st.ok()) {
      return PrintCliError(CliStep::kWriteOutput, st, {}, "choose another output path");
    }
  }
  return kExitOk;
}

}  // namespace nativeprof::tools

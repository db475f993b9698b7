// `nativeprof convert IN [OUT] [-o FILE]... [--format F] [--title T]`: reads a folded file and
// writes it in other formats (folded, flame graph SVG, pprof, speedscope). Main thread only.
#include <getopt.h>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/file_util.h"
#include "output/alloc_tables.h"
#include "output/frame_modules.h"
#include "output/profile_writer.h"
#include "tools/alloc_report.h"
#include "tools/cli_error.h"
#include "tools/commands.h"
#include "tools/exit_codes.h"
#include "tools/input_profile.h"

namespace nativeprof::tools {
namespace {

constexpr char kConvertUsage[] = R"(usage: nativeprof convert IN [OUT] [-o FILE]... [options]

Reads folded stacks (IN, e.g. nativeprof.folded) and writes them in other formats.

  OUT, -o, --output FILE  output file (several allowed); the format comes from --format or the
                          extension: .svg, .pb.gz/.pprof/.pb, .speedscope.json, else folded
      --format FMT        folded | svg | pprof | speedscope (applies to the next output, or,
                          given last, to every output without its own)
      --title TEXT        flame graph / speedscope title
      --width PIXELS      flame graph width (default 1200)
      --flamechart        time-ordered flame chart (needs a timeline; folded files have none)
  -h, --help              this text

exit status: 0 ok, 2 bad arguments, 4 an output cannot be written, 5 unreadable or malformed input
)";

int Usage(const std::string& problem, const std::string& fix) {
  return PrintCliError(CliStep::kParseOptions, absl::InvalidArgumentError(problem), {}, fix);
}

}  // namespace

int RunConvertCommand(int argc, char** argv) {
  enum { kFormat = 1000, kTitle, kFlamechart, kWidth };
  static const option kLong[] = {
      {"output", required_argument, nullptr, 'o'},
      {"format", required_argument, nullptr, kFormat},
      {"title", required_argument, nullptr, kTitle},
      {"width", required_argument, nullptr, kWidth},
      {"flamechart", no_argument, nullptr, kFlamechart},
      {"help", no_argument, nullptr, 'h'},
      {nullptr, 0, nullptr, 0},
  };
  std::vector<std::string> paths;
  std::vector<std::string> formats;  // parallel to paths; "" = from the extension
  std::string pending_format;
  output::WriteOptions write;
  optind = 0;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, "o:h", kLong, nullptr)) != -1) {
    switch (c) {
      case 'o':
        paths.push_back(optarg);
        formats.push_back(pending_format);
        pending_format.clear();
        break;
      case kFormat: {
        absl::StatusOr<output::OutputFormat> f = output::ParseOutputFormat(optarg);
        if (!f.ok()) {
          return Usage(std::string(f.status().message()), "see 'nativeprof convert --help'");
        }
        pending_format = optarg;
        break;
      }
      case kTitle:
        write.title = optarg;
        break;
      case kWidth: {
        char* end = nullptr;
        const long w = std::strtol(optarg, &end, 10);
        if (end == optarg || *end != '\0' || w < 100 || w > 100000) {
          return Usage(absl::StrCat("--width '", optarg, "' is not a number of pixels"),
                       "use 100 to 100000");
        }
        write.svg_width = static_cast<int>(w);
        break;
      }
      case kFlamechart:
        write.flamechart = true;
        break;
      case 'h':
        std::fputs(kConvertUsage, stdout);
        return kExitOk;
      default:
        return Usage(absl::StrCat("unknown or incomplete option '", argv[optind - 1], "'"),
                     "see 'nativeprof convert --help'");
    }
  }
  const int positional = argc - optind;
  if (positional < 1) {
    return Usage("convert needs an input file", "usage: nativeprof convert IN OUT");
  }
  if (positional > 2) {
    return Usage(absl::StrCat("unexpected argument '", argv[optind + 2], "'"),
                 "usage: nativeprof convert IN [OUT] [-o FILE]...");
  }
  const std::string in = argv[optind];
  if (positional == 2) {
    // The positional OUT counts as the first output.
    paths.insert(paths.begin(), argv[optind + 1]);
    formats.insert(formats.begin(), std::string());
  }
  if (paths.empty()) return Usage("convert needs an output file", "give OUT or -o FILE");
  if (!pending_format.empty()) {
    for (std::string& f : formats) {
      if (f.empty()) f = pending_format;
    }
  }

  if (absl::Status st = CheckOutputsSpareInputs(paths, {in}); !st.ok()) {
    return Usage(std::string(st.message()), "choose another output path");
  }
  std::vector<output::OutputFormat> resolved;
  for (size_t i = 0; i < paths.size(); ++i) {
    resolved.push_back(formats[i].empty() ? output::FormatFromPath(paths[i])
                                          : *output::ParseOutputFormat(formats[i]));
    if (write.flamechart && resolved.back() == output::OutputFormat::kSvg) {
      return Usage(absl::StrCat("--flamechart needs samples in time order and ", in,
                                " is a folded file, which keeps none"),
                   "record with -o FILE.svg --flamechart, or drop --flamechart");
    }
    absl::Status writable = CheckOutputWritable(paths[i]);
    if (!writable.ok()) {
      return PrintCliError(CliStep::kWriteOutput, writable, absl::StrCat("cannot write ", paths[i]),
                           "choose another output path");
    }
  }

  std::optional<symbolize::Profile> profile =
      ReadInputProfile(in, "give a folded file ('comm;frame;...;frame COUNT' per line)");
  if (!profile.has_value()) return kExitBadInput;
  std::string view;  // an off-CPU or wall view converts as the time profile it is
  const nlohmann::json meta = ReadRecordMetadata(in, &view);
  if (absl::Status st = MarkRecordedView(in, view, &*profile); !st.ok()) {
    return PrintCliError(CliStep::kReadInput, st);
  }
  // An allocation view's pprof, as record's heap profile: flat cost on the program's calls, not
  // on malloc or operator new (which the folded file's full stacks end in).
  std::optional<symbolize::Profile> at_sites;
  if (FindAllocView(view) != nullptr) {
    const output::FrameModuleMap modules = output::ParseFrameModules(meta);
    at_sites = output::AllocSiteStacks(*profile, &modules);
  }
  for (size_t i = 0; i < paths.size(); ++i) {
    const bool pprof = resolved[i] == output::OutputFormat::kPprof;
    absl::Status st = output::WriteProfile(pprof && at_sites.has_value() ? *at_sites : *profile,
                                           paths[i], resolved[i], write);
    if (!st.ok()) {
      // kInvalidArgument is an option the profile cannot honour, not an unwritable file.
      if (absl::IsInvalidArgument(st)) {
        return PrintCliError(CliStep::kParseOptions, st, {}, "see 'nativeprof convert --help'");
      }
      return PrintCliError(CliStep::kWriteOutput, st, {}, "choose another output path");
    }
  }
  return kExitOk;
}

}  // namespace nativeprof::tools

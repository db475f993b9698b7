// `record` then `report --by module` on a real program: OUT.json carries the frame_modules table
// for exactly the names of the folded file, and the report puts the executable's code and the
// shared library it calls into in separate rows with plausible shares.
#include <string>

#include "absl/strings/str_split.h"
#include "nlohmann/json.hpp"
#include "tests/testing/folded_testing.h"
#include "tests/testing/test_support.h"
#include "tools/exit_codes.h"

namespace nativeprof::testing {
namespace {

using ::testing::HasSubstr;

// The total share column of `module`'s row in the "by total share" table of text `report`
// output; -1 when it has no row.
double TotalPercent(const std::string& report, const std::string& module) {
  const size_t table = report.find("modules by total share");
  if (table == std::string::npos) return -1;
  for (absl::string_view line : absl::StrSplit(report.substr(table), '\n')) {
    std::vector<absl::string_view> cols = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (cols.size() >= 5 && cols[4] == module) return std::stod(std::string(cols[0]));
  }
  return -1;
}

TEST(ReportRecordTest, ByModuleSplitsTheExecutableFromItsSharedLibrary) {
  NP_SKIP_IF_NO_PERF();
  const std::string dir = MakeTempDir();
  const std::string folded = dir + "/out.folded";
  CommandResult rec = RunCommand(
      {NativeprofBinary(), "record", "-o", folded, "--", TargetPath("nofp_workload"), "1.0", "1"});
  ASSERT_EQ(rec.exit_code, 0) << rec.err;

  // frame_modules names only frames of the folded file, and the library is among its modules.
  const nlohmann::json meta =
      nlohmann::json::parse(ReadFileOrEmpty(folded + ".json"), nullptr, false);
  ASSERT_TRUE(meta.is_object());
  ASSERT_TRUE(meta.contains("frame_modules")) << meta.dump();
  const nlohmann::json& fm = meta["frame_modules"];
  EXPECT_THAT(fm["modules"].dump(), HasSubstr("\"libnofp_shared.so\""));
  EXPECT_THAT(fm["modules"].dump(), HasSubstr("\"nofp_workload\""));
  const std::string text = ReadFileOrEmpty(folded);
  FoldedProfile profile = FoldedProfile::Parse(text);
  ASSERT_TRUE(profile.errors().empty());
  ASSERT_GT(profile.total(), 100u);
  for (auto it = fm["frames"].begin(); it != fm["frames"].end(); ++it) {
    EXPECT_GT(profile.Total(it.key()), 0u) << it.key() << " is not a frame of the folded file";
  }
  // nofp_shared_call is on about a quarter of the stacks; nofp_shared_mix, its leaf, is on a
  // few tenths of a percent: a loaded machine can leave it unsampled.
  ASSERT_TRUE(fm["frames"].contains("nofp_shared_call")) << fm.dump();
  EXPECT_EQ(fm["modules"][fm["frames"]["nofp_shared_call"].get<size_t>()], "libnofp_shared.so");

  CommandResult r = RunCommand({NativeprofBinary(), "report", folded, "--by", "module"});
  ASSERT_EQ(r.exit_code, tools::kExitOk) << r.err;
  // Every sample starts in the executable (main / WorkLoop); ViaShared -> nofp_shared_call runs
  // a 64-step loop per round, a few percent of the time at least.
  const double exe = TotalPercent(r.out, "nofp_workload");
  const double lib = TotalPercent(r.out, "libnofp_shared.so");
  EXPECT_GT(exe, 80.0) << r.out;
  EXPECT_GT(lib, 0.5) << r.out;
  EXPECT_LT(lib, 60.0) << r.out;
}

}  // namespace
}  // namespace nativeprof::testing

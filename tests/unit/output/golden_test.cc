// Golden tests: every writer on the small fixed folded input in tests/testdata/output/ must
// produce exactly the checked-in bytes. After an intended format change, regenerate with
// NATIVEPROF_UPDATE_GOLDEN=1 ./output_unit_test --gtest_filter='Golden*' and review the diff.
#include <cstdlib>
#include <string>

#include "base/file_util.h"
#include "output/folded_reader.h"
#include "output/pprof_writer.h"
#include "output/profile_writer.h"
#include "tests/testing/test_support.h"

namespace nativeprof::output {
namespace {

using nativeprof::testing::ReadFileOrEmpty;
using nativeprof::testing::SourcePath;

void CheckGolden(const std::string& actual, const std::string& golden_name) {
  const std::string path = SourcePath("tests/testdata/output/" + golden_name);
  if (std::getenv("NATIVEPROF_UPDATE_GOLDEN") != nullptr) {
    NP_ASSERT_OK(WriteFileAtomically(path, actual));
    return;
  }
  const std::string expected = ReadFileOrEmpty(path);
  ASSERT_FALSE(expected.empty()) << "missing golden file " << path;
  EXPECT_EQ(actual.size(), expected.size()) << golden_name;
  EXPECT_TRUE(actual == expected) << golden_name << " differs from the golden file; if the "
                                  << "change is intended, regenerate (see golden_test.cc)";
}

symbolize::Profile SmallProfile() {
  absl::StatusOr<symbolize::Profile> p =
      ReadFoldedFile(SourcePath("tests/testdata/output/small.folded"));
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? *p : symbolize::Profile();
}

TEST(GoldenTest, Folded) {
  NP_ASSERT_OK_AND_ASSIGN(std::string out,
                          RenderProfile(SmallProfile(), OutputFormat::kFolded, {}));
  CheckGolden(out, "small.folded.golden");
}

TEST(GoldenTest, Svg) {
  WriteOptions options;
  options.title = "small";
  NP_ASSERT_OK_AND_ASSIGN(std::string out, RenderProfile(SmallProfile(), OutputFormat::kSvg,
                                                         options));
  CheckGolden(out, "small.svg");
}

TEST(GoldenTest, Pprof) {
  // The uncompressed message: gzip bytes may differ between zlib versions.
  CheckGolden(EncodePprof(SmallProfile()), "small.pprof.pb");
}

TEST(GoldenTest, Speedscope) {
  WriteOptions options;
  options.title = "small";
  NP_ASSERT_OK_AND_ASSIGN(std::string out,
                          RenderProfile(SmallProfile(), OutputFormat::kSpeedscope, options));
  CheckGolden(out, "small.speedscope.json");
}

}  // namespace
}  // namespace nativeprof::output

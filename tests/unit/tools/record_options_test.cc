#include "tools/record_options.h"

#include <string>

#include "gtest/gtest.h"

namespace nativeprof::tools {
namespace {

// The off-CPU and wall files beside an output, and back: record writes them with ViewPath, and
// report/diff/convert find the recording's metadata with ViewOfPath.
TEST(RecordOptionsTest, ViewPathsAndBack) {
  for (const std::string path :
       {"out.folded", "dir.v2/prof.svg", "p.pb.gz", "t.speedscope.json", "no_extension"}) {
    for (const char* view : {kOffCpuView, kWallView}) {
      SCOPED_TRACE(path + " " + view);
      const std::string beside = RecordOptions::ViewPath(path, view);
      EXPECT_NE(beside, path);
      std::string main;
      EXPECT_EQ(RecordOptions::ViewOfPath(beside, &main), view);
      EXPECT_EQ(main, path);
    }
  }
  EXPECT_EQ(RecordOptions::ViewPath("out.folded", kOffCpuView), "out.offcpu.folded");
  EXPECT_EQ(RecordOptions::ViewPath("p.pb.gz", kWallView), "p.wall.pb.gz");
  std::string main;
  EXPECT_EQ(RecordOptions::ViewOfPath("out.folded", &main), "");
}

}  // namespace
}  // namespace nativeprof::tools

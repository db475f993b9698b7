#include "output/json_util.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace nativeprof::output {
namespace {

TEST(RenderJsonDocumentTest, ReplacesInvalidUtf8InsteadOfThrowing) {
  nlohmann::json j;
  j["command"] = {"/tmp/a\xff" "b", "größe"};
  j["samples"] = 3;
  const std::string text = RenderJsonDocument(j);
  const nlohmann::json back = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(back.is_discarded()) << text;
  EXPECT_EQ(back["command"][0], "/tmp/a\xef\xbf\xbd" "b");  // U+FFFD for the bad byte
  EXPECT_EQ(back["command"][1], "größe");
  EXPECT_EQ(back["samples"], 3);
  EXPECT_THAT(text, ::testing::HasSubstr("\n  \"samples\": 3"));  // indented for people
}

}  // namespace
}  // namespace nativeprof::output

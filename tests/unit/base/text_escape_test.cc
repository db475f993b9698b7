#include "base/text_escape.h"

#include <string>

#include "gtest/gtest.h"

namespace nativeprof {
namespace {

TEST(EscapeForMessageTest, KeepsPrintableAsciiAndEscapesControls) {
  EXPECT_EQ(EscapeForMessage("main;f 12"), "main;f 12");
  EXPECT_EQ(EscapeForMessage("a\nb\tc\rd"), "a\\nb\\tc\\rd");
  EXPECT_EQ(EscapeForMessage("\x1b[31mred"), "\\x1b[31mred");
  EXPECT_EQ(EscapeForMessage(std::string("\0\x7f", 2)), "\\x00\\x7f");
  // A backslash is escaped too, so "\x41" in the input cannot pass for an escaped byte.
  EXPECT_EQ(EscapeForMessage("\\x41"), "\\\\x41");
}

TEST(EscapeForMessageTest, KeepsWellFormedUtf8AndEscapesTheRest) {
  EXPECT_EQ(EscapeForMessage("größe €5 \xf0\x9f\x94\xa5"), "größe €5 \xf0\x9f\x94\xa5");
  // Overlong "/", a surrogate, beyond U+10FFFF, a lone continuation byte, a truncated sequence.
  EXPECT_EQ(EscapeForMessage("\xc0\xaf"), "\\xc0\\xaf");
  EXPECT_EQ(EscapeForMessage("\xed\xa0\x80"), "\\xed\\xa0\\x80");
  EXPECT_EQ(EscapeForMessage("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");
  EXPECT_EQ(EscapeForMessage("a\x80z"), "a\\x80z");
  EXPECT_EQ(EscapeForMessage("\xe2\x82"), "\\xe2\\x82");
  // ELF magic as a binary file starts.
  EXPECT_EQ(EscapeForMessage("\x7f" "ELF\x02\x01\x01"), "\\x7fELF\\x02\\x01\\x01");
}

TEST(EscapeForMessageTest, EscapesC1ControlsLineSeparatorsAndBidiOverrides) {
  EXPECT_EQ(EscapeForMessage("\xc2\x9b" "2J"), "\\xc2\\x9b2J");         // U+009B CSI
  EXPECT_EQ(EscapeForMessage("a\xe2\x80\xa8" "b"), "a\\xe2\\x80\\xa8b");  // U+2028
  EXPECT_EQ(EscapeForMessage("\xe2\x80\xae" "cba"), "\\xe2\\x80\\xaecba");  // U+202E RLO
  EXPECT_EQ(EscapeForMessage("\xe2\x81\xa6"), "\\xe2\\x81\\xa6");          // U+2066 LRI
}

TEST(EscapeForMessageTest, CapsTheQuotedLengthWithoutCuttingACharacter) {
  const std::string long_line(100000, 'x');
  const std::string escaped = EscapeForMessage(long_line);
  EXPECT_EQ(escaped, std::string(kMaxQuotedBytes, 'x') + "... (" +
                         std::to_string(100000 - kMaxQuotedBytes) + " more bytes)");
  EXPECT_EQ(EscapeForMessage("abcdef", 3), "abc... (3 more bytes)");
  // "€" is 3 bytes: with room for 2 it is left out whole.
  EXPECT_EQ(EscapeForMessage("a€", 3), "a... (3 more bytes)");
  EXPECT_EQ(EscapeForMessage("a€", 4), "a€");
  EXPECT_EQ(EscapeForMessage(""), "");
}

}  // namespace
}  // namespace nativeprof

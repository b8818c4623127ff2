// Input handling shared by the CLI and the GUI (core/run.h).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/base/error.h"
#include "core/runtime/model_input.h"

namespace poslens {
namespace {

TEST(Run, ParsesCommaSeparatedTokenIds) {
  EXPECT_EQ(parse_token_ids("1,403, 407 ,261", 512), (std::vector<int64_t>{1, 403, 407, 261}));
  EXPECT_EQ(parse_token_ids("0", 1), (std::vector<int64_t>{0}));
}

TEST(Run, ParsesTokenIdsSeparatedBySpacesAndLinesAsAFileHoldsThem) {
  EXPECT_EQ(parse_token_ids("1 403\n407\n\n261\n", 512), (std::vector<int64_t>{1, 403, 407, 261}));
  EXPECT_EQ(parse_token_ids("1, 2 3,\t4\r\n", 512), (std::vector<int64_t>{1, 2, 3, 4}));
}

TEST(Run, RejectsBadTokenIdsWithTheOffendingEntry) {
  auto message = [](const std::string& text) {
    try {
      parse_token_ids(text, 512);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_THAT(message(""), ::testing::HasSubstr("empty"));
  EXPECT_THAT(message("1,,2"), ::testing::HasSubstr("an empty item between commas"));
  EXPECT_THAT(message("1, ,2"), ::testing::HasSubstr("an empty item between commas"));
  EXPECT_THAT(message(" \n "), ::testing::HasSubstr("empty"));
  EXPECT_THAT(message("1,2x"), ::testing::HasSubstr("\"2x\" is not an integer"));
  EXPECT_THAT(message("512"), ::testing::HasSubstr("outside the vocabulary [0, 512)"));
  EXPECT_THAT(message("-1"), ::testing::HasSubstr("outside the vocabulary"));
  EXPECT_THAT(message("99999999999999999999"), ::testing::HasSubstr("not an integer"));
}

TEST(Run, DisplayLabelsAreSingleLineWithVisibleSpaces) {
  EXPECT_EQ(display_label("\n<s>\n"), "<s>");
  EXPECT_EQ(display_label(" upon"), "␣upon");
  EXPECT_EQ(display_label("\n"), "↵");
  EXPECT_EQ(display_label("a\nb"), "a↵b");
  EXPECT_EQ(display_label("  "), "␣␣");
  EXPECT_EQ(display_label("\t\r"), "⇥␍");
  EXPECT_EQ(display_label(std::string("\x01\x7f", 2)), "\\x01\\x7F");
  EXPECT_EQ(display_label("\xE2\x96"), "\\xE2\\x96");  // half of "▁": a byte-level token
  EXPECT_EQ(display_label("caf\xC3\xA9 😀"), "café␣😀");
  EXPECT_EQ(display_label(""), "");
}

}  // namespace
}  // namespace poslens

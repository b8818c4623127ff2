// poslens-cli tokenize (docs/tokenizers.md): the real binary on the tokenizer fixtures; expected
// ids from HF's Rust tokenizers (npm `tokenizers`) and python3-sentencepiece, as committed in
// tests/data/tokenizers.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>

#include "app/cli_runner.h"
#include "fixtures.h"

namespace poslens {
namespace {

using ::testing::HasSubstr;
using test::cli;
using test::q;

std::string tokenizer(const std::string& rel) {
  return q(test::tokenizers_dir() / rel);
}

/// The last line of `output` that starts with `{` (the JSON object), parsed.
nlohmann::json json_line(const std::string& output) {
  const auto start = output.rfind("\n{");
  return nlohmann::json::parse(output.substr(start == std::string::npos ? 0 : start + 1));
}

TEST(CliTokenize, IdsForEveryFormatAsTheReferenceGivesThem) {
  REQUIRE_CLI();
  POSLENS_REQUIRE_TOKENIZERS();
  struct Case {
    std::string path, ids;
  };
  for (const Case& c : std::vector<Case>{{tokenizer("gpt2/tokenizer.json"), "15496,995,0"},
                                         {tokenizer("gpt2/vocab.json"), "15496,995,0"},
                                         {tokenizer("gpt2"), "15496,995,0"},
                                         {tokenizer("mistral"), "1,22557,1526,28808"},
                                         {tokenizer("llama2/tokenizer.model"), "1,15043,3186,29991"}}) {
    const auto r = cli("tokenize " + c.path + " --text 'Hello world!'");
    ASSERT_EQ(r.code, 0) << c.path << ": " << r.output;
    EXPECT_THAT(r.output, HasSubstr(c.ids + "\n")) << c.path;
  }
  const auto r = cli("tokenize " + tokenizer("llama2") + " --text 'Hello world!' --no-special");
  EXPECT_THAT(r.output, HasSubstr("15043,3186,29991\n"));
}

TEST(CliTokenize, JsonHasIdsPiecesAndByteOffsets) {
  REQUIRE_CLI();
  POSLENS_REQUIRE_TOKENIZERS();
  const auto r = cli("tokenize " + tokenizer("mistral") + " --text 'Hello world!' --json");
  ASSERT_EQ(r.code, 0) << r.output;
  const auto j = json_line(r.output);
  EXPECT_EQ(j["ids"], nlohmann::json::parse("[1, 22557, 1526, 28808]"));
  EXPECT_EQ(j["tokens"], nlohmann::json::parse(R"(["<s>", "▁Hello", "▁world", "!"])"));
  EXPECT_EQ(j["offsets"], nlohmann::json::parse("[[0, 0], [0, 5], [5, 11], [11, 12]]"));
  // Byte offsets: "é" is two bytes.
  const auto e = json_line(cli("tokenize " + tokenizer("gpt2") + " --text 'café' --json").output);
  EXPECT_EQ(e["offsets"].back(), nlohmann::json::parse("[3, 5]"));
}

TEST(CliTokenize, DecodeAndErrors) {
  REQUIRE_CLI();
  POSLENS_REQUIRE_TOKENIZERS();
  auto r = cli("tokenize " + tokenizer("llama2") + " --decode 1,15043,3186,29991");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("Hello world!\n"));
  r = cli("tokenize " + tokenizer("gpt2") + " --decode 50257");
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.output, HasSubstr("outside the vocabulary"));
  r = cli("tokenize " + tokenizer("gpt2"));
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.output, HasSubstr("--text or --decode"));
  const auto dir = test::scratch_dir();
  r = cli("tokenize " + q(dir) + " --text x");
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.output, HasSubstr("no tokenizer found"));
}

}  // namespace
}  // namespace poslens

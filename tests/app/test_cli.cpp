// poslens-cli as a user runs it: the real binary, its output, exit codes and files.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <H5Cpp.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "app/cli_runner.h"
#include "fixtures.h"

namespace poslens {
namespace {

using ::testing::HasSubstr;
using test::cli;
using test::q;

using test::stories;

TEST(Cli, InfoDescribesStories260K) {
  REQUIRE_CLI();
  POSLENS_REQUIRE_STORIES();
  const auto r = cli("info " + stories());
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("format:            llama2.c"));
  EXPECT_THAT(r.output, HasSubstr("RoPE (interleaved pairs, rope_theta=10000)"));
  EXPECT_THAT(r.output, HasSubstr("n_kv_heads:        4"));
  EXPECT_THAT(r.output, HasSubstr("d_head:            8"));
  EXPECT_THAT(r.output, HasSubstr("vocab:             512"));
}

TEST(Cli, RunWritesTheDocumentedHdf5) {
  REQUIRE_CLI();
  POSLENS_REQUIRE_STORIES();
  const auto out = test::scratch_dir() / "run.h5";
  const auto r = cli("run " + stories() + " --text 'Once upon a time' --out " + q(out));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("wrote 6 captures"));

  H5::H5File file(out.string(), H5F_ACC_RDONLY);
  const auto pattern = file.openDataSet("/captures/blocks.4.attn.hook_pattern");
  hsize_t dims[4];
  ASSERT_EQ(pattern.getSpace().getSimpleExtentDims(dims), 4);
  const hsize_t T = dims[2];
  EXPECT_EQ(dims[0], 1u);
  EXPECT_EQ(dims[1], 8u);
  EXPECT_EQ(dims[3], T);
  const auto ids = file.openDataSet("/tokens/ids");
  hsize_t id_dims[2];
  ids.getSpace().getSimpleExtentDims(id_dims);
  EXPECT_EQ(id_dims[1], T);
  std::vector<int64_t> id_values(T);
  ids.read(id_values.data(), H5::PredType::NATIVE_INT64);
  EXPECT_EQ(id_values[0], 1) << "BOS first";
  EXPECT_TRUE(file.nameExists("/captures/logits"));
  EXPECT_TRUE(file.attrExists("model_config"));
}

TEST(Cli, RunWithTokenIdsUsesThemExactly) {
  REQUIRE_CLI();
  POSLENS_REQUIRE_STORIES();
  const auto out = test::scratch_dir() / "ids.h5";
  const auto r = cli("run " + stories() + " --tokens 5,6,7 --capture 'blocks.0.*' --out " + q(out));
  ASSERT_EQ(r.code, 0) << r.output;
  H5::H5File file(out.string(), H5F_ACC_RDONLY);
  std::vector<int64_t> ids(3);
  file.openDataSet("/tokens/ids").read(ids.data(), H5::PredType::NATIVE_INT64);
  EXPECT_EQ(ids, (std::vector<int64_t>{5, 6, 7}));
  EXPECT_TRUE(file.nameExists("/captures/blocks.0.attn.hook_rot_q"));
  EXPECT_FALSE(file.nameExists("/captures/blocks.1.attn.hook_pattern"));
}

/// The token ids a run wrote (/tokens/ids).
std::vector<int64_t> ids_in(const std::filesystem::path& file) {
  H5::H5File h5(file.string(), H5F_ACC_RDONLY);
  const auto ids = h5.openDataSet("/tokens/ids");
  hsize_t dims[2] = {0, 0};
  ids.getSpace().getSimpleExtentDims(dims);
  std::vector<int64_t> values(dims[1]);
  ids.read(values.data(), H5::PredType::NATIVE_INT64);
  return values;
}

TEST(Cli, InputsFromFilesAndStandardInputAreTheArgumentsInputs) {
  REQUIRE_CLI();
  POSLENS_REQUIRE_STORIES();
  const auto dir = test::scratch_dir();
  std::ofstream(dir / "ids.txt") << "5, 6\n7\n8 9\n";
  std::ofstream(dir / "story.txt") << "Once upon a time\n";
  const std::string run = "run " + stories() + " --capture logits --out ";
  auto r = cli(run + q(dir / "a.h5") + " --tokens-file " + q(dir / "ids.txt"));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(ids_in(dir / "a.h5"), (std::vector<int64_t>{5, 6, 7, 8, 9}));
  r = cli(run + q(dir / "b.h5") + " --tokens-file - < " + q(dir / "ids.txt"));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(ids_in(dir / "b.h5"), (std::vector<int64_t>{5, 6, 7, 8, 9}));
  const auto npy = std::filesystem::path(POSLENS_SOURCE_DIR) / "tests" / "data" / "npy" / "ids_int32_row.npy";
  r = cli(run + q(dir / "c.h5") + " --tokens-file " + q(npy));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(ids_in(dir / "c.h5"), (std::vector<int64_t>{1, 403, 407, 261}));
  r = cli(run + q(dir / "text.h5") + " --text 'Once upon a time\n'");
  ASSERT_EQ(r.code, 0) << r.output;
  r = cli(run + q(dir / "file.h5") + " --text-file " + q(dir / "story.txt"));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(ids_in(dir / "file.h5"), ids_in(dir / "text.h5"));
  r = cli(run + q(dir / "stdin.h5") + " --text-file - < " + q(dir / "story.txt"));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(ids_in(dir / "stdin.h5"), ids_in(dir / "text.h5"));

  // Two inputs are a usage error; a bad file is one message naming it; no output either way.
  r = cli(run + q(dir / "x.h5") + " --text hi --tokens-file " + q(dir / "ids.txt"));
  EXPECT_EQ(r.code, 2) << r.output;
  r = cli(run + q(dir / "x.h5") + " --tokens-file " + q(dir / "missing.txt"));
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("missing.txt"));
  std::ofstream(dir / "bad.txt") << "5 6\n700\n";
  r = cli(run + q(dir / "x.h5") + " --tokens-file " + q(dir / "bad.txt"));
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("bad.txt: token ids: 700 is outside the vocabulary [0, 512)"));
  const auto floats = std::filesystem::path(POSLENS_SOURCE_DIR) / "tests" / "data" / "npy" / "floats.npy";
  r = cli(run + q(dir / "x.h5") + " --tokens-file " + q(floats));
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("must be integers"));
  EXPECT_FALSE(std::filesystem::exists(dir / "x.h5"));
}

TEST(Cli, BadInputGivesOneMessageAndNoFile) {
  REQUIRE_CLI();
  POSLENS_REQUIRE_STORIES();
  const auto dir = test::scratch_dir();
  const auto out = dir / "out.h5";
  struct Case {
    std::string args;
    int code;
    std::string message;
  };
  const std::vector<Case> cases{
      {"run /nonexistent.bin --text hi --out " + q(out), 1, "no such file"},
      {"run " + stories() + " --text '' --out " + q(out), 1, "text is empty"},
      {"run " + stories() + " --tokens 1,x --out " + q(out), 1, "\"x\" is not an integer"},
      {"run " + stories() + " --tokens 1,512 --out " + q(out), 1, "outside the vocabulary"},
      {"run " + stories() + " --text hi --capture blocks.*.hook_nope --out " + q(out), 1,
       "matches no hook point"},
      {"run " + stories() + " --text hi --device tpu --out " + q(out), 1, "unknown device"},
      {"run " + stories() + " --text hi --out " + q(dir / "missing" / "x.h5"), 1, "missing"},
      {"run " + stories() + " --text hi", 2, "--out"},
      {"run " + stories() + " --out " + q(out), 2, "--text-file or --tokens-file is required"},
      {"run " + stories() + " --text hi --tokens 1 --out " + q(out), 2, "--text excludes --tokens"},
      {"run " + stories() + " --tokens-file - --text-file x.txt --out " + q(out), 2, "excludes"},
      {"frobnicate", 2, ""},
  };
  for (const auto& c : cases) {
    const auto r = cli(c.args);
    EXPECT_EQ(r.code, c.code) << c.args << "\n" << r.output;
    EXPECT_THAT(r.output, HasSubstr(c.message)) << c.args;
    EXPECT_FALSE(std::filesystem::exists(out)) << c.args;
  }
  EXPECT_TRUE(std::filesystem::is_empty(dir)) << "no temporary files left behind";
}

TEST(Cli, ConvertedFolderRunsWithTokenIdsAndSaysWhyTextFailsUntilGivenATokenizer) {
  REQUIRE_CLI();
  POSLENS_REQUIRE_STORIES();
  const auto dir = test::scratch_dir();
  auto r = cli("convert " + stories() + " --out " + q(dir / "hf"));
  ASSERT_EQ(r.code, 0) << r.output;
  r = cli("info " + q(dir / "hf"));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("LlamaForCausalLM"));
  EXPECT_THAT(r.output, HasSubstr("half_split pairs"));
  r = cli("run " + q(dir / "hf") + " --text 'Once upon' --out " + q(dir / "x.h5"));
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.output, HasSubstr("no tokenizer in"));
  EXPECT_THAT(r.output, HasSubstr("--tokenizer PATH"));
  r = cli("run " + q(dir / "hf") + " --tokens 1,403,407 --out " + q(dir / "x.h5"));
  EXPECT_EQ(r.code, 0) << r.output;
  r = cli("run " + q(dir / "hf") + " --tokenizer " + q(test::stories_dir() / "tok512.bin") +
          " --text 'Once upon' --out " + q(dir / "y.h5"));
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("tokens (3)"));
}

TEST(Cli, GenerateTellsAStory) {
  REQUIRE_CLI();
  POSLENS_REQUIRE_STORIES();
  const auto r = cli("generate " + stories() + " --max-new-tokens 20");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("Once upon a time, there was a little girl named Lily"));
}

}  // namespace
}  // namespace poslens

// Every input the fuzzers (fuzz/, scripts/fuzz.sh) found a reader mishandling, kept in
// tests/data/fuzz/<target>/: each must now be refused with one poslens::Error — not a JSON
// library exception, an overflow, a 22 GB allocation or a minute of work.
#include <torch/torch.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/formats/torch_zip.h"
#include "core/models/architectures.h"
#include "core/models/poslens_model.h"
#include "core/tokenizers/hf_tokenizer.h"
#include "fixtures.h"

namespace poslens {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> inputs(const std::string& target) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(fs::path(POSLENS_SOURCE_DIR) / "tests/data/fuzz" / target))
    out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(FuzzRegressions, ConfigJsonWrongTypesAndOverflowingSizesAreErrors) {
  const auto files = inputs("config_json");
  ASSERT_GE(files.size(), 11u);
  for (const auto& file : files) {
    SCOPED_TRACE(file.filename().string());
    // read_hf_config wants a config.json path: a folder per input.
    const auto dir = test::scratch_dir() / file.stem();
    fs::create_directories(dir);
    fs::copy_file(file, dir / "config.json");
    EXPECT_TRUE(test::Contains(test::error_of([&] { read_hf_config((dir / "config.json").string()); }),
                               "config.json"));
  }
}

TEST(FuzzRegressions, PosLensConfigWithANonStringModelTypeIsAnError) {
  for (const auto& file : inputs("poslens_config")) {
    SCOPED_TRACE(file.filename().string());
    EXPECT_TRUE(test::Contains(test::error_of([&] { poslens_config_from_text(read_all(file), "fuzz"); }),
                               "not a PosLens config"));
  }
}

TEST(FuzzRegressions, MergesTxtThatIsNotUtf8IsAnError) {
  // The fuzz input is vocab.json, a NUL, then merges.txt (fuzz/targets/fuzz_vocab_merges.cpp).
  const std::string bytes = read_all(inputs("vocab_merges").at(0));
  const auto nul = bytes.find('\0');
  ASSERT_NE(nul, std::string::npos);
  const auto dir = test::scratch_dir();
  std::ofstream(dir / "vocab.json", std::ios::binary) << bytes.substr(0, nul);
  std::ofstream(dir / "merges.txt", std::ios::binary) << bytes.substr(nul + 1);
  EXPECT_TRUE(test::Contains(test::error_of([&] {
                HfTokenizer::from_gpt2_files((dir / "vocab.json").string(), (dir / "merges.txt").string());
              }),
                             "merges.txt"));
}

TEST(FuzzRegressions, PicklesWhoseSharedContainersExplodeAreRefusedFast) {
  for (const auto& file : inputs("torch_zip")) {
    SCOPED_TRACE(file.filename().string());
    EXPECT_TRUE(test::Contains(test::error_of([&] { TorchZipFile zip(file.string()); }), "expand to more than"));
  }
}

}  // namespace
}  // namespace poslens

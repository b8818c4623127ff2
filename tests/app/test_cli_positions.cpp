// poslens-cli position-map and heads (docs/position-maps.md): the real binary on the demo
// checkpoints and stories260K, read back with the HDF5 library.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <H5Cpp.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "app/cli_runner.h"
#include "fixtures.h"

namespace poslens {
namespace {

using ::testing::HasSubstr;
using test::cli;
using test::cli_with_figure;
using test::kCliDrawsFigures;
using test::q;
using test::stories;

using test::demo;

std::vector<hsize_t> dims_of(const H5::H5File& file, const std::string& path) {
  const auto space = file.openDataSet(path).getSpace();
  std::vector<hsize_t> dims(static_cast<size_t>(space.getSimpleExtentNdims()));
  space.getSimpleExtentDims(dims.data());
  return dims;
}

TEST(CliPositions, CopeDemoWritesMapsPatternAndCounting) {
  REQUIRE_CLI();
  const auto dir = test::scratch_dir();
  const auto r = cli("position-map " + demo("flipflop-cope") + " --text w1i0r1 --out " + q(dir / "p.h5"));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("method cope"));
  EXPECT_THAT(r.output, HasSubstr("highest mean gate"));
  const H5::H5File file((dir / "p.h5").string(), H5F_ACC_RDONLY);
  EXPECT_EQ(dims_of(file, "/analysis/position_map"), (std::vector<hsize_t>{2, 4, 6, 6}));
  EXPECT_EQ(dims_of(file, "/analysis/pattern"), (std::vector<hsize_t>{2, 4, 6, 6}));
  EXPECT_EQ(dims_of(file, "/analysis/cope/mean_gate_per_token"), (std::vector<hsize_t>{2, 4, 5}));
  EXPECT_TRUE(file.openDataSet("/analysis/position_map").attrExists("methods"));
  EXPECT_TRUE(file.nameExists("/tokens/ids"));
}

TEST(CliPositions, FigureIsThePatternBesideThePositionMapAndABadHeadWritesNothing) {
  REQUIRE_CLI();
  const auto dir = test::scratch_dir();
  auto r = cli_with_figure("position-map " + demo("flipflop-cope") + " --text w1i0r1 --out " +
                               q(dir / "p.h5") + " --layer 1 --head 2",
                           dir / "p.png", dir / "p.h5");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(std::filesystem::exists(dir / "p.h5"));
  if (!kCliDrawsFigures) return;  // the refusal is checked; the rest is about the figure
  std::ifstream png(dir / "p.png", std::ios::binary);
  char magic[8] = {};
  png.read(magic, 8);
  EXPECT_EQ(std::string(magic + 1, 3), "PNG");
  r = cli("position-map " + demo("flipflop-cope") + " --text w1i0r1 --out " + q(dir / "bad.h5") +
          " --figure " + q(dir / "bad.png") + " --layer 2");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("the model has 2 layers of 4 heads, got layer 2"));
  EXPECT_FALSE(std::filesystem::exists(dir / "bad.h5"));
  EXPECT_FALSE(std::filesystem::exists(dir / "bad.png"));
}

TEST(CliPositions, AFigureOfAnUnknownKindIsAUsageErrorBeforeAnyWork) {
  REQUIRE_CLI();
  const auto dir = test::scratch_dir();
  const auto r = cli("position-map " + demo("flipflop-cope") + " --text w1i0r1 --out " + q(dir / "p.h5") +
                     " --figure " + q(dir / "p.bmp"));
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr(kCliDrawsFigures ? "a figure is .png, .pdf or .svg" : "built without Qt"));
  EXPECT_FALSE(std::filesystem::exists(dir / "p.h5"));
}

TEST(CliPositions, AbsoluteDemoWritesItsFourTermsAndHeadsWritesCsv) {
  REQUIRE_CLI();
  const auto dir = test::scratch_dir();
  auto r = cli("position-map " + demo("flipflop-absolute") + " --tokens 0,1,2,3 --out " + q(dir / "a.h5"));
  ASSERT_EQ(r.code, 0) << r.output;
  const H5::H5File file((dir / "a.h5").string(), H5F_ACC_RDONLY);
  for (const char* term : {"token_token", "token_position", "position_token", "position_position", "bias"})
    EXPECT_EQ(dims_of(file, std::string("/analysis/absolute_terms/") + term),
              (std::vector<hsize_t>{4, 4, 4}));
  r = cli("heads " + demo("flipflop-cope") + " --text w1i0r1 --out " + q(dir / "h.csv"));
  ASSERT_EQ(r.code, 0) << r.output;
  std::ifstream csv(dir / "h.csv");
  std::string header, line;
  std::getline(csv, header);
  EXPECT_EQ(header, "layer,head,entropy,mean_distance,sink,sink_2,sink_3,sink_4,previous_token,"
                    "duplicate_token,induction,position_share,learned_sink");
  int rows = 0;
  while (std::getline(csv, line)) ++rows;
  EXPECT_EQ(rows, 8);
  r = cli("heads " + demo("flipflop-cope") + " --out " + q(dir / "x.csv"));
  EXPECT_EQ(r.code, 2) << "--text or --tokens is required";
}

TEST(CliPositions, RotaryStoriesMapUsesTheProbe) {
  REQUIRE_CLI();
  POSLENS_REQUIRE_STORIES();
  const auto dir = test::scratch_dir();
  const auto r = cli("position-map " + stories() + " --text 'Once upon a time' --probe-samples 8 --out " +
                     q(dir / "s.h5"));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("method rotary"));
  const H5::H5File file((dir / "s.h5").string(), H5F_ACC_RDONLY);
  EXPECT_EQ(dims_of(file, "/analysis/position_map")[0], 5u);
  EXPECT_FALSE(file.nameExists("/analysis/cope"));
}

}  // namespace
}  // namespace poslens

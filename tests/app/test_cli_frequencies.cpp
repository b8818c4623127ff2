// poslens-cli probe, frequencies and compare (docs/frequencies.md): the real binary on
// stories260K and the demo checkpoints, read back with the HDF5 library.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <H5Cpp.h>

#include <cmath>
#include <fstream>
#include <sstream>

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

struct Dataset {
  std::vector<hsize_t> dims;
  std::vector<double> values;
};

Dataset read(const H5::H5File& file, const std::string& path) {
  const auto ds = file.openDataSet(path);
  const auto space = ds.getSpace();
  Dataset out;
  out.dims.resize(static_cast<size_t>(space.getSimpleExtentNdims()));
  space.getSimpleExtentDims(out.dims.data());
  out.values.resize(static_cast<size_t>(space.getSimpleExtentNpoints()));
  ds.read(out.values.data(), H5::PredType::NATIVE_DOUBLE);
  return out;
}

int64_t int_attribute(const H5::H5File& file, const std::string& group, const std::string& name) {
  int64_t v = 0;
  file.openGroup(group).openAttribute(name).read(H5::PredType::NATIVE_INT64, &v);
  return v;
}

TEST(CliFrequencies, ProbeWritesTheDocumentedDatasetsThatSumUp) {
  REQUIRE_CLI();
  POSLENS_REQUIRE_STORIES();
  const auto dir = test::scratch_dir();
  const auto r = cli_with_figure("probe " + stories() + " --length 32 --samples all --out " +
                                     q(dir / "probe.h5"),
                                 dir / "probe.png", dir / "probe.h5");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("509 samples (every non-special token)"));
  EXPECT_THAT(r.output, HasSubstr("activated band (pi/L, 2pi/L) with L=512: components 2"));

  const H5::H5File file((dir / "probe.h5").string(), H5F_ACC_RDONLY);
  const auto scores = read(file, "/analysis/probe/scores");
  const auto comps = read(file, "/analysis/probe/components");
  EXPECT_EQ(scores.dims, (std::vector<hsize_t>{5, 8, 32}));
  EXPECT_EQ(comps.dims, (std::vector<hsize_t>{5, 8, 4, 32}));
  EXPECT_EQ(read(file, "/analysis/probe/vaf").dims, (std::vector<hsize_t>{5, 4}));
  EXPECT_EQ(read(file, "/analysis/probe/vaf_per_head").dims, (std::vector<hsize_t>{5, 8, 4}));
  EXPECT_EQ(read(file, "/analysis/probe/scores_std").dims, scores.dims);
  EXPECT_EQ(read(file, "/analysis/probe/tokens").dims, (std::vector<hsize_t>{509}));
  const auto theta = read(file, "/analysis/probe/theta");
  ASSERT_EQ(theta.values.size(), 4u);
  EXPECT_NEAR(theta.values[1], std::pow(10000.0, -2.0 / 8.0), 1e-12);  // 10000^(-2c/d_head)
  EXPECT_FALSE(file.nameExists("/analysis/probe/remainder"));  // every dim rotates
  EXPECT_EQ(int_attribute(file, "/analysis/probe", "T"), 32);
  EXPECT_EQ(int_attribute(file, "/analysis/probe", "L"), 512);
  EXPECT_EQ(int_attribute(file, "/analysis/probe", "n_samples"), 509);
  // components summed over c give scores (float32 means of float32 terms).
  for (size_t lh = 0; lh < 5 * 8; ++lh)
    for (size_t k = 0; k < 32; ++k) {
      double sum = 0;
      for (size_t c = 0; c < 4; ++c) sum += comps.values[(lh * 4 + c) * 32 + k];
      ASSERT_NEAR(sum, scores.values[lh * 32 + k], 1e-4) << "layer*head " << lh << " key " << k;
    }
  EXPECT_TRUE(file.openDataSet("/analysis/probe/scores").attrExists("dims"));
  if (kCliDrawsFigures) {
    EXPECT_GT(std::filesystem::file_size(dir / "probe.png"), 10000u);
  }
}

TEST(CliFrequencies, RandomSamplesFollowTheSeedAndBadCountsAreRefused) {
  REQUIRE_CLI();
  POSLENS_REQUIRE_STORIES();
  const auto dir = test::scratch_dir();
  for (const char* name : {"a.h5", "b.h5"})
    ASSERT_EQ(cli("probe " + stories() + " --length 8 --samples 12 --seed 3 --out " + q(dir / name)).code, 0);
  const H5::H5File a((dir / "a.h5").string(), H5F_ACC_RDONLY), b((dir / "b.h5").string(), H5F_ACC_RDONLY);
  EXPECT_EQ(read(a, "/analysis/probe/tokens").values, read(b, "/analysis/probe/tokens").values);
  EXPECT_EQ(read(a, "/analysis/probe/tokens").values.size(), 12u);

  auto r = cli("probe " + stories() + " --length 8 --samples lots --out " + q(dir / "c.h5"));
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.output, HasSubstr("--samples must be a positive count or \"all\""));
  r = cli("probe " + stories() + " --samples 4 --out " + q(dir / "c.h5"));
  EXPECT_EQ(r.code, 2) << "--length is required";
  // A failing probe leaves an existing output alone.
  std::ofstream(dir / "keep.h5") << "old";
  r = cli("probe " + stories() + " --length 8 --bos 100000 --out " + q(dir / "keep.h5"));
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.output, HasSubstr("BOS id 100000 is outside the vocabulary"));
  std::stringstream kept;
  kept << std::ifstream(dir / "keep.h5").rdbuf();
  EXPECT_EQ(kept.str(), "old");
  EXPECT_FALSE(std::filesystem::exists(dir / "c.h5"));
}

TEST(CliFrequencies, ExtrapolationProbeUsesTheSameTokensAtTheLongerLength) {
  REQUIRE_CLI();
  const auto dir = test::scratch_dir();
  auto r = cli("probe " + demo("text-rope-series/step-001500") +
               " --length 16 --extrapolate 40 --samples 5 --out " + q(dir / "x.h5"));
  ASSERT_EQ(r.code, 0) << r.output;
  const H5::H5File file((dir / "x.h5").string(), H5F_ACC_RDONLY);
  EXPECT_EQ(read(file, "/analysis/probe_extrapolation/scores").dims, (std::vector<hsize_t>{2, 2, 40}));
  EXPECT_EQ(read(file, "/analysis/probe_extrapolation/tokens").values,
            read(file, "/analysis/probe/tokens").values);
  EXPECT_EQ(int_attribute(file, "/analysis/probe_extrapolation", "T"), 40);
  r = cli("probe " + demo("text-rope-series/step-001500") + " --length 16 --extrapolate 8 --out " +
          q(dir / "y.h5"));
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.output, HasSubstr("--extrapolate must be longer than --length"));
}

TEST(CliFrequencies, FrequenciesDecomposeTheRealScores) {
  REQUIRE_CLI();
  POSLENS_REQUIRE_STORIES();
  const auto dir = test::scratch_dir();
  auto r = cli("frequencies " + stories() + " --text 'Once upon a time' --layer 2 --out " +
               q(dir / "f.h5"));
  ASSERT_EQ(r.code, 0) << r.output;
  const H5::H5File file((dir / "f.h5").string(), H5F_ACC_RDONLY);
  const auto comps = read(file, "/analysis/frequencies/components");
  const auto scores = read(file, "/analysis/frequencies/scores");
  ASSERT_EQ(comps.dims.size(), 4u);
  const hsize_t T = comps.dims[2];
  EXPECT_EQ(comps.dims, (std::vector<hsize_t>{8, 4, T, T}));
  EXPECT_EQ(read(file, "/tokens/ids").dims, (std::vector<hsize_t>{1, T}));
  EXPECT_EQ(int_attribute(file, "/analysis/frequencies", "layer"), 2);
  for (size_t h = 0; h < 8; ++h)
    for (size_t i = 0; i < T; ++i)
      for (size_t j = 0; j <= i; ++j) {  // allowed entries (causal)
        double sum = 0;
        for (size_t c = 0; c < 4; ++c) sum += comps.values[((h * 4 + c) * T + i) * T + j];
        ASSERT_NEAR(sum, scores.values[(h * T + i) * T + j], 1e-4);
      }

  r = cli("frequencies " + stories() + " --tokens 1,403 --head 3 --out " + q(dir / "g.h5"));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(read(H5::H5File((dir / "g.h5").string(), H5F_ACC_RDONLY), "/analysis/frequencies/components").dims,
            (std::vector<hsize_t>{1, 4, 2, 2}));
  r = cli("frequencies " + stories() + " --tokens 1,403 --layer 9 --out " + q(dir / "h.h5"));
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.output, HasSubstr("layer 9 is out of range"));
  r = cli("frequencies " + demo("flipflop-absolute") + " --tokens 0,1 --out " + q(dir / "h.h5"));
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.output, HasSubstr("needs a rotary model"));
  EXPECT_FALSE(std::filesystem::exists(dir / "h.h5"));
}

TEST(CliFrequencies, CompareASeriesGivesVafPerStep) {
  REQUIRE_CLI();
  const auto dir = test::scratch_dir();
  auto r = cli("compare --series " + demo("text-rope-series") + " --length 16 --samples 6 --out " +
               q(dir / "c.h5"));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("11 checkpoints"));
  const H5::H5File file((dir / "c.h5").string(), H5F_ACC_RDONLY);
  EXPECT_EQ(read(file, "/analysis/compare/vaf").dims, (std::vector<hsize_t>{11, 2, 16}));
  const auto steps = read(file, "/analysis/compare/steps");
  EXPECT_EQ(steps.values.front(), 0);
  EXPECT_EQ(steps.values.back(), 1500);
  EXPECT_TRUE(file.nameExists("/analysis/compare/checkpoints"));

  r = cli("compare " + demo("text-rope-series/step-000000") + " --length 8 --out " + q(dir / "d.h5"));
  EXPECT_EQ(r.code, 2);
  r = cli("compare " + demo("text-rope-series/step-000000") + " " + demo("text-cope") +
          " --length 8 --samples 4 --out " + q(dir / "d.h5"));
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.output, HasSubstr("cannot be compared"));
}

}  // namespace
}  // namespace poslens

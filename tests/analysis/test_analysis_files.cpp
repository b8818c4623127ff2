// The analysis registry and every analysis's file round trip: written by its writer, read by its
// reader (beside the writer), equal; another version's file and a truncated file refused with one
// message naming the file.
#include <torch/torch.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <set>
#include <string>

#include "analysis/analysis_files.h"
#include "analysis/analysis_registry.h"
#include "analysis/head_metrics_csv.h"
#include "analysis/position_export.h"
#include "analysis/u_shape.h"
#include "core/base/error.h"
#include "core/formats/hdf5_reader.h"
#include "fixtures.h"

namespace poslens {
namespace {

using ::testing::HasSubstr;

ExportMetadata this_version() {
  ExportMetadata meta;
  meta.tool_version = POSLENS_VERSION;
  meta.checkpoint = "models/a";
  return meta;
}

const AnalysisInput kInput{{1, 5, 7, 2}, {"<s>", "a", "b", "c"}};

/// Writes with `write(path, meta)` under this version and under "0.0.1", cuts a copy in half,
/// and checks that `read` of the good file passes `equal`, and that the other two are refused
/// with one message naming the file.
void round_trip(const std::string& name, const std::function<void(const std::string&, const ExportMetadata&)>& write,
                const std::function<void(const Hdf5Reader&)>& read_and_compare) {
  const auto dir = test::scratch_dir();
  const auto good = (dir / (name + ".h5")).string(), old = (dir / (name + "-old.h5")).string(),
             cut = (dir / (name + "-cut.h5")).string();
  write(good, this_version());
  auto meta = this_version();
  meta.tool_version = "0.0.1";
  write(old, meta);
  std::filesystem::copy_file(good, cut);
  std::filesystem::resize_file(cut, std::filesystem::file_size(good) / 2);

  const Hdf5Reader file(good);
  const auto* entry = analysis_in_file(file);
  ASSERT_NE(entry, nullptr) << name;
  EXPECT_EQ(entry->name, name) << "the registry knows the file by its group";
  read_and_compare(file);

  const auto old_error = test::error_of([&] { read_and_compare(Hdf5Reader(old)); });
  EXPECT_THAT(old_error, HasSubstr(old + ": written by PosLens 0.0.1"));
  const auto cut_error = test::error_of([&] { read_and_compare(Hdf5Reader(cut)); });
  EXPECT_THAT(cut_error, HasSubstr(cut)) << "a truncated file names itself";
}

TEST(AnalysisRegistry, NamesAndGroupsAreUniqueAndEachIsKnownByName) {
  std::set<std::string> names, groups;
  for (const auto& e : analysis_entries()) {
    EXPECT_TRUE(names.insert(e.name).second) << e.name;
    EXPECT_TRUE(groups.insert(e.group).second) << e.group;
    EXPECT_EQ(std::string(e.group).rfind("/analysis/", 0), 0u) << e.group;
    EXPECT_FALSE(std::string(e.title).empty()) << e.name;
    EXPECT_EQ(&analysis_entry(e.name), &e);
    if (e.panel_run) {
      EXPECT_EQ(e.shown_in, ShownIn::Analyses) << e.name << ": run in a panel that shows its file";
    }
  }
  EXPECT_EQ(names.size(), 13u);
  EXPECT_THAT(test::error_of([] { analysis_entry("train"); }),
              HasSubstr("unknown analysis \"train\" (probe, frequencies, compare,"));
  EXPECT_EQ(analysis_names([](const AnalysisEntry& e) { return e.panel_run; }),
            "massive-activations, frequency-usage, divergence, length-loss, position-offset, heinsen-states, "
            "value-norms");
}

TEST(AnalysisFiles, MassiveActivationsRoundTrip) {
  const MassiveActivations m{torch::randn({3, 2}, torch::kDouble), torch::tensor({{0, 1}, {2, 3}, {1, 0}}),
                             torch::tensor({{4, 5}, {6, 7}, {0, 1}}), torch::rand({3}, torch::kDouble),
                             torch::tensor({{true, false}, {false, false}, {true, true}})};
  round_trip(
      "massive-activations",
      [&](const std::string& path, const ExportMetadata& meta) { write_massive_activations_hdf5(path, m, kInput, meta); },
      [&](const Hdf5Reader& file) {
        const auto r = read_massive_activations_hdf5(file);
        EXPECT_TRUE(r.top_values.equal(m.top_values));
        EXPECT_TRUE(r.top_positions.equal(m.top_positions));
        EXPECT_TRUE(r.top_dims.equal(m.top_dims));
        EXPECT_TRUE(r.median.equal(m.median));
        EXPECT_TRUE(r.massive.equal(m.massive));
        EXPECT_EQ(read_token_labels(file), kInput.labels);
      });
}

TEST(AnalysisFiles, FrequencyUsageRoundTrip) {
  FrequencyUsage u;
  u.q_norm = torch::rand({2, 4, 3}, torch::kDouble);
  u.k_norm = torch::rand({2, 2, 3}, torch::kDouble);
  u.rotary.theta = torch::tensor({1.0, 0.1, 0.01}, torch::kDouble);
  u.rotary.rotary_dim = 6;
  u.rotary.kept_components = 3;
  u.L = 512;
  round_trip(
      "frequency-usage",
      [&](const std::string& path, const ExportMetadata& meta) { write_frequency_usage_hdf5(path, u, kInput, meta); },
      [&](const Hdf5Reader& file) {
        const auto r = read_frequency_usage_hdf5(file);
        EXPECT_TRUE(r.q_norm.equal(u.q_norm));
        EXPECT_TRUE(r.k_norm.equal(u.k_norm));
        EXPECT_TRUE(r.rotary.theta.equal(u.rotary.theta));
        EXPECT_EQ(r.rotary.rotary_dim, 6);
        EXPECT_EQ(r.rotary.kept_components, 3);
        EXPECT_EQ(r.L, 512);
      });
}

TEST(AnalysisFiles, DivergenceRoundTrip) {
  const PatternDivergence d{torch::rand({2, 4}, torch::kDouble), torch::rand({2, 4}, torch::kDouble)};
  auto second = this_version();
  second.checkpoint = "models/b";
  round_trip(
      "divergence",
      [&](const std::string& path, const ExportMetadata& meta) { write_divergence_hdf5(path, d, kInput, meta, second); },
      [&](const Hdf5Reader& file) {
        const auto r = read_divergence_hdf5(file);
        EXPECT_TRUE(r.divergence.per_head.equal(d.per_head));
        EXPECT_TRUE(r.divergence.per_query.equal(d.per_query));
        EXPECT_EQ(r.second_checkpoint, "models/b");
      });
}

TEST(AnalysisFiles, LengthLossRoundTrip) {
  const std::vector<LossCurve> curves = {{"a", torch::rand({9}, torch::kDouble), 3},
                                         {"a · linear:2", torch::rand({9}, torch::kDouble), 2}};
  round_trip(
      "length-loss",
      [&](const std::string& path, const ExportMetadata& meta) { write_length_loss_hdf5(path, curves, 64, "t.txt", meta); },
      [&](const Hdf5Reader& file) {
        const auto r = read_length_loss_hdf5(file);
        ASSERT_EQ(r.curves.size(), 2u);
        for (size_t c = 0; c < 2; ++c) {
          EXPECT_EQ(r.curves[c].name, curves[c].name);
          EXPECT_TRUE(r.curves[c].loss.equal(curves[c].loss));
          EXPECT_EQ(r.curves[c].windows, curves[c].windows);
        }
        EXPECT_EQ(r.L, 64);
      });
}

TEST(AnalysisFiles, PositionOffsetRoundTrip) {
  OffsetEffect e;
  e.offset = 50;
  e.layer = 1;
  e.head = 2;
  e.divergence = {torch::rand({2, 4}, torch::kDouble), torch::rand({2, 4}, torch::kDouble)};
  e.pattern = torch::rand({4, 4});
  e.shifted = torch::rand({4, 4});
  e.pattern[0][3] = NAN;  // hidden cells stay NaN
  round_trip(
      "position-offset",
      [&](const std::string& path, const ExportMetadata& meta) { write_position_offset_hdf5(path, e, kInput, meta); },
      [&](const Hdf5Reader& file) {
        const auto r = read_position_offset_hdf5(file);
        EXPECT_TRUE(r.divergence.per_head.equal(e.divergence.per_head));
        EXPECT_TRUE(r.divergence.per_query.equal(e.divergence.per_query));
        EXPECT_TRUE(torch::equal(r.pattern.nan_to_num(-1), e.pattern.nan_to_num(-1)));
        EXPECT_TRUE(torch::equal(r.shifted, e.shifted));
        EXPECT_EQ(r.offset, 50);
        EXPECT_EQ(r.layer, 1);
        EXPECT_EQ(r.head, 2);
      });
}

TEST(AnalysisFiles, HeinsenStatesRoundTrip) {
  const HeinsenStates s{torch::randn({4, 3}, torch::kDouble), torch::rand({4, 3}, torch::kDouble),
                        torch::randn({4, 3}, torch::kDouble)};
  round_trip(
      "heinsen-states",
      [&](const std::string& path, const ExportMetadata& meta) { write_heinsen_states_hdf5(path, s, kInput, meta); },
      [&](const Hdf5Reader& file) {
        const auto r = read_heinsen_states_hdf5(file);
        EXPECT_TRUE(r.state.equal(s.state));
        EXPECT_TRUE(r.decay.equal(s.decay));
        EXPECT_TRUE(r.logits.equal(s.logits));
      });
}

TEST(AnalysisFiles, HeadMetricsRoundTripAndAnotherMetricListIsRefused) {
  HeadMetrics m;
  m.values = torch::rand({2, 3, static_cast<int64_t>(head_metric_names().size())}, torch::kDouble);
  m.induction_ids = {3, 4, 3, 4};
  round_trip(
      "heads",
      [&](const std::string& path, const ExportMetadata& meta) {
        write_head_metrics_hdf5(path, m, kInput.ids, kInput.labels, {"rope", "rope"}, meta);
      },
      [&](const Hdf5Reader& file) {
        const auto r = read_head_metrics_hdf5(file);
        EXPECT_TRUE(r.values.equal(m.values));
        EXPECT_EQ(r.induction_ids, m.induction_ids);
      });
  // A file of fewer metrics (an older layout) is refused, naming the count.
  const auto path = (test::scratch_dir() / "few.h5").string();
  write_analysis_hdf5(path,
                      {{std::string(kHeadsGroup) + "/values", torch::rand({2, 3, 2}, torch::kDouble), {}, {"layer", "head", "metric"}, {}},
                       {std::string(kHeadsGroup) + "/metrics", {}, {"entropy", "sink"}, {"metric"}, {}}},
                      {}, {}, {}, this_version());
  EXPECT_THAT(test::error_of([&] { read_head_metrics_hdf5(Hdf5Reader(path)); }),
              HasSubstr("few.h5: its head metrics are not this version's (2 metrics)"));
}

TEST(AnalysisFiles, UShapeRoundTrip) {
  UShapes u;
  u.checkpoints = {"a", "b"};
  u.encodings = {"rope", "learned absolute"};
  u.weights_sha256 = {"00", "11"};
  u.T = 5;
  u.n_samples = 7;
  u.scores = torch::randn({2, 3, 5}, torch::kDouble);
  round_trip(
      "u-shape",
      [&](const std::string& path, const ExportMetadata& meta) {
        u.meta = meta;
        write_u_shape_hdf5(path, u);
      },
      [&](const Hdf5Reader& file) {
        const auto r = read_u_shape_hdf5(file);
        EXPECT_TRUE(r.scores.equal(u.scores));
        EXPECT_EQ(r.checkpoints, u.checkpoints);
        EXPECT_EQ(r.encodings, u.encodings);
        EXPECT_EQ(r.weights_sha256, u.weights_sha256);
        EXPECT_EQ(r.T, 5);
        EXPECT_EQ(r.n_samples, 7);
      });
}

}  // namespace
}  // namespace poslens

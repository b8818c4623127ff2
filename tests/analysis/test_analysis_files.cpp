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
#include "analysis/frequency_export.h"
#include "analysis/heads_csv.h"
#include "analysis/position_export.h"
#include "analysis/u_shape.h"
#include "core/base/error.h"
#include "core/formats/captures_reader.h"
#include "core/formats/hdf5_reader.h"
#include "core/formats/safetensors.h"
#include "core/runtime/checkpoint.h"
#include "fixtures.h"
#include "random_model.h"
#include "reference_ids.h"

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
  EXPECT_EQ(names.size(), 15u);
  EXPECT_THAT(test::error_of([] { analysis_entry("train"); }),
              HasSubstr("unknown analysis \"train\" (probe, frequencies, compare,"));
  EXPECT_EQ(analysis_names([](const AnalysisEntry& e) { return e.panel_run; }),
            "massive-activations, frequency-usage, divergence, length-loss, position-offset, heinsen-states, "
            "value-norms, needle-sweep, positional-influence");
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

TEST(AnalysisFiles, HeadMetricsRoundTripEarlierFilesReadAndAnotherMetricListIsRefused) {
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
  // A file of an earlier version (the metrics before learned_sink) reads with that column NaN.
  const auto& names = head_metric_names();
  const std::vector<std::string> earlier(names.begin(), names.end() - 1);
  const auto older = (test::scratch_dir() / "earlier.h5").string();
  const auto values = torch::rand({2, 3, static_cast<int64_t>(earlier.size())}, torch::kDouble);
  write_analysis_hdf5(older,
                      {{std::string(kHeadsGroup) + "/values", values, {}, {"layer", "head", "metric"}, {}},
                       {std::string(kHeadsGroup) + "/metrics", {}, earlier, {"metric"}, {}}},
                      {}, {}, {}, this_version());
  const auto read = read_head_metrics_hdf5(Hdf5Reader(older));
  EXPECT_TRUE(read.values.narrow(2, 0, values.size(2)).equal(values));
  EXPECT_TRUE(torch::isnan(read.values.select(2, -1)).all().item<bool>());
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

/// A probe of 2 layers, 3 heads, 4 components and 6 keys with every optional dataset.
ProbeResult some_probe(uint64_t seed) {
  torch::manual_seed(seed);
  ProbeResult p;
  p.T = 6;
  p.n_samples = 9;
  p.L = 32;
  p.bos_id = 1;
  p.pairing = "half_split";
  p.kept_components = 3;
  p.tokens = {4, 8, 15};
  p.scores = torch::randn({2, 3, 6});
  p.scores_std = torch::rand({2, 3, 6});
  p.components = torch::randn({2, 3, 4, 6});
  p.remainder = torch::randn({2, 3, 6});
  p.position_terms = torch::randn({2, 3, 6});
  p.theta = torch::rand({4}, torch::kDouble);
  p.activated = torch::tensor({true, false, true, false});
  p.vaf = torch::rand({2, 4}) * 100;
  p.vaf_per_head = torch::rand({2, 3, 4}) * 100;
  return p;
}

TEST(AnalysisFiles, ProbeRoundTrip) {
  const auto p = some_probe(1);
  round_trip(
      "probe", [&](const std::string& path, const ExportMetadata& meta) { write_probe_hdf5(path, p, 7, false, meta); },
      [&](const Hdf5Reader& file) {
        const auto r = read_probe_hdf5(file);
        for (const auto& [got, want] : {std::pair{r.scores, p.scores}, {r.scores_std, p.scores_std},
                                        {r.components, p.components}, {r.remainder, p.remainder},
                                        {r.position_terms, p.position_terms}, {r.theta, p.theta},
                                        {r.activated, p.activated}, {r.vaf, p.vaf}, {r.vaf_per_head, p.vaf_per_head}})
          EXPECT_TRUE(got.equal(want));
        EXPECT_EQ(r.tokens, p.tokens);
        EXPECT_EQ(std::tie(r.T, r.n_samples, r.L, r.bos_id, r.kept_components),
                  std::tie(p.T, p.n_samples, p.L, p.bos_id, p.kept_components));
        EXPECT_EQ(r.pairing, p.pairing);
      });
}

// A model whose layers differ keeps each layer's own θ_c and band; a file without them reads as
// every layer rotating by `theta` (the test above).
TEST(AnalysisFiles, ProbeRoundTripKeepsEachLayersTheta) {
  auto p = some_probe(3);
  p.theta_per_layer = torch::rand({2, 4}, torch::kDouble);
  p.activated_per_layer = torch::tensor({true, false, false, false, false, true, false, false}).view({2, 4});
  round_trip(
      "probe", [&](const std::string& path, const ExportMetadata& meta) { write_probe_hdf5(path, p, 7, false, meta); },
      [&](const Hdf5Reader& file) {
        const auto r = read_probe_hdf5(file);
        EXPECT_TRUE(r.theta_per_layer.equal(p.theta_per_layer));
        EXPECT_TRUE(r.activated_per_layer.equal(p.activated_per_layer));
        EXPECT_TRUE(layer_theta(r, 1).first.equal(p.theta_per_layer[1]));
      });
  EXPECT_TRUE(layer_theta(some_probe(1), 1).first.equal(some_probe(1).theta));
}

TEST(AnalysisFiles, FrequenciesRoundTrip) {
  torch::manual_seed(2);
  TextDecomposition d;
  d.layer = 1;
  d.head = 2;
  d.L = 64;
  d.pairing = "interleaved";
  d.kept_components = 4;
  d.ids = kInput.ids;
  d.labels = kInput.labels;
  d.components = torch::randn({1, 4, 4, 4});
  d.scores = torch::randn({1, 4, 4});
  d.remainder = torch::randn({1, 4, 4});
  d.theta = torch::rand({4}, torch::kDouble);
  d.activated = torch::tensor({true, true, false, false});
  round_trip(
      "frequencies", [&](const std::string& path, const ExportMetadata& meta) { write_frequencies_hdf5(path, d, meta); },
      [&](const Hdf5Reader& file) {
        const auto r = read_frequencies_hdf5(file);
        EXPECT_TRUE(r.components.equal(d.components));
        EXPECT_TRUE(r.scores.equal(d.scores));
        EXPECT_TRUE(r.remainder.equal(d.remainder));
        EXPECT_FALSE(r.position_terms.defined()) << "not written, not read";
        EXPECT_TRUE(r.theta.equal(d.theta));
        EXPECT_TRUE(r.activated.equal(d.activated));
        EXPECT_EQ(std::tie(r.layer, r.head, r.L, r.kept_components), std::tie(d.layer, d.head, d.L, d.kept_components));
        EXPECT_EQ(r.pairing, d.pairing);
        EXPECT_EQ(r.ids, d.ids);
        EXPECT_EQ(r.labels, d.labels);
      });
}

TEST(AnalysisFiles, CompareRoundTripKeepsHeadMeans) {
  CompareResult c;
  c.names = {"run/step-000100", "run/step-000200"};
  c.steps = {100, 200};
  c.weights_sha256 = {"aa", "bb"};
  c.probes = {some_probe(3), some_probe(4)};
  c.vaf = torch::stack({c.probes[0].vaf, c.probes[1].vaf});
  round_trip(
      "compare", [&](const std::string& path, const ExportMetadata& meta) { write_compare_hdf5(path, c, meta); },
      [&](const Hdf5Reader& file) {
        const auto r = read_compare_hdf5(file);
        EXPECT_EQ(r.names, c.names);
        EXPECT_EQ(r.steps, c.steps);
        EXPECT_EQ(r.weights_sha256, c.weights_sha256);
        EXPECT_TRUE(r.vaf.equal(c.vaf));
        ASSERT_EQ(r.probes.size(), 2u);
        for (size_t i = 0; i < 2; ++i) {
          const auto& p = r.probes[i];
          EXPECT_TRUE(torch::allclose(p.scores, c.probes[i].scores.mean(1, true))) << "the head mean of the scores";
          EXPECT_TRUE(torch::allclose(p.components, c.probes[i].components.mean(1).unsqueeze(1)));
          EXPECT_TRUE(p.vaf.equal(c.vaf[static_cast<int64_t>(i)]));
          EXPECT_TRUE(p.theta.equal(c.probes[0].theta));
          EXPECT_EQ(std::tie(p.T, p.n_samples, p.L), std::tie(c.probes[0].T, c.probes[0].n_samples, c.probes[0].L));
        }
      });
}

TEST(AnalysisFiles, PositionMapReadsTheHeadsThatWereStreamedIn) {
  LoadedModel model;
  model.path = "in-memory";
  auto config = test::small_config(R"([{"type": "rope"}])", 2);
  config.bos_token_id = 0;
  model.model = std::make_unique<Transformer>(test::random_model(config));
  const std::vector<int64_t> ids = {1, 5, 7, 2, 9, 3, 4};
  const auto T = static_cast<int64_t>(ids.size());
  PositionMapOptions options;
  options.probe_samples = 6;
  const auto whole = position_map_whole(model, ids, options);
  const HeadSelection heads{{1, 2}, {0, 1}};
  const auto path = (test::scratch_dir() / "map.h5").string();
  {
    PositionMapFile file(path, model, T, heads, 0);
    const auto r = position_map(model, ids, options, heads, [&](const PositionMapBlock& b) { file.add(b); });
    file.finish(r);
  }
  const Hdf5Reader file(path);
  ASSERT_NE(analysis_in_file(file), nullptr);
  EXPECT_EQ(analysis_in_file(file)->name, "position-map");
  const auto first = read_position_map_hdf5(file);
  EXPECT_EQ(std::tie(first.layer, first.head), std::make_tuple(0, 1)) << "the first head written, in layer order";
  EXPECT_EQ(first.heads, (std::vector<std::string>{"0.1", "1.2"}));
  EXPECT_EQ(first.source_length, T);
  EXPECT_EQ(first.method, whole.methods[0]);
  EXPECT_FALSE(first.explanation.empty());
  EXPECT_FALSE(first.sink_share.defined()) << "no learned sinks, no sink column";
  const auto allowed = allowed_keys(model.model->config(), T, torch::kCPU);
  for (const auto& [l, h] : heads) {
    const auto m = read_position_map_hdf5(file, l, h);
    EXPECT_TRUE(torch::allclose(m.position.masked_fill(allowed.logical_not(), 0),
                                whole.position_map[l][h].masked_fill(allowed.logical_not(), 0), 1e-5, 1e-6))
        << l << "." << h;
    EXPECT_TRUE(torch::allclose(m.pattern, whole.pattern[l][h], 1e-5, 1e-6)) << l << "." << h;
  }
  EXPECT_THAT(test::error_of([&] { read_position_map_hdf5(file, 2, 0); }),
              HasSubstr("map.h5: head 2.0 is outside the maps [2 layers, 4 heads]"));
  // Another version's file (its two maps written by hand) is refused, naming the file.
  const auto old = (test::scratch_dir() / "old-map.h5").string();
  auto meta = this_version();
  meta.tool_version = "0.0.1";
  write_analysis_hdf5(old,
                      {{kPositionMapGroup, torch::zeros({1, 1, 2, 2}), {}, {"layer", "head", "q_pos", "k_pos"}, {}},
                       {"/analysis/pattern", torch::zeros({1, 1, 2, 2}), {}, {"layer", "head", "q_pos", "k_pos"}, {}}},
                      {}, {}, {}, meta);
  EXPECT_THAT(test::error_of([&] { read_position_map_hdf5(Hdf5Reader(old)); }),
              HasSubstr("old-map.h5: written by PosLens 0.0.1"));
}

// gpt-oss's learned sinks: each row's share, 1 − Σ_j p_ij, is the mass HF's own patterns leave
// to the sink (tests/data/models/gpt_oss); streamed into the file beside the maps, whole or
// max-pooled like them, and read back per head.
TEST(AnalysisFiles, PositionMapOfLearnedSinksWritesEachRowsSinkShare) {
  const std::string dir = std::string(POSLENS_SOURCE_DIR) + "/tests/data/models/gpt_oss";
  const auto model = load_checkpoint(dir, {"cpu", "float32", ""});
  const SafetensorsFile ref(dir + "/reference.safetensors");
  const auto ids = test::reference_ids(dir);
  const auto T = static_cast<int64_t>(ids.size());
  PositionMapOptions options;
  options.probe_samples = 6;
  const auto whole = position_map_whole(model, ids, options);
  ASSERT_TRUE(whole.sink_share.defined());
  ASSERT_EQ(whole.sink_share.sizes(), (std::vector<int64_t>{4, 4, T}));
  for (int64_t l = 0; l < 4; ++l) {
    const auto hf = 1.0 - ref.load("attentions." + std::to_string(l)).to(torch::kFloat)[0].sum(-1);  // [head, T]
    EXPECT_TRUE(torch::allclose(whole.sink_share[l], hf, 0, 1e-5)) << "layer " << l;
  }
  EXPECT_GT(whole.sink_share.max().item<float>(), 0.5) << "some row gives the sink most of its mass";
  const HeadSelection heads{{1, 2}, {3, 0}};
  for (const int64_t pool : {int64_t{0}, int64_t{4}}) {
    const auto path = (test::scratch_dir() / ("sinks-" + std::to_string(pool) + ".h5")).string();
    {
      PositionMapFile file(path, model, T, heads, pool);
      file.finish(position_map(model, ids, options, heads, [&](const PositionMapBlock& b) { file.add(b); }));
    }
    const Hdf5Reader file(path);
    for (const auto& [l, h] : heads) {
      const auto m = read_position_map_hdf5(file, l, h);
      ASSERT_TRUE(m.sink_share.defined());
      // Pooled: the largest share of each block of 4 rows (stride ceil(13 / 4) = 4), as the maps.
      const auto expected = pool == 0 ? whole.sink_share[l][h]
                                      : torch::constant_pad_nd(whole.sink_share[l][h], {0, 3}, -1).view({4, 4}).amax(1);
      EXPECT_TRUE(torch::allclose(m.sink_share, expected, 0, 1e-6)) << "pool " << pool << ", head " << l << "." << h;
    }
    EXPECT_EQ(file.string_attribute("/analysis/sink_share", "meaning"),
              "1 - sum_j p_ij: the learned sink's share of each query row");
  }
}

TEST(CapturesFile, HooksAndOneHeadsMapReadBack) {
  torch::manual_seed(5);
  const auto pattern = torch::rand({1, 2, 4, 4});
  const auto resid = torch::rand({1, 4, 8});
  const auto path = (test::scratch_dir() / "run.h5").string();
  write_captures_hdf5(path,
                      {{"blocks.0.attn.hook_pattern", {"batch", "head", "q_pos", "k_pos"}, pattern},
                       {"blocks.0.hook_resid_post", {"batch", "pos", "d_model"}, resid}},
                      torch::tensor(kInput.ids, torch::kLong).unsqueeze(0), kInput.labels, this_version());
  const Hdf5Reader file(path);
  const auto hooks = read_captured_hooks(file);
  ASSERT_EQ(hooks.size(), 2u);
  EXPECT_EQ(hooks[0].name, "blocks.0.attn.hook_pattern");
  EXPECT_EQ(hooks[0].shape, (std::vector<int64_t>{1, 2, 4, 4}));
  EXPECT_EQ(hooks[1].shape, (std::vector<int64_t>{1, 4, 8}));
  const auto map = read_captured_head_map(file, 0, "hook_pattern", 1);
  ASSERT_TRUE(map.has_value());
  EXPECT_TRUE(map->values.equal(pattern[0][1]));
  EXPECT_EQ(map->source_length, 4);
  EXPECT_FALSE(read_captured_head_map(file, 0, "hook_pattern", 2)) << "a head outside the hook";
  EXPECT_FALSE(read_captured_head_map(file, 1, "hook_pattern", 0)) << "a layer not captured";
  EXPECT_FALSE(read_captured_head_map(file, 0, "hook_attn_scores", 0)) << "a hook not captured";
  const auto other = (test::scratch_dir() / "analysis.h5").string();
  write_analysis_hdf5(other, {{kHeadsGroup + std::string("/values"), torch::zeros({1}), {}, {"x"}, {}}}, {}, {}, {},
                      this_version());
  EXPECT_THAT(test::error_of([&] { read_captured_hooks(Hdf5Reader(other)); }),
              HasSubstr("analysis.h5: has no /captures group"));
}

}  // namespace
}  // namespace poslens

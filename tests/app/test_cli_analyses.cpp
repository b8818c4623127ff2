// poslens-cli heads (detectors, sinks), massive-activations, frequency-usage, divergence, sweep
// and merge (docs/analyses.md, docs/sweeps.md): the real binary on stories260K and the demos,
// read back with PosLens's HDF5 reader.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "analysis/analysis_registry.h"
#include "app/cli_runner.h"
#include "core/formats/hdf5_reader.h"
#include "fixtures.h"

namespace poslens {
namespace {

using ::testing::HasSubstr;
using test::cli;
using test::cli_with_figure;
using test::kCliDrawsFigures;
using test::demo;
using test::q;
using test::stories;

const std::string kText = "Once upon a time, there was a little girl. She liked to play.";

TEST(CliAnalyses, HeadsHasDetectorsSinksAndTheInductionSequence) {
  REQUIRE_CLI();
  POSLENS_REQUIRE_STORIES();
  const auto dir = test::scratch_dir();
  const auto r = cli("heads " + stories() + " --text '" + kText + "' --induction-length 40 --seed 3 --out " +
                     q(dir / "h.h5"));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("induction measured on 81 tokens"));
  const Hdf5Reader file((dir / "h.h5").string());
  const auto names = file.read_strings("/analysis/heads/metrics");
  EXPECT_THAT(names, ::testing::ElementsAre("entropy", "mean_distance", "sink", "sink_2", "sink_3", "sink_4",
                                            "previous_token", "duplicate_token", "induction", "position_share", "learned_sink"));
  const auto values = file.read("/analysis/heads/values");
  EXPECT_EQ(values.sizes(), (std::vector<int64_t>{5, 8, 11}));
  // Sinks grow with k; every score lies in [0, 1].
  for (int64_t m = 2; m <= 8; ++m) {
    EXPECT_GE(values.select(2, m).min().item<double>(), 0.0);
    EXPECT_LE(values.select(2, m).max().item<double>(), 1.0 + 1e-9);
  }
  EXPECT_TRUE((values.select(2, 5) >= values.select(2, 2) - 1e-12).all().item<bool>());
  EXPECT_EQ(file.read("/analysis/heads/induction_ids").size(0), 81);
  // The weights' SHA-256 is what `sha256sum ../shared/fixtures/stories260K/stories260K.bin` prints.
  EXPECT_EQ(file.string_attribute("/", "weights_sha256"),
            "b0a507e7ad0f626624f17112325e66691f9076d622e1d3274d103d00299f2696");
}

TEST(CliAnalyses, MassiveActivationsCsvAndHdf5) {
  REQUIRE_CLI();
  POSLENS_REQUIRE_STORIES();
  const auto dir = test::scratch_dir();
  auto r = cli("massive-activations " + stories() + " --text '" + kText + "' --top 3 --out " + q(dir / "m.h5"));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("layer  top |h|"));
  const Hdf5Reader file((dir / "m.h5").string());
  EXPECT_EQ(file.shape("/analysis/massive_activations/top_values"), (std::vector<int64_t>{5, 3}));
  const auto top = file.read("/analysis/massive_activations/top_values").abs();
  EXPECT_TRUE((top.select(1, 0) >= top.select(1, 1)).all().item<bool>());
  EXPECT_TRUE((top.select(1, 0) > file.read("/analysis/massive_activations/median")).all().item<bool>());
  r = cli("massive-activations " + stories() + " --text '" + kText + "' --top 2 --out " + q(dir / "m.csv"));
  ASSERT_EQ(r.code, 0) << r.output;
  std::ifstream csv(dir / "m.csv");
  std::string header;
  std::getline(csv, header);
  EXPECT_EQ(header, "layer,rank,value,abs,position,token,dim,median,ratio,massive");
  int rows = 0;
  for (std::string line; std::getline(csv, line);) ++rows;
  EXPECT_EQ(rows, 10);
}

// A plain analysis (value-norms) through the generic subcommand: its HDF5 as the registry's
// group, the CSV's rows, the summary line; usage errors exit 2, a bad checkpoint 1.
TEST(CliAnalyses, ValueNormsThroughThePlainAnalysisCommand) {
  REQUIRE_CLI();
  POSLENS_REQUIRE_STORIES();
  const auto dir = test::scratch_dir();
  auto r = cli("value-norms " + stories() + " --text '" + kText + "' --out " + q(dir / "v.h5"));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("value-norms: 5 layers × 4 kv heads over "));
  const Hdf5Reader file((dir / "v.h5").string());
  const auto norms = file.read("/analysis/value_norms/norms");
  ASSERT_EQ(norms.dim(), 3);
  EXPECT_EQ(norms.size(0), 5);
  EXPECT_EQ(norms.size(1), 4);
  EXPECT_GT(norms.min().item<double>(), 0.0);
  EXPECT_EQ(file.shape("/analysis/value_norms/first_token_ratio"), (std::vector<int64_t>{5, 4}));
  r = cli("value-norms " + stories() + " --text '" + kText + "' --out " + q(dir / "v.csv"));
  ASSERT_EQ(r.code, 0) << r.output;
  std::ifstream csv(dir / "v.csv");
  std::string header;
  std::getline(csv, header);
  EXPECT_EQ(header, "layer,kv_head,position,token,norm");
  int rows = 0;
  for (std::string line; std::getline(csv, line);) ++rows;
  EXPECT_EQ(rows, 5 * 4 * norms.size(2));
  EXPECT_EQ(cli("value-norms " + stories() + " --text '" + kText + "'").code, 2) << "--out is required";
  r = cli("value-norms " + q(dir / "nowhere") + " --text x --out " + q(dir / "w.h5"));
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir / "w.h5"));
}

// positional-influence through the plain command on stories260K: the exact Jacobian norms
// [layer, pos] in the file, the last token's own the largest of the last layer, the cost said.
TEST(CliAnalyses, PositionalInfluenceOfStories) {
  REQUIRE_CLI();
  POSLENS_REQUIRE_STORIES();
  const auto dir = test::scratch_dir();
  auto r = cli_with_figure("positional-influence " + stories() + " --text '" + kText + "' --out " + q(dir / "p.h5"),
                           dir / "p.png", dir / "p.h5");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("positional-influence: 5 layers, T = "));
  EXPECT_THAT(r.output, HasSubstr("× one forward"));
  const Hdf5Reader file((dir / "p.h5").string());
  const auto influence = file.read("/analysis/positional_influence/influence");
  ASSERT_EQ(influence.dim(), 2);
  EXPECT_EQ(influence.size(0), 5);
  EXPECT_EQ(file.int_attribute("/analysis/positional_influence", "probes", -1), 0) << "d_model 64: exact";
  EXPECT_TRUE(torch::isfinite(influence).all().item<bool>());
  const auto last = influence[4];
  EXPECT_EQ(last.argmax().item<int64_t>(), last.size(0) - 1) << last;
  EXPECT_GT(last.narrow(0, 0, last.size(0) - 1).min().item<double>(), 0.0) << "every position reaches the last";
  if (kCliDrawsFigures) {
    EXPECT_GT(std::filesystem::file_size(dir / "p.png"), 1000u);
  }
  r = cli("positional-influence " + stories() + " --tokens 5 --out " + q(dir / "one.h5"));
  EXPECT_THAT(r.output, HasSubstr("at least two tokens"));
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir / "one.h5"));
}

TEST(CliAnalyses, FrequencyUsageOfStoriesAndARefusalForAlibi) {
  REQUIRE_CLI();
  POSLENS_REQUIRE_STORIES();
  const auto dir = test::scratch_dir();
  auto r = cli_with_figure("frequency-usage " + stories() + " --text '" + kText + "' --out " +
                               q(dir / "u.h5"),
                           dir / "u.png", dir / "u.h5");
  ASSERT_EQ(r.code, 0) << r.output;
  const Hdf5Reader file((dir / "u.h5").string());
  EXPECT_EQ(file.shape("/analysis/frequency_usage/q_norm"), (std::vector<int64_t>{5, 8, 4}));
  EXPECT_EQ(file.shape("/analysis/frequency_usage/k_norm"), (std::vector<int64_t>{5, 4, 4}));
  EXPECT_EQ(file.shape("/analysis/frequency_usage/theta"), (std::vector<int64_t>{4}));
  EXPECT_GT(file.read("/analysis/frequency_usage/q_norm").min().item<double>(), 0.0);
  if (kCliDrawsFigures) {
    EXPECT_GT(std::filesystem::file_size(dir / "u.png"), 1000u);
  }
  r = cli("frequency-usage " + demo("flipflop-absolute") + " --text w1i0r1 --out " + q(dir / "a.h5"));
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("needs rotary components"));
  EXPECT_FALSE(std::filesystem::exists(dir / "a.h5"));
}

TEST(CliAnalyses, DivergenceBetweenTwoCheckpointsOfARun) {
  REQUIRE_CLI();
  const auto dir = test::scratch_dir();
  const auto first = demo("text-rope-series/step-000150"), last = demo("text-rope-series/step-001500");
  auto r = cli_with_figure("divergence " + first + " " + last + " --text 'the cat sat on the mat' --out " +
                               q(dir / "d.h5"),
                           dir / "d.png", dir / "d.h5");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("most changed head"));
  const Hdf5Reader file((dir / "d.h5").string());
  const auto per_head = file.read("/analysis/divergence/per_head");
  EXPECT_GT(per_head.min().item<double>(), 0.0);
  EXPECT_LT(per_head.max().item<double>(), std::log(2.0));
  EXPECT_NE(file.string_attribute("/analysis/divergence", "second_weights_sha256"),
            file.string_attribute("/", "weights_sha256"));
  // Against itself: 0.
  r = cli("divergence " + first + " " + first + " --text 'the cat' --out " + q(dir / "same.csv"));
  ASSERT_EQ(r.code, 0) << r.output;
  std::ifstream same(dir / "same.csv");
  std::string line;
  std::getline(same, line);
  EXPECT_EQ(line, "layer,head,js_divergence");
  int heads = 0;
  while (std::getline(same, line)) {  // 0 up to float32 rounding (maps recomputed in other blocks)
    EXPECT_LT(std::abs(std::stod(line.substr(line.rfind(',') + 1))), 1e-7) << line;
    ++heads;
  }
  EXPECT_EQ(heads, 4);
  // Models of different shapes: one message, no file.
  r = cli("divergence " + first + " " + demo("flipflop-rope") + " --tokens 1,2,3 --out " + q(dir / "x.h5"));
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("compares head by head"));
  EXPECT_FALSE(std::filesystem::exists(dir / "x.h5"));
}

TEST(CliAnalyses, LengthLossOfTheRopeSeriesWithScalings) {
  REQUIRE_CLI();
  const auto dir = test::scratch_dir();
  // Real text from the corpus the demo was trained on (Debian's fortunes), or a fixed paragraph.
  std::string text;
  for (int i = 0; i < 40; ++i)
    text += "Q: What is the answer to the question of life? A: It depends on who asks, and when. ";
  std::ofstream(dir / "text.txt") << text;
  const auto series = demo("text-rope-series/step-001500");
  auto r = cli_with_figure("length-loss " + series + " " + demo("text-rope-series/step-000150") +
                               " --text-file " + q(dir / "text.txt") +
                               " --length 256 --windows 3 --scaling none,linear:2,yarn:2 --out " +
                               q(dir / "l.h5"),
                           dir / "l.png", dir / "l.h5");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("T = 256 (L = 128)"));
  EXPECT_THAT(r.output, HasSubstr("step-001500 · yarn:2:"));
  const Hdf5Reader file((dir / "l.h5").string());
  EXPECT_EQ(file.shape("/analysis/length_loss/loss"), (std::vector<int64_t>{6, 255}));
  EXPECT_EQ(file.read_strings("/analysis/length_loss/curves").at(1), "text-rope-series/step-001500 · linear:2");
  EXPECT_EQ(file.int_attribute("/analysis/length_loss", "L"), 128);
  const auto loss = file.read("/analysis/length_loss/loss");
  // The trained checkpoint predicts its own training length's text better than an early one.
  EXPECT_LT(loss[0].narrow(0, 0, 127).mean().item<double>(), loss[3].narrow(0, 0, 127).mean().item<double>());
  if (kCliDrawsFigures) {
    EXPECT_GT(std::filesystem::file_size(dir / "l.png"), 1000u);
  }
  r = cli("length-loss " + series + " --text hello --scaling pi:4 --out " + q(dir / "x.h5"));
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("expected none, linear:F, ntk:F, yarn:F or llama3:F"));
  r = cli("length-loss " + series + " --text hello --out " + q(dir / "x.h5"));
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("fewer than one window"));
  EXPECT_FALSE(std::filesystem::exists(dir / "x.h5"));
}

TEST(CliAnalyses, NeedleSweepOfTheEnglishRopeDemo) {
  REQUIRE_CLI();
  const auto dir = test::scratch_dir();
  std::string text;
  for (int i = 0; i < 30; ++i)
    text += "A man walks into a bar and orders a drink. The barman looks at him and says nothing. ";
  std::ofstream(dir / "hay.txt") << text;
  const auto model = demo("english-rope");
  const std::string needle = " --needle ' The magic word is pumpkin.' --query ' The magic word is' --answer ' pumpkin'";
  auto r = cli_with_figure("needle-sweep " + model + " --text-file " + q(dir / "hay.txt") + needle +
                               " --length 200 --depth-count 3 --out " + q(dir / "n.h5"),
                           dir / "n.png", dir / "n.h5");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("needle-sweep: T = 200 (L = 256)"));
  EXPECT_THAT(r.output, HasSubstr("depth   0.5: needle at "));
  EXPECT_THAT(r.output, HasSubstr("needle-sweep: 3 depths at T = 200 (haystack "));
  EXPECT_THAT(r.output, HasSubstr("needle-sweep: cost ")) << "the sweep against one plain forward, one run";
  const Hdf5Reader file((dir / "n.h5").string());
  EXPECT_EQ(file.shape("/analysis/needle_sweep/mass"), (std::vector<int64_t>{3, 4, 4, 4}));
  EXPECT_EQ(file.read_strings("/analysis/needle_sweep/segments"),
            (std::vector<std::string>{"begin", "needle", "context", "end"}));
  const auto loss = file.read("/analysis/needle_sweep/loss");
  EXPECT_GT(loss.min().item<double>(), 0.0);
  const auto mass = file.read("/analysis/needle_sweep/mass").to(torch::kDouble);
  EXPECT_TRUE(torch::allclose(mass.sum(-1), torch::ones({3, 4, 4}, torch::kDouble), 1e-4, 1e-4));
  const auto begins = file.read("/analysis/needle_sweep/needle_begin");
  EXPECT_LT(begins[0].item<int64_t>(), begins[1].item<int64_t>());
  if (kCliDrawsFigures) {
    EXPECT_GT(std::filesystem::file_size(dir / "n.png"), 1000u);
  }
  r = cli("needle-sweep " + model + " --text-file " + q(dir / "hay.txt") + " --depths 0.2,0.9 --length 120 --out " +
          q(dir / "n.csv"));
  ASSERT_EQ(r.code, 0) << r.output;
  std::ifstream csv(dir / "n.csv");
  std::string header;
  std::getline(csv, header);
  EXPECT_EQ(header, "depth,needle_begin,loss,layer,layer_type,head,begin,needle,context,end");
  r = cli("needle-sweep " + model + " --text-file " + q(dir / "hay.txt") + " --depths 0.2,x --out " + q(dir / "x.h5"));
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("--depths: \"x\" is not a number"));
  r = cli("needle-sweep " + model + " --text 'too short' --length 200 --out " + q(dir / "x.h5"));
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("fewer than the"));
  EXPECT_FALSE(std::filesystem::exists(dir / "x.h5"));
}

TEST(CliAnalyses, InterventionsBeforeAndAfterThroughDivergenceAndLengthLoss) {
  REQUIRE_CLI();
  const auto dir = test::scratch_dir();
  const auto model = demo("english-rope");
  const std::string text = " --text 'The old man walked to the market to buy some bread and a little milk.'";
  // The same checkpoint against itself: nothing; against itself with p-RoPE: the patterns move.
  auto r = cli("divergence " + model + " " + model + text + " --out " + q(dir / "same.h5"));
  ASSERT_EQ(r.code, 0) << r.output;
  r = cli("divergence " + model + " " + model + text + " --intervene p-rope=0.5 --out " + q(dir / "half.h5"));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("with interventions: p-RoPE 0.5"));
  const auto same = Hdf5Reader((dir / "same.h5").string()).read("/analysis/divergence/per_head");
  const auto half = Hdf5Reader((dir / "half.h5").string()).read("/analysis/divergence/per_head");
  EXPECT_LT(same.abs().max().item<double>(), 1e-6);
  EXPECT_GT(half.max().item<double>(), 1e-3);
  // The loss per position with every frequency stopped (p = 1: a NoPE forward of RoPE weights).
  std::string fortunes;
  for (int i = 0; i < 20; ++i) fortunes += "A man walks into a bar and orders a drink. The barman says nothing. ";
  std::ofstream(dir / "text.txt") << fortunes;
  const std::string loss = "length-loss " + model + " --text-file " + q(dir / "text.txt") + " --length 128 --windows 2";
  ASSERT_EQ(cli(loss + " --out " + q(dir / "before.h5")).code, 0);
  r = cli(loss + " --intervene p-rope=1 --out " + q(dir / "after.h5"));
  ASSERT_EQ(r.code, 0) << r.output;
  const auto before = Hdf5Reader((dir / "before.h5").string()).read("/analysis/length_loss/loss");
  const auto after = Hdf5Reader((dir / "after.h5").string()).read("/analysis/length_loss/loss");
  EXPECT_GT(after.mean().item<double>(), before.mean().item<double>()) << "RoPE's positions mattered to it";
  r = cli("heads " + model + text + " --intervene temperature=L9H0:2 --out " + q(dir / "x.h5"));
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("temperature on layer 9: the model has 4 layers"));
  r = cli("heads " + model + text + " --intervene p-rope=2 --out " + q(dir / "x.h5"));
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("--intervene p-rope=2: p must be in [0, 1]"));
  EXPECT_FALSE(std::filesystem::exists(dir / "x.h5"));
  EXPECT_EQ(cli("info " + model + " --intervene no-sinks").code, 2) << "info describes the checkpoint itself";
  // The first token masked as a key: only query 0 still sees it, so each head's sink (mean over
  // the T queries of p_i0) is 1/T; the file says what ran.
  r = cli("heads " + model + text + " --intervene mask-first-key --out " + q(dir / "masked.h5"));
  ASSERT_EQ(r.code, 0) << r.output;
  ASSERT_EQ(cli("heads " + model + text + " --out " + q(dir / "plain.h5")).code, 0);
  const Hdf5Reader masked((dir / "masked.h5").string()), plain((dir / "plain.h5").string());
  const auto T = static_cast<double>(masked.read("/tokens/ids").size(1));
  const auto sink = masked.read("/analysis/heads/values").select(2, 2);
  EXPECT_TRUE(torch::allclose(sink, torch::full_like(sink, 1.0 / T), 1e-6, 1e-6));
  EXPECT_GT(plain.read("/analysis/heads/values").select(2, 2).max().item<double>(), 2.0 / T);
  EXPECT_EQ(masked.string_attribute("/", "interventions"), "first token masked as a key");
  EXPECT_EQ(plain.string_attribute("/", "interventions"), "");
}

TEST(CliAnalyses, PositionOffsetLeavesRopeAndMovesAbsolute) {
  REQUIRE_CLI();
  const auto dir = test::scratch_dir();
  auto r = cli_with_figure("position-offset " + demo("text-rope-series/step-001500") +
                               " --text 'the cat sat on the mat' --offset 50 --layer 1 --head 1 --out " +
                               q(dir / "o.h5"),
                           dir / "o.png", dir / "o.h5");
  ASSERT_EQ(r.code, 0) << r.output;
  const Hdf5Reader rope((dir / "o.h5").string());
  EXPECT_LT(rope.read("/analysis/position_offset/per_head").max().item<double>(), 1e-6);
  EXPECT_EQ(rope.int_attribute("/analysis/position_offset", "offset"), 50);
  r = cli("position-offset " + demo("flipflop-absolute") + " --text w1i0r1w0i1r0 --offset 50 --out " +
          q(dir / "a.h5"));
  ASSERT_EQ(r.code, 0) << r.output;
  const Hdf5Reader absolute((dir / "a.h5").string());
  EXPECT_GT(absolute.read("/analysis/position_offset/per_head").max().item<double>(), 1e-3);
  r = cli("heinsen-states " + demo("flipflop-rope") + " --tokens 1,2,3 --out " + q(dir / "h.h5"));
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("need a Heinsen position component"));
}

/// A manifest of the probe on three checkpoints of the demo series.
std::filesystem::path write_manifest(const std::filesystem::path& dir, const std::string& items) {
  const auto path = dir / "manifest.json";
  std::ofstream(path) << R"({"items": [)" << items << "]}";
  return path;
}

// The registry is the CLI's list: every analysis is a subcommand, and a sweep takes exactly the
// ones marked `sweep` (and run), named in its error.
TEST(CliAnalyses, EveryRegistryAnalysisIsASubcommandAndTheSweepsListIsTheRegistrys) {
  REQUIRE_CLI();
  const auto help = cli("--help");
  ASSERT_EQ(help.code, 0) << help.output;
  for (const auto& entry : analysis_entries())  // a subcommand line: two spaces, the name, spaces
    EXPECT_THAT(help.output, HasSubstr("\n  " + std::string(entry.name) + "  ")) << entry.name;
  const auto dir = test::scratch_dir();
  const auto rope = (std::filesystem::path(POSLENS_SOURCE_DIR) / "resources/demos/flipflop-rope").string();
  const auto r = cli("sweep " + q(write_manifest(dir, R"({"checkpoint": ")" + rope + R"(", "analysis": "compare"})")) +
                     " --out " + q(dir / "a"));
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("unknown analysis \"compare\" (" +
                                      analysis_names([](const AnalysisEntry& e) { return e.sweep; }) + ", run)"));
}

TEST(CliSweep, LocalSweepIsResumableAndMergesToTheCompareTable) {
  REQUIRE_CLI();
  const auto dir = test::scratch_dir();
  const auto series = std::filesystem::path(POSLENS_SOURCE_DIR) / "resources/demos/text-rope-series";
  std::string items;
  for (const char* step : {"step-000000", "step-000750", "step-001500"})
    items += std::string(items.empty() ? "" : ",") + R"({"checkpoint": ")" + (series / step).string() +
             R"(", "analysis": "probe", "options": ["--length", "16", "--samples", "6"]})";
  const auto manifest = write_manifest(dir, items);
  auto r = cli("sweep " + q(manifest) + " --out " + q(dir / "out"));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("3 of 3 items done"));
  // Again: every item is skipped (resumable), and a lost item is redone.
  std::filesystem::remove(dir / "out/items/item-0001.h5");
  r = cli("sweep " + q(manifest) + " --out " + q(dir / "out"));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("[1/3] probe step-000000: done before, skipped"));
  EXPECT_THAT(r.output, HasSubstr("[2/3] probe step-000750 … done"));
  r = cli("merge " + q(dir / "out") + " --out " + q(dir / "all.h5"));
  ASSERT_EQ(r.code, 0) << r.output;
  r = cli("compare " + q(series / "step-000000") + " " + q(series / "step-000750") + " " +
          q(series / "step-001500") + " --length 16 --samples 6 --out " + q(dir / "compare.h5"));
  ASSERT_EQ(r.code, 0) << r.output;
  const Hdf5Reader merged((dir / "all.h5").string()), compare((dir / "compare.h5").string());
  EXPECT_TRUE(torch::equal(merged.read("/analysis/compare/vaf"), compare.read("/analysis/compare/vaf")));
  EXPECT_TRUE(torch::equal(merged.read("/analysis/compare/steps"), compare.read("/analysis/compare/steps")));
  EXPECT_EQ(merged.read_strings("/analysis/compare/weights_sha256"),
            compare.read_strings("/analysis/compare/weights_sha256"));
  EXPECT_EQ(merged.children("/items"), (std::vector<std::string>{"0000", "0001", "0002"}));
  EXPECT_TRUE(merged.exists("/items/0001/analysis/probe/vaf"));
  EXPECT_EQ(merged.string_attribute("/items/0002", "analysis"), "probe");
  EXPECT_FALSE(merged.string_attribute("/items/0002", "weights_sha256").empty());
}

TEST(CliSweep, BadManifestsAndFailingItemsSayWhat) {
  REQUIRE_CLI();
  const auto dir = test::scratch_dir();
  const auto rope = (std::filesystem::path(POSLENS_SOURCE_DIR) / "resources/demos/flipflop-rope").string();
  auto r = cli("sweep " + q(write_manifest(dir, R"({"checkpoint": ")" + rope + R"(", "analysis": "train"})")) +
               " --out " + q(dir / "a"));
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("item 0: unknown analysis \"train\""));
  r = cli("sweep " + q(write_manifest(dir, R"({"checkpoint": "nowhere", "analysis": "probe"})")) + " --out " +
          q(dir / "b"));
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("no such file or folder"));
  // An item that fails (frequency-usage of an absolute model) is reported; the rest run.
  const auto absolute = (std::filesystem::path(POSLENS_SOURCE_DIR) / "resources/demos/flipflop-absolute").string();
  r = cli("sweep " +
          q(write_manifest(dir, R"({"checkpoint": ")" + absolute +
                                    R"(", "analysis": "frequency-usage", "options": ["--tokens", "1,2,3"]},)"
                                    R"({"checkpoint": ")" + rope +
                                    R"(", "analysis": "heads", "options": ["--tokens", "1,2,3", "--induction-length", "4"]})")) +
          " --out " + q(dir / "c"));
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("failed (exit 1)"));
  EXPECT_THAT(r.output, HasSubstr("needs rotary components"));
  EXPECT_THAT(r.output, HasSubstr("1 of 2 items done"));
  EXPECT_TRUE(std::filesystem::exists(dir / "c/items/item-0001.h5"));
  r = cli("merge " + q(dir / "c") + " --out " + q(dir / "c.h5"));
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("item-0000.h5 is missing"));
  EXPECT_FALSE(std::filesystem::exists(dir / "c.h5"));
}

}  // namespace
}  // namespace poslens

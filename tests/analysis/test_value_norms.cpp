// value-norms: layer 0's norms against v = W_v · norm(x) computed here from the weights, every
// layer against the captured hook_v, the drain ratio by hand, and the file through the
// registry's run and read (round trip; another version's and a truncated file refused).
#include <torch/torch.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "analysis/analysis_registry.h"
#include "analysis/value_norms.h"
#include "core/base/error.h"
#include "core/runtime/capture_sink.h"
#include "fixtures.h"
#include "random_model.h"

namespace poslens {
namespace {

using ::testing::HasSubstr;

LoadedModel loaded_nope(int64_t kv_heads) {
  LoadedModel m;
  m.path = "models/random-nope";
  m.model = std::make_unique<Transformer>(test::random_model(test::small_config("[]", kv_heads), 3));
  return m;
}

std::vector<int64_t> ids_of(int64_t T) {
  std::vector<int64_t> ids;
  for (int64_t t = 0; t < T; ++t) ids.push_back((7 * t + 3) % 30);
  return ids;
}

TEST(ValueNorms, LayerZeroIsTheNormOfWvTimesTheNormedEmbedding) {
  const auto model = loaded_nope(2);  // GQA: 4 heads, 2 kv heads
  const auto ids = ids_of(9);
  const auto v = compute_value_norms(model, ids);
  const auto& c = model.model->config();
  ASSERT_EQ(v.norms.sizes(), (std::vector<int64_t>{2, 2, 9}));
  // By hand: x = the token embeddings (NoPE adds nothing), the layer's input norm, then W_v.
  const auto& w = model.model->weights();
  const auto x = w.tok_embed.index_select(0, torch::tensor(ids, torch::kLong)).to(torch::kDouble);
  const auto in = model.model->attention_input_norm(0);
  ASSERT_TRUE(in.present);
  at::Tensor h;
  if (c.norm == NormType::RMSNorm)
    h = x * torch::rsqrt(x.pow(2).mean(-1, true) + c.norm_eps) * in.weight.to(torch::kDouble);
  else
    h = torch::layer_norm(x, {c.d_model}, in.weight.to(torch::kDouble),
                          in.bias.defined() ? in.bias.to(torch::kDouble) : at::Tensor(), c.norm_eps);
  const auto& l0 = w.layers[0];
  auto value = torch::matmul(h, l0.w_v.to(torch::kDouble).t());
  if (l0.b_v.defined()) value = value + l0.b_v.to(torch::kDouble);
  const auto expected = value.view({9, 2, c.d_head}).norm(2, -1).t();  // [kv_head, pos]
  EXPECT_TRUE(torch::allclose(v.norms[0].to(torch::kDouble), expected, 1e-5, 1e-5))
      << v.norms[0] << "\n" << expected;
}

TEST(ValueNorms, EveryLayerEqualsTheCapturedValues) {
  const auto model = loaded_nope(4);
  const auto ids = ids_of(12);
  const auto v = compute_value_norms(model, ids);
  Captures captures;
  CaptureSink sink(CaptureSpec({"blocks.0.attn.hook_v", "blocks.1.attn.hook_v"}), captures);
  c10::InferenceMode inference;
  model.model->forward(torch::tensor(ids, torch::kLong).unsqueeze(0), sink);
  for (int l = 0; l < 2; ++l) {
    const auto captured = captures.find({HookKind::V, l, HookStack::Blocks});
    ASSERT_TRUE(captured.defined()) << "layer " << l;
    const auto v_pos = captured[0];  // [pos, kv_head, d_head]
    EXPECT_TRUE(torch::allclose(v.norms[l], v_pos.norm(2, -1).t(), 1e-6, 1e-6)) << "layer " << l;
  }
}

TEST(ValueNorms, TheDrainRatioIsTheFirstNormOverTheMedianOfTheRest) {
  ValueNorms v{torch::tensor({0.5f, 2.0f, 1.0f, 4.0f, 3.0f}).view({1, 1, 5})};
  // median of {2, 1, 4, 3}: the lower middle value, 2 (as torch.median).
  EXPECT_DOUBLE_EQ(v.first_token_ratio()[0][0].item<double>(), 0.25);
  ValueNorms one{torch::ones({2, 3, 1})};
  EXPECT_TRUE(one.first_token_ratio().isnan().all().item<bool>()) << "one token: no ratio";
}

TEST(ValueNorms, TheRegistrysRunWritesAFileItsReadGivesBack) {
  const auto model = loaded_nope(2);
  const AnalysisInput input{ids_of(6), {"<s>", "a", "b", "c", "d", "e"}};
  const auto& entry = analysis_entry("value-norms");
  ASSERT_NE(entry.run, nullptr);
  ASSERT_NE(entry.read, nullptr);
  const auto r = entry.run(model, input, {});
  ASSERT_EQ(r.maps.size(), 2u);
  EXPECT_EQ(r.maps[0].rows, 2) << "layers";
  EXPECT_EQ(r.maps[0].cols, 2) << "kv heads";
  EXPECT_EQ(r.maps[1].cols, 6) << "positions";
  EXPECT_EQ(r.maps[1].col_labels, input.labels);
  EXPECT_THAT(r.summary, HasSubstr("2 layers × 2 kv heads over 6 tokens"));
  EXPECT_EQ(std::count(r.csv.begin(), r.csv.end(), '\n'), 1 + 2 * 2 * 6);
  EXPECT_THAT(r.csv, HasSubstr("layer,kv_head,position,token,norm\n0,0,0,\"<s>\","));

  const auto dir = test::scratch_dir();
  ExportMetadata meta;
  meta.tool_version = POSLENS_VERSION;
  meta.checkpoint = model.path;
  const auto good = (dir / "v.h5").string();
  r.write_hdf5(good, meta);
  const Hdf5Reader file(good);
  ASSERT_NE(analysis_in_file(file), nullptr);
  EXPECT_STREQ(analysis_in_file(file)->name, "value-norms");
  const auto back = entry.read(file);
  EXPECT_EQ(back.csv, r.csv) << "the same numbers and labels";
  EXPECT_EQ(back.summary, r.summary);
  EXPECT_EQ(back.title, r.title) << "the checkpoint's name from the file";
  EXPECT_EQ(back.maps[1].values, r.maps[1].values);

  meta.tool_version = "0.0.1";
  const auto old = (dir / "old.h5").string(), cut = (dir / "cut.h5").string();
  r.write_hdf5(old, meta);
  EXPECT_THAT(test::error_of([&] { entry.read(Hdf5Reader(old)); }), HasSubstr("old.h5: written by PosLens 0.0.1"));
  std::filesystem::copy_file(good, cut);
  std::filesystem::resize_file(cut, std::filesystem::file_size(good) / 2);
  EXPECT_THAT(test::error_of([&] { entry.read(Hdf5Reader(cut)); }), HasSubstr("cut.h5"));
}

}  // namespace
}  // namespace poslens

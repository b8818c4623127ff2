// Hook sinks (core/runtime/sinks.h, hdf5_sink.h, capture_sink.h) against the whole captures of
// the same forward pass: the pooled sink is the max-pool of the whole map (pool_heatmap), the
// last-row sink its last row, the HDF5 stream the whole capture, head selections the selected
// heads, and logits delivered in chunks the whole logits. Blocks of 4 rows and pooling strides
// of 5 make sure no boundary lines up.
#include <H5Cpp.h>
#include <torch/torch.h>

#include <gtest/gtest.h>

#include <cmath>

#include "analysis/heatmap_pooling.h"
#include "core/base/error.h"
#include "core/models/poslens_model.h"
#include "core/runtime/hdf5_sink.h"
#include "core/runtime/sinks.h"
#include "core/runtime/transformer.h"
#include "fixtures.h"
#include "random_model.h"

namespace poslens {
namespace {

constexpr int64_t kT = 37;

Transformer model(const char* components = R"([{"type": "rope"}, {"type": "alibi"}])") {
  return test::random_model(test::small_config(components, /*kv_heads=*/2), 2);
}

at::Tensor tokens(int64_t batch = 1) {
  torch::manual_seed(9);
  return torch::randint(0, 30, {batch, kT}, torch::kLong);
}

const ForwardOptions kSmallBlocks{{4, 5}};

/// Every hook of the pass, whole.
Captures whole(const Transformer& m, const at::Tensor& ids) {
  Captures c;
  CaptureSink sink(CaptureSpec::all(), c);
  m.forward(ids, sink, {}, kSmallBlocks);
  return c;
}

TEST(Sinks, PooledMapIsTheMaxPoolOfTheWholeMap) {
  const auto m = model();
  c10::InferenceMode inference;
  const auto ids = tokens();
  const auto all = whole(m, ids);
  const auto hidden = allowed_keys(m.config(), kT, torch::kCPU).logical_not();
  for (const int64_t cells : {8, 13, 37, 100}) {
    PooledMapSink pooled(CaptureSpec({"blocks.*.attn.hook_pattern", "blocks.1.attn.hook_attn_scores"}), cells);
    m.forward(ids, pooled, {}, kSmallBlocks);
    const auto maps = pooled.maps();
    ASSERT_EQ(maps.size(), 3u);
    for (const auto& [point, map] : maps) {
      const auto source = all.find(point)[0];
      for (int64_t h = 0; h < 4; ++h) {
        // pool_heatmap ignores −inf/NaN cells: hidden entries of the whole map made −inf.
        const auto expected = pool_heatmap(source[h].masked_fill(hidden, -INFINITY), cells, cells);
        ASSERT_EQ(map.size(2), expected.rows) << cells;
        ASSERT_EQ(map.size(3), expected.cols);
        const auto got = map[0][h].contiguous();
        for (int64_t i = 0; i < expected.rows * expected.cols; ++i) {
          const float want = expected.values[static_cast<size_t>(i)], have = got.data_ptr<float>()[i];
          if (std::isnan(want)) EXPECT_TRUE(std::isnan(have)) << point.name() << " cell " << i;
          else EXPECT_FLOAT_EQ(have, want) << point.name() << " cell " << i << " of " << cells;
        }
      }
    }
  }
}

TEST(Sinks, SelectedHeadsAreThoseOfTheWholeMap) {
  const auto m = model();
  c10::InferenceMode inference;
  const auto ids = tokens(2);
  const auto all = whole(m, ids);
  Captures some;
  CaptureSink sink(CaptureSpec({"blocks.*.attn.hook_pattern", "logits"}), some,
                   parse_head_selection("1.3,0.1,1.0", 2, 4));
  m.forward(ids, sink, {}, kSmallBlocks);
  const auto l1 = some.find({HookKind::Pattern, 1}), l0 = some.find({HookKind::Pattern, 0});
  ASSERT_EQ(l1.size(1), 2);
  EXPECT_TRUE(torch::equal(l1[0][0], all.find({HookKind::Pattern, 1})[0][3]));
  EXPECT_TRUE(torch::equal(l1[1][1], all.find({HookKind::Pattern, 1})[1][0]));
  ASSERT_EQ(l0.size(1), 1);
  EXPECT_TRUE(torch::equal(l0, all.find({HookKind::Pattern, 0}).narrow(1, 1, 1)));
  // Logits came in chunks of positions only when wanted; the assembled tensor is the whole.
  EXPECT_TRUE(torch::equal(some.find({HookKind::Logits, -1}), all.find({HookKind::Logits, -1})));
}

TEST(Sinks, HeadSelectionTextIsCheckedAgainstTheModel) {
  EXPECT_EQ(parse_head_selection("5.3, 0.1", 12, 12), (HeadSelection{{5, 3}, {0, 1}}));
  for (const char* bad : {"5", "5.", ".3", "a.b", "5.3.1", "12.0", "0.12", "-1.0", ""})
    EXPECT_THROW(parse_head_selection(bad, 12, 12), Error) << bad;
}

TEST(Sinks, LastRowIsTheWholeMapsLastRow) {
  const auto m = model(R"([{"type": "cope", "npos_max": 5}])");
  c10::InferenceMode inference;
  const auto ids = tokens();
  const auto all = whole(m, ids);
  LastRowSink last(CaptureSpec({"blocks.*.attn.hook_attn_scores", "blocks.*.attn.hook_cope_pos"}));
  m.forward(ids, last, {}, kSmallBlocks);
  for (int l = 0; l < 2; ++l)
    for (auto kind : {HookKind::AttnScores, HookKind::CopePos}) {
      const auto row = last.find({kind, l});
      ASSERT_TRUE(row.defined());
      EXPECT_TRUE(torch::equal(row, all.find({kind, l}).select(2, kT - 1)));
    }
  EXPECT_FALSE(last.find({HookKind::Pattern, 0}).defined());
}

at::Tensor read_dataset(const std::string& file, const std::string& name) {
  H5::H5File f(file, H5F_ACC_RDONLY);
  const auto ds = f.openDataSet(name);
  const auto space = ds.getSpace();
  std::vector<hsize_t> dims(static_cast<size_t>(space.getSimpleExtentNdims()));
  space.getSimpleExtentDims(dims.data());
  std::vector<int64_t> shape(dims.begin(), dims.end());
  auto out = torch::empty(shape, torch::kFloat32);
  ds.read(out.data_ptr<float>(), H5::PredType::NATIVE_FLOAT);
  return out;
}

TEST(Sinks, StreamedHdf5HoldsTheWholeCaptures) {
  const auto m = model(R"([{"type": "t5", "num_buckets": 8, "max_distance": 12}])");
  c10::InferenceMode inference;
  const auto ids = tokens(2);
  const auto all = whole(m, ids);
  const auto path = (test::scratch_dir() / "run.h5").string();
  {
    Hdf5Writer file(path, {});
    Hdf5CaptureSink sink(file, CaptureSpec::all(), parse_head_selection("1.2,1.0", 2, 4));
    m.forward(ids, sink, {}, kSmallBlocks);
    file.commit();
  }
  for (const auto& [point, tensor] : all.tensors) {
    if (is_map_hook(point.kind) && point.layer == 0) continue;  // no head of layer 0 selected
    const auto stored = read_dataset(path, "/captures/" + point.name());
    const auto expected =
        is_map_hook(point.kind) ? tensor.index_select(1, torch::tensor({2, 0}, torch::kLong)) : tensor;
    // Layer 0 streams its keys here (no map wanted), so values agree to rounding; −inf where
    // hidden must be exact.
    EXPECT_TRUE(torch::equal(stored.isneginf(), expected.isneginf())) << point.name();
    EXPECT_TRUE(torch::allclose(stored, expected, 1e-5, 1e-5)) << point.name();
  }
  H5::H5File f(path, H5F_ACC_RDONLY);
  EXPECT_FALSE(f.nameExists("/captures/blocks.0.attn.hook_pattern"));
}

TEST(Sinks, ACancelledStreamLeavesNoFile) {
  const auto m = model();
  c10::InferenceMode inference;
  const auto dir = test::scratch_dir();
  const auto path = (dir / "run.h5").string();
  EXPECT_THROW(
      {
        Hdf5Writer file(path, {});
        Hdf5CaptureSink sink(file, CaptureSpec::all());
        m.forward(tokens(), sink, [](int done, int) { return done < 1; }, kSmallBlocks);
        file.commit();
      },
      Cancelled);
  EXPECT_TRUE(std::filesystem::is_empty(dir));  // neither the file nor its temporary
}

TEST(Sinks, LastLogitsAloneAreTheLastOfAll) {
  const auto m = model();
  c10::InferenceMode inference;
  const auto ids = tokens(2);
  Captures none;
  CaptureSink nothing(CaptureSpec(), none);
  const auto all = m.forward(ids, nothing, {}, {});
  ForwardOptions last;
  last.logits = LogitsReturned::Last;
  EXPECT_TRUE(torch::allclose(m.forward(ids, nothing, {}, last), all.narrow(1, kT - 1, 1), 1e-6, 1e-6));
  last.logits = LogitsReturned::None;
  EXPECT_FALSE(m.forward(ids, nothing, {}, last).defined());
}

}  // namespace
}  // namespace poslens

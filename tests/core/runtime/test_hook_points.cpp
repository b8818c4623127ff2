#include <gtest/gtest.h>

#include <set>

#include "core/base/error.h"
#include "core/runtime/hook_points.h"

namespace poslens {
namespace {

TEST(HookPoints, NamesFollowTransformerLens) {
  EXPECT_EQ((HookPoint{HookKind::Pattern, 3}).name(), "blocks.3.attn.hook_pattern");
  EXPECT_EQ((HookPoint{HookKind::ResidPost, 0}).name(), "blocks.0.hook_resid_post");
  EXPECT_EQ((HookPoint{HookKind::Embed, -1}).name(), "hook_embed");
  EXPECT_EQ((HookPoint{HookKind::LnFinal, -1}).name(), "ln_final.hook_normalized");
  EXPECT_EQ((HookPoint{HookKind::Logits, -1}).name(), "logits");
  EXPECT_EQ((HookPoint{HookKind::Pattern, 1}).dims(),
            (std::vector<std::string>{"batch", "head", "q_pos", "k_pos"}));
  EXPECT_EQ((HookPoint{HookKind::Q, 1}).dims(),
            (std::vector<std::string>{"batch", "pos", "head", "d_head"}));
  // n_kv_heads heads under GQA, so the axis says so.
  for (auto kind : {HookKind::K, HookKind::V, HookKind::RotK})
    EXPECT_EQ((HookPoint{kind, 1}).dims(),
              (std::vector<std::string>{"batch", "pos", "kv_head", "d_head"}));
}

TEST(HookPoints, ParseRoundTripsEveryKind) {
  const auto kinds = all_hook_kinds();
  EXPECT_EQ(kinds.size(), kNumHookKinds);
  EXPECT_EQ(std::set<HookKind>(kinds.begin(), kinds.end()).size(), kinds.size()) << "a kind twice";
  for (const auto kind : kinds) {
    const HookPoint p{kind, is_block_hook(kind) ? 11 : -1};
    const auto parsed = HookPoint::parse(p.name());
    ASSERT_TRUE(parsed.has_value()) << p.name();
    EXPECT_EQ(*parsed, p) << p.name();
  }
  EXPECT_FALSE(HookPoint::parse("blocks.x.attn.hook_pattern"));
  EXPECT_FALSE(HookPoint::parse("blocks.1.attn.hook_patern"));
  EXPECT_FALSE(HookPoint::parse("blocks..attn.hook_pattern"));
  EXPECT_FALSE(HookPoint::parse("hook_pattern"));
}

TEST(HookPoints, GlobsSelectAcrossLayers) {
  const CaptureSpec spec({"blocks.*.attn.hook_pattern", "logits"});
  EXPECT_TRUE(spec.wants({HookKind::Pattern, 0}));
  EXPECT_TRUE(spec.wants({HookKind::Pattern, 17}));
  EXPECT_TRUE(spec.wants({HookKind::Logits, -1}));
  EXPECT_FALSE(spec.wants({HookKind::AttnScores, 0}));
  EXPECT_FALSE(CaptureSpec().wants({HookKind::Logits, -1}));
  EXPECT_TRUE(CaptureSpec::all().wants({HookKind::Z, 3}));
  const CaptureSpec layer2({"blocks.2.*"});
  EXPECT_TRUE(layer2.wants({HookKind::Q, 2}));
  EXPECT_FALSE(layer2.wants({HookKind::Q, 12}));
}

TEST(HookPoints, PatternThatMatchesNothingIsReported) {
  const std::vector<HookPoint> available{{HookKind::Pattern, 0}, {HookKind::Logits, -1}};
  EXPECT_NO_THROW(CaptureSpec({"blocks.*.attn.hook_pattern"}).check_matches_any(available));
  try {
    CaptureSpec({"logits", "blocks.*.attn.hook_patern"}).check_matches_any(available);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("blocks.*.attn.hook_patern"), std::string::npos);
  }
}

}  // namespace
}  // namespace poslens

// CoPE (Golovneva et al. 2024 §4, Appendix B; docs/formulas.md §2) against values computed by hand.
#include <torch/torch.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/position/cope.h"
#include "core/base/error.h"

namespace poslens {
namespace {

// Gate logits so large that sigmoid rounds to exactly 1: every allowed gate is 1.
at::Tensor all_on(int64_t t) { return torch::full({1, 1, t, t}, 1e4); }

// Golovneva et al. 2024 §4: "if the gates are always 1, then p_ij = i - j + 1". The sum over t = j..i has
// i - j + 1 terms: the key's own gate counts, the diagonal is at p = 1; masked keys get p = 0.
TEST(Cope, AllGatesOneGiveTokenRelativePositionPlusOne) {
  const int64_t t = 5;
  const auto out = cope_positions(all_on(t), torch::zeros({1, 1, t, 2}), torch::zeros({2, 16}),
                                  /*causal=*/true, 1.0);
  for (int64_t i = 0; i < t; ++i)
    for (int64_t j = 0; j < t; ++j) {
      const double want_p = j <= i ? double(i - j + 1) : 0.0;
      EXPECT_EQ(out.positions[0][0][i][j].item<double>(), want_p) << i << "," << j;
      EXPECT_EQ(out.gates[0][0][i][j].item<double>(), j <= i ? 1.0 : 0.0);
    }
}

// q_0 = 1, q_1 = 2 (d = 1), e = [0, 10, 20, 40] so z_0[p] = (0, 10, 20, 40), z_1[p] = (0, 20,
// 40, 80). Gate logit ln 3 -> g = 3/4 on allowed entries:
//   p_00 = 0.75 -> z = 0.25·0 + 0.75·10 = 7.5
//   p_10 = 1.5  -> z = 0.5·20 + 0.5·40 = 30
//   p_11 = 0.75 -> z = 0.25·0 + 0.75·20 = 15
TEST(Cope, InterpolatesBetweenIntegerPositionsByHand) {
  const auto q = torch::tensor({1.f, 2.f}).view({1, 1, 2, 1});
  const auto e = torch::tensor({0.f, 10.f, 20.f, 40.f}).view({1, 4});
  const auto logits = torch::full({1, 1, 2, 2}, std::log(3.0));
  const auto out = cope_positions(logits, q, e, true, 1.0, CopeLogitScale::NoDiv);
  EXPECT_NEAR(out.gates[0][0][1][0].item<double>(), 0.75, 1e-6);
  EXPECT_NEAR(out.positions[0][0][0][0].item<double>(), 0.75, 1e-6);
  EXPECT_NEAR(out.positions[0][0][1][0].item<double>(), 1.5, 1e-6);
  EXPECT_NEAR(out.positions[0][0][1][1].item<double>(), 0.75, 1e-6);
  EXPECT_NEAR(out.pos_logits[0][0][0][0].item<double>(), 7.5, 1e-5);
  EXPECT_NEAR(out.pos_logits[0][0][1][0].item<double>(), 30.0, 1e-5);
  EXPECT_NEAR(out.pos_logits[0][0][1][1].item<double>(), 15.0, 1e-5);
  EXPECT_EQ(out.pos_logits[0][0][0][1].item<double>(), 0.0);  // masked

  // The gate logit is scaled too: scale 0.5 on logit 2·ln 3 gives the same gates; DivideAll
  // puts the scale on z: pos_logits = z · 0.5.
  const auto half = cope_positions(logits * 2, q, e, true, 0.5, CopeLogitScale::DivideAll);
  EXPECT_NEAR(half.positions[0][0][1][0].item<double>(), 1.5, 1e-6);
  EXPECT_NEAR(half.pos_logits[0][0][1][0].item<double>(), 15.0, 1e-5);
}

TEST(Cope, ClampsPositionsAtNposMaxMinusOne) {
  const int64_t t = 6, npos_max = 4;
  const auto q = torch::ones({1, 1, t, 1});
  const auto e = torch::tensor({0.f, 1.f, 2.f, 3.f}).view({1, npos_max}) * 10;  // z[p] = 10 p
  const auto out = cope_positions(all_on(t), q, e, true, 1.0, CopeLogitScale::NoDiv);
  for (int64_t i = 0; i < t; ++i)
    for (int64_t j = 0; j <= i; ++j) {
      const double p = std::min<double>(i - j + 1, npos_max - 1);
      EXPECT_EQ(out.positions[0][0][i][j].item<double>(), p) << i << "," << j;
      EXPECT_NEAR(out.pos_logits[0][0][i][j].item<double>(), 10 * p, 1e-5);
    }
}

TEST(Cope, MaskedGatesAreExactlyZeroAndPositionsAreReverseCumsums) {
  torch::manual_seed(1);
  const int64_t B = 2, H = 3, T = 7, d = 4;
  const auto logits = torch::randn({B, H, T, T}) * 5;
  const auto q = torch::randn({B, H, T, d});
  const auto out = cope_positions(logits, q, torch::randn({d, 32}), true, 0.5);
  for (int64_t i = 0; i < T; ++i)
    for (int64_t j = 0; j < T; ++j) {
      if (j > i) {
        EXPECT_TRUE(out.gates.select(2, i).select(2, j).eq(0).all().item<bool>());
        EXPECT_TRUE(out.positions.select(2, i).select(2, j).eq(0).all().item<bool>());
        continue;
      }
      // p_ij = sum_{t=j..i} sigmoid(logit_it · scale), summed sequentially here.
      auto want = torch::zeros({B, H});
      for (int64_t k = j; k <= i; ++k) want += torch::sigmoid(logits.select(2, i).select(2, k) * 0.5);
      EXPECT_TRUE(torch::allclose(out.positions.select(2, i).select(2, j), want, 1e-5, 1e-5));
    }
}

TEST(Cope, LogitModesAndAlibiTerm) {
  torch::manual_seed(2);
  const int64_t T = 4, d = 4;
  const double scale = 0.5;
  const auto q = torch::randn({1, 2, T, d}), k = torch::randn({1, 2, T, d});
  const auto e = torch::randn({d, 8});
  const auto qk = torch::matmul(q, k.transpose(-1, -2));
  const auto div = cope_positions(qk, q, e, true, scale, CopeLogitScale::DivideAll);
  const auto nodiv = cope_positions(qk, q, e, true, scale, CopeLogitScale::NoDiv);
  EXPECT_TRUE(torch::allclose(div.positions, nodiv.positions));
  const auto allowed = torch::ones({T, T}, torch::kBool).tril();
  EXPECT_TRUE(torch::allclose(reference::cope_attention_logits(qk, div, scale).masked_select(allowed),
                              ((qk + nodiv.pos_logits) * scale).masked_select(allowed), 1e-5, 1e-5));
  EXPECT_TRUE(torch::allclose(reference::cope_attention_logits(qk, nodiv, scale),
                              qk * scale + nodiv.pos_logits, 1e-5, 1e-5));
  // CoPE_ALiBi: + m_h · p_ij with the seed's sign.
  const auto m = torch::tensor({0.5f, -0.25f});
  const auto term = cope_alibi_term(div.positions, m);
  EXPECT_NEAR(term[0][0][2][1].item<double>(), 0.5 * div.positions[0][0][2][1].item<double>(), 1e-6);
  EXPECT_NEAR(term[0][1][3][0].item<double>(), -0.25 * div.positions[0][1][3][0].item<double>(), 1e-6);
}

TEST(Cope, NonCausalSumsOverAllLaterKeys) {
  const auto out = cope_positions(torch::full({1, 1, 3, 3}, 1e4), torch::zeros({1, 1, 3, 1}),
                                  torch::zeros({1, 8}), /*causal=*/false, 1.0);
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 3; ++j) EXPECT_EQ(out.positions[0][0][i][j].item<double>(), 3.0 - j);
}

TEST(Cope, BadShapesThrow) {
  EXPECT_THROW(cope_positions(torch::zeros({1, 1, 3, 3}), torch::zeros({1, 1, 3, 4}),
                              torch::zeros({5, 8}), true, 1.0),
               Error);  // pos_emb d != q's d
  EXPECT_THROW(cope_alibi_term(torch::zeros({1, 2, 3, 3}), torch::zeros({3})), Error);
}

}  // namespace
}  // namespace poslens

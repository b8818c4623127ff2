#pragma once
// Hook points of docs/formulas.md §1. Inside the code a hook point is a typed key (HookPoint);
// TransformerLens-style strings ("blocks.3.attn.hook_pattern") exist only at the edges
// (CLI, export, UI) and are produced/parsed here.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace poslens {

enum class HookKind {
  Embed,       ///< hook_embed            [batch, pos, d_model]
  PosEmbed,    ///< hook_pos_embed        [batch, pos, d_model]
  ResidPre,    ///< blocks.{l}.hook_resid_pre  [batch, pos, d_model]
  Q,           ///< blocks.{l}.attn.hook_q     [batch, pos, head, d_head]
  K,           ///< blocks.{l}.attn.hook_k     [batch, pos, kv_head, d_head]
  V,           ///< blocks.{l}.attn.hook_v     [batch, pos, kv_head, d_head]
  RotQ,        ///< blocks.{l}.attn.hook_rot_q [batch, pos, head, d_head]
  RotK,        ///< blocks.{l}.attn.hook_rot_k [batch, pos, kv_head, d_head]
  AttnScores,  ///< blocks.{l}.attn.hook_attn_scores [batch, head, q_pos, k_pos]
  PosScores,   ///< blocks.{l}.attn.hook_pos_scores  [batch, head, q_pos, k_pos]
  CopeGates,   ///< blocks.{l}.attn.hook_cope_gates  [batch, head, q_pos, k_pos]
  CopePos,     ///< blocks.{l}.attn.hook_cope_pos    [batch, head, q_pos, k_pos]
  Pattern,     ///< blocks.{l}.attn.hook_pattern     [batch, head, q_pos, k_pos]
  Z,           ///< blocks.{l}.attn.hook_z     [batch, pos, head, d_head]
  AttnOut,     ///< blocks.{l}.hook_attn_out   [batch, pos, d_model]
  ResidMid,    ///< blocks.{l}.hook_resid_mid  [batch, pos, d_model]
  MlpOut,      ///< blocks.{l}.hook_mlp_out    [batch, pos, d_model]
  ResidPost,   ///< blocks.{l}.hook_resid_post [batch, pos, d_model]
  PeState,     ///< hook_pe_state         [batch, pos, d_pe]
  LnFinal,     ///< ln_final.hook_normalized [batch, pos, d_model]
  Logits,      ///< logits                [batch, pos, vocab]
};
/// How many HookKinds there are; hook_points.cpp has one table row for each (checked there).
inline constexpr std::size_t kNumHookKinds = 21;

/// Every hook kind, in forward order (the table of docs/formulas.md §1 names).
std::vector<HookKind> all_hook_kinds();

/// Which stack of blocks a hook belongs to. Decoder-only and encoder-only models have one,
/// `Blocks` ("blocks.{l}."); encoder–decoder models (T5) name their hooks as TransformerLens's
/// HookedEncoderDecoder does: "encoder.{l}.", "decoder.{l}." and, for the decoder's
/// cross-attention, "decoder.{l}.cross_attn.hook_*" with "decoder.{l}.hook_cross_attn_out" and
/// "decoder.{l}.hook_resid_mid_cross". Model-level hooks of a stack get its prefix
/// ("encoder.hook_embed", "encoder.ln_final.hook_normalized"); "logits" has none.
enum class HookStack { Blocks, Encoder, Decoder, Cross };

struct HookPoint {
  HookKind kind;
  int layer = -1;  ///< block index for per-block hooks, -1 for model-level ones
  HookStack stack = HookStack::Blocks;

  /// The TransformerLens-style name, e.g. "blocks.3.attn.hook_pattern".
  std::string name() const;
  /// Dimension names of the captured tensor, e.g. {"batch", "head", "q_pos", "k_pos"}.
  std::vector<std::string> dims() const;
  /// Parses a full name; std::nullopt if it is not one of docs/formulas.md §1's names.
  static std::optional<HookPoint> parse(const std::string& name);
  bool operator==(const HookPoint& o) const { return kind == o.kind && layer == o.layer && stack == o.stack; }
  bool operator<(const HookPoint& o) const {
    if (stack != o.stack) return stack < o.stack;
    return layer != o.layer ? layer < o.layer : kind < o.kind;
  }
};

/// True for hooks that live inside a block (need a layer index).
bool is_block_hook(HookKind kind);

/// Which hook points a forward pass keeps: a list of exact names or shell globs
/// (fnmatch(3); '*' also matches dots, so "blocks.*.attn.hook_pattern" selects every layer).
class CaptureSpec {
 public:
  CaptureSpec() = default;
  explicit CaptureSpec(std::vector<std::string> patterns);
  /// The CLI's default: every attention pattern plus the logits.
  static CaptureSpec default_spec();
  /// The default for a model with these hook points: for an encoder–decoder model every
  /// stack's patterns (encoder, decoder self- and cross-attention) plus the logits.
  static CaptureSpec default_spec(const std::vector<HookPoint>& available);
  /// Keep every hook point.
  static CaptureSpec all();
  bool wants(const HookPoint& point) const;
  bool empty() const { return patterns_.empty(); }
  const std::vector<std::string>& patterns() const { return patterns_; }
  /// Throws poslens::Error naming the first pattern that matches none of `available`
  /// (so a typo such as "blocks.*.attn.hook_patern" is reported, not silently ignored).
  void check_matches_any(const std::vector<HookPoint>& available) const;

 private:
  std::vector<std::string> patterns_;
};

}  // namespace poslens

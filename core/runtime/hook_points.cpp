#include "core/runtime/hook_points.h"

#include <fnmatch.h>

#include <array>
#include <cstdlib>
#include <utility>

#include "core/base/error.h"

namespace poslens {
namespace {

struct HookName {
  HookKind kind;
  const char* suffix;  // after "blocks.{l}." for block hooks, the whole name otherwise
  bool in_block;
  std::array<const char*, 4> dims;
};

// One row per hook point of docs/formulas.md §1, in forward order.
// K, V and rot_k have n_kv_heads heads under GQA (query head h reads kv head h / (H / H_kv)).
constexpr std::array<HookName, kNumHookKinds> kHooks = {{
    {HookKind::Embed, "hook_embed", false, {"batch", "pos", "d_model", nullptr}},
    {HookKind::PosEmbed, "hook_pos_embed", false, {"batch", "pos", "d_model", nullptr}},
    {HookKind::ResidPre, "hook_resid_pre", true, {"batch", "pos", "d_model", nullptr}},
    {HookKind::Q, "attn.hook_q", true, {"batch", "pos", "head", "d_head"}},
    {HookKind::K, "attn.hook_k", true, {"batch", "pos", "kv_head", "d_head"}},
    {HookKind::V, "attn.hook_v", true, {"batch", "pos", "kv_head", "d_head"}},
    {HookKind::RotQ, "attn.hook_rot_q", true, {"batch", "pos", "head", "d_head"}},
    {HookKind::RotK, "attn.hook_rot_k", true, {"batch", "pos", "kv_head", "d_head"}},
    {HookKind::AttnScores, "attn.hook_attn_scores", true, {"batch", "head", "q_pos", "k_pos"}},
    {HookKind::PosScores, "attn.hook_pos_scores", true, {"batch", "head", "q_pos", "k_pos"}},
    {HookKind::CopeGates, "attn.hook_cope_gates", true, {"batch", "head", "q_pos", "k_pos"}},
    {HookKind::CopePos, "attn.hook_cope_pos", true, {"batch", "head", "q_pos", "k_pos"}},
    {HookKind::Pattern, "attn.hook_pattern", true, {"batch", "head", "q_pos", "k_pos"}},
    {HookKind::Z, "attn.hook_z", true, {"batch", "pos", "head", "d_head"}},
    {HookKind::AttnOut, "hook_attn_out", true, {"batch", "pos", "d_model", nullptr}},
    {HookKind::ResidMid, "hook_resid_mid", true, {"batch", "pos", "d_model", nullptr}},
    {HookKind::MlpOut, "hook_mlp_out", true, {"batch", "pos", "d_model", nullptr}},
    {HookKind::ResidPost, "hook_resid_post", true, {"batch", "pos", "d_model", nullptr}},
    {HookKind::PeState, "hook_pe_state", false, {"batch", "pos", "d_pe", nullptr}},
    {HookKind::LnFinal, "ln_final.hook_normalized", false, {"batch", "pos", "d_model", nullptr}},
    {HookKind::Logits, "logits", false, {"batch", "pos", "vocab", nullptr}},
}};

const HookName& row(HookKind kind) {
  for (const auto& h : kHooks)
    if (h.kind == kind) return h;
  throw Error("internal: unknown hook kind");
}

}  // namespace

bool is_block_hook(HookKind kind) { return row(kind).in_block; }

std::vector<HookKind> all_hook_kinds() {
  std::vector<HookKind> kinds;
  for (const auto& h : kHooks) kinds.push_back(h.kind);
  return kinds;
}

namespace {

const char* stack_prefix(HookStack stack) {
  switch (stack) {
    case HookStack::Blocks: return "blocks.";
    case HookStack::Encoder: return "encoder.";
    case HookStack::Decoder:
    case HookStack::Cross: return "decoder.";
  }
  return "";
}

/// A block hook's name after "decoder.{l}." in the cross-attention (TL HookedEncoderDecoder).
std::string cross_suffix(HookKind kind, const std::string& suffix) {
  if (kind == HookKind::AttnOut) return "hook_cross_attn_out";
  if (kind == HookKind::ResidMid) return "hook_resid_mid_cross";
  if (suffix.rfind("attn.", 0) == 0) return "cross_" + suffix;
  return suffix;
}

}  // namespace

std::string HookPoint::name() const {
  const auto& h = row(kind);
  if (!h.in_block) {
    if (stack == HookStack::Blocks || kind == HookKind::Logits) return h.suffix;
    return stack_prefix(stack) + std::string(h.suffix);
  }
  const std::string suffix = stack == HookStack::Cross ? cross_suffix(kind, h.suffix) : h.suffix;
  return stack_prefix(stack) + std::to_string(layer) + "." + suffix;
}

std::vector<std::string> HookPoint::dims() const {
  std::vector<std::string> out;
  for (const char* d : row(kind).dims)
    if (d) out.emplace_back(d);
  return out;
}

std::optional<HookPoint> HookPoint::parse(const std::string& name) {
  // Every name is one that name() makes: try each stack's spelling.
  for (const auto stack : {HookStack::Blocks, HookStack::Encoder, HookStack::Decoder, HookStack::Cross}) {
    const std::string prefix = stack_prefix(stack);
    if (name.rfind(prefix, 0) == 0) {
      const auto dot = name.find('.', prefix.size());
      if (dot != std::string::npos && dot > prefix.size()) {
        const std::string digits = name.substr(prefix.size(), dot - prefix.size());
        if (digits.size() <= 6 && digits.find_first_not_of("0123456789") == std::string::npos) {
          const int layer = std::atoi(digits.c_str());
          for (const auto& h : kHooks)
            if (h.in_block && HookPoint{h.kind, layer, stack}.name() == name) return HookPoint{h.kind, layer, stack};
        }
      }
    }
    for (const auto& h : kHooks)
      if (!h.in_block && stack != HookStack::Cross && HookPoint{h.kind, -1, stack}.name() == name)
        return HookPoint{h.kind, -1, stack};
  }
  return std::nullopt;
}

CaptureSpec::CaptureSpec(std::vector<std::string> patterns) : patterns_(std::move(patterns)) {}

CaptureSpec CaptureSpec::default_spec() {
  return CaptureSpec({"blocks.*.attn.hook_pattern", "logits"});
}

CaptureSpec CaptureSpec::default_spec(const std::vector<HookPoint>& available) {
  for (const auto& p : available)
    if (p.stack != HookStack::Blocks)  // encoder–decoder: every stack's patterns
      return CaptureSpec({"encoder.*.attn.hook_pattern", "decoder.*.attn.hook_pattern",
                          "decoder.*.cross_attn.hook_pattern", "logits"});
  return default_spec();
}

CaptureSpec CaptureSpec::all() { return CaptureSpec({"*"}); }

bool CaptureSpec::wants(const HookPoint& point) const {
  if (patterns_.empty()) return false;
  const std::string name = point.name();
  for (const auto& p : patterns_)
    if (fnmatch(p.c_str(), name.c_str(), 0) == 0) return true;
  return false;
}

void CaptureSpec::check_matches_any(const std::vector<HookPoint>& available) const {
  for (const auto& p : patterns_) {
    bool matched = false;
    for (const auto& point : available)
      if (fnmatch(p.c_str(), point.name().c_str(), 0) == 0) {
        matched = true;
        break;
      }
    if (!matched)
      throw Error("capture \"" + p +
                  "\" matches no hook point of this model (names as in docs/formulas.md §1, e.g. "
                  "blocks.0.attn.hook_pattern, blocks.*.hook_resid_post, logits)");
  }
}

}  // namespace poslens

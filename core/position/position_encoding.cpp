#include "core/position/position_encoding.h"

#include <torch/torch.h>

#include "core/base/error.h"

namespace poslens {
namespace {

template <typename Pred>
bool any_of(const std::vector<std::unique_ptr<PositionEncoding>>& parts, Pred pred) {
  for (const auto& p : parts)
    if (pred(*p)) return true;
  return false;
}

}  // namespace

at::Tensor LayerCache::get(const std::string& key, const std::function<at::Tensor()>& make) {
  auto it = tensors_.find(key);
  if (it == tensors_.end()) it = tensors_.emplace(key, make()).first;
  return it->second;
}

at::Tensor AttentionInputs::cached(const std::string& key,
                                   const std::function<at::Tensor()>& make) const {
  return cache ? cache->get(key, make) : make();
}

void ScoreTerms::add(at::Tensor& slot, const at::Tensor& term) {
  if (!term.defined()) return;
  slot = slot.defined() ? slot + term : term;
}

ComposedEncoding::ComposedEncoding(std::vector<std::unique_ptr<PositionEncoding>> parts)
    : parts_(std::move(parts)) {
  int rotating = 0, absolute = 0, cope = 0;
  for (const auto& p : parts_) {
    rotating += p->rotates();
    absolute += p->has_input_term();
    cope += p->has_cope();
  }
  if (rotating > 1) throw Error("position encoding: at most one rotary component (rope or hope)");
  if (absolute > 1)
    throw Error("position encoding: at most one absolute component "
                "(learned_absolute, sinusoidal or heinsen)");
  if (cope > 1) throw Error("position encoding: at most one cope component");
}

std::string ComposedEncoding::describe() const {
  if (parts_.empty()) return NoPositionEncoding().describe();
  std::string out;
  for (const auto& p : parts_) out += (out.empty() ? "" : " + ") + p->describe();
  return out;
}

InputTerm ComposedEncoding::input_term(const at::Tensor& tok, const at::Tensor& positions) const {
  for (const auto& p : parts_)
    if (p->has_input_term()) return p->input_term(tok, positions);
  return {};
}

bool ComposedEncoding::has_input_term() const {
  return any_of(parts_, [](const PositionEncoding& p) { return p.has_input_term(); });
}
bool ComposedEncoding::has_pe_state() const {
  return any_of(parts_, [](const PositionEncoding& p) { return p.has_pe_state(); });
}
bool ComposedEncoding::rotates() const {
  return any_of(parts_, [](const PositionEncoding& p) { return p.rotates(); });
}
bool ComposedEncoding::has_position_scores() const {
  return any_of(parts_, [](const PositionEncoding& p) { return p.has_position_scores(); });
}
bool ComposedEncoding::has_cope() const {
  return any_of(parts_, [](const PositionEncoding& p) { return p.has_cope(); });
}

at::Tensor ComposedEncoding::rotate(const at::Tensor& x, const at::Tensor& positions) const {
  for (const auto& p : parts_)
    if (p->rotates()) return p->rotate(x, positions);
  return x;
}

void ComposedEncoding::add_score_terms(const AttentionInputs& in, ScoreTerms& out) const {
  for (const auto& p : parts_) p->add_score_terms(in, out);
}

at::Tensor ComposedEncoding::value_term(const AttentionInputs& in, const at::Tensor& weights) const {
  at::Tensor sum;
  for (const auto& p : parts_) ScoreTerms::add(sum, p->value_term(in, weights));
  return sum;
}
bool ComposedEncoding::has_value_term() const {
  return any_of(parts_, [](const PositionEncoding& p) { return p.has_value_term(); });
}
bool ComposedEncoding::scores_read_block_input() const {
  return any_of(parts_, [](const PositionEncoding& p) { return p.scores_read_block_input(); });
}
bool ComposedEncoding::scores_read_values() const {
  return any_of(parts_, [](const PositionEncoding& p) { return p.scores_read_values(); });
}
bool ComposedEncoding::needs_whole_rows() const {
  return any_of(parts_, [](const PositionEncoding& p) { return p.needs_whole_rows(); });
}

at::Tensor ComposedEncoding::static_position_scores(int layer, int64_t T) const {
  at::Tensor sum;
  for (const auto& p : parts_) ScoreTerms::add(sum, p->static_position_scores(layer, T));
  return sum;
}

std::optional<RotaryInfo> ComposedEncoding::rotary_info(int64_t seq_len) const {
  for (const auto& p : parts_)
    if (auto info = p->rotary_info(seq_len)) return info;
  return std::nullopt;
}

const CopeEncoding* ComposedEncoding::cope() const {
  for (const auto& p : parts_)
    if (const auto* c = p->cope()) return c;
  return nullptr;
}

at::Tensor ComposedEncoding::position_table(int64_t n_pos) const {
  for (const auto& p : parts_)
    if (auto t = p->position_table(n_pos); t.defined()) return t;
  return {};
}

}  // namespace poslens

#pragma once
// HF's Unigram model (tokenizers/src/models/unigram/model.rs, as read from tokenizer.json):
// the Viterbi best path over the word's bytes (sentencepiece_lattice.h) with f64 scores, every
// vocabulary entry a candidate (no piece types), a character without a piece scoring
// min_score - 10 as unk_id; consecutive unknowns fused into one token whose text is the
// unknown text itself; with byte_fallback, unknown text becomes its <0xXX> pieces.
#include <array>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/tokenizers/hf_components.h"
#include "core/tokenizers/sentencepiece_lattice.h"

namespace poslens::hf {

class UnigramModel : public Model {
 public:
  /// `vocab[id]` = (piece, score). `unk_id` -1: none (HF's null; encoding a character without a
  /// piece then fails). Throws poslens::Error "<where>: ..." for an empty vocabulary or an
  /// unk_id outside it.
  UnigramModel(std::vector<std::pair<std::string, double>> vocab, int64_t unk_id,
               bool byte_fallback, const std::string& where);

  void tokenize(std::string_view word, std::vector<ModelToken>& out) const override;
  int64_t token_to_id(const std::string& token) const override;
  const std::string* id_to_token(int64_t id) const override;
  int64_t size() const override { return static_cast<int64_t>(pieces_.size()); }
  std::string name() const override { return "Unigram"; }

 private:
  std::vector<std::string> pieces_;
  std::vector<double> scores_;
  std::unordered_map<std::string, uint32_t> ids_;  ///< a repeated piece: its last id, as HF
  spm::PieceIndex index_;
  double min_score_ = 0;
  int64_t unk_id_ = -1;
  bool byte_fallback_ = false;
  std::array<int64_t, 256> byte_ids_{};  ///< "<0xXX>" ids, -1 when absent
};

}  // namespace poslens::hf

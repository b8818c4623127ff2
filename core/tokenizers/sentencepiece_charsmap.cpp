// SentencePiece's precompiled charsmap; layout from google/sentencepiece src/normalizer.cc
// (DecodePrecompiledCharsMap) and huggingface/spm_precompiled (parse).
#include "core/tokenizers/sentencepiece_charsmap.h"

#include <sstream>

#include "core/base/error.h"
#include "core/base/little_endian.h"

namespace poslens::spm {

Charsmap::Charsmap(std::string_view blob, Layout layout, const std::string& where) {
  if (blob.empty()) return;
  if (blob.size() <= 4)
    throw Error(where + ": " + std::to_string(blob.size()) + " bytes, too short");
  const auto* bytes = reinterpret_cast<const unsigned char*>(blob.data());
  const uint32_t trie_bytes = read_le_u32(bytes);
  if (trie_bytes > blob.size() - 4) {
    std::ostringstream s;
    s << where << ": trie size " << trie_bytes << " runs past the " << blob.size()
      << "-byte blob";
    throw Error(s.str());
  }
  units_.resize(trie_bytes / 4);
  for (std::size_t i = 0; i < units_.size(); ++i) units_[i] = read_le_u32(bytes + 4 + 4 * i);
  const std::size_t strings_at =
      layout == Layout::SentencePiece ? 4 + std::size_t{trie_bytes} : 4 + 4 * units_.size();
  replacements_ = std::string(blob.substr(strings_at));
}

std::string_view Charsmap::replacement(uint32_t value) const {
  if (value >= replacements_.size()) return {};
  const std::string_view rest = std::string_view(replacements_).substr(value);
  return rest.substr(0, rest.find('\0'));
}

}  // namespace poslens::spm

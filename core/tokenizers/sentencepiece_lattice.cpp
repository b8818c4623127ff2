#include "core/tokenizers/sentencepiece_lattice.h"

#include <algorithm>

#include "core/base/error.h"

namespace poslens::spm {

PieceIndex::PieceIndex(std::vector<std::pair<std::string_view, int32_t>> pieces)
    : sorted_(std::move(pieces)) {
  std::sort(sorted_.begin(), sorted_.end());
}

void lattice_fail(const std::string& what) { throw Error(what); }

}  // namespace poslens::spm

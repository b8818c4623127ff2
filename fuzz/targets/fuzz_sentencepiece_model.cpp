// Reader: poslens::SentencePieceTokenizer::from_bytes (core/tokenizers/sentencepiece_*.cpp,
// protobuf_wire.cpp) - SentencePiece's `tokenizer.model` (a serialized ModelProto, read by our
// own protobuf wire reader), its precompiled charsmap and vocabulary checks; then encoding and
// decoding sample texts (tokenizer_checks.h) with BPE, Unigram, Word or Char segmentation.
// Input: the file's bytes (from_bytes takes them directly, no file needed).
// Expected: poslens::Error. Findings: any other exception, a sanitizer report, an id outside
// the vocabulary, a timeout (quadratic segmentation on a hostile vocabulary).
#include <cstdint>
#include <string>
#include <string_view>

#include "core/tokenizers/sentencepiece_tokenizer.h"
#include "tokenizer_checks.h"

using namespace poslens;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  fuzz::refuse([&] {
    const auto t = SentencePieceTokenizer::from_bytes(bytes, "tokenizer.model");
    const int64_t n = static_cast<int64_t>(t->model().pieces.size());
    if (t->vocab_size() != n) fuzz::finding("vocab_size() differs from the number of pieces");
    std::string pieces;
    for (int64_t id = 0; id < std::min<int64_t>(n, 64); ++id) pieces += t->piece(id);
    fuzz::exercise_tokenizer(*t, pieces);
  });
  return 0;
}

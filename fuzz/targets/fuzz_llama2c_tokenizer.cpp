// Reader: poslens::Llama2cTokenizer (core/tokenizers/llama2c_tokenizer.cpp) - llama2.c's
// `tokenizer.bin` (int32 max_token_length, then per token float32 score, int32 length, bytes),
// then encode/decode on sample texts (tokenizer_checks.h).
// Input: 2 bytes little-endian = the model's vocab_size (which the file does not store; the
// loader passes the model header's), then the file. The reader only takes a path: the file is
// written to /dev/shm/poslens-fuzz-<pid>/tokenizer.bin.
// Expected: poslens::Error (truncated file, bad lengths, vocab_size too small). Findings: any
// other exception, a sanitizer report, an id outside [0, vocab_size), a timeout in the merge loop.
#include <cstdint>
#include <string>

#include "core/tokenizers/llama2c_tokenizer.h"
#include "tokenizer_checks.h"

using namespace poslens;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const int64_t vocab_size = data[0] | (data[1] << 8);
  const std::string path = fuzz::scratch_path("tokenizer.bin");
  fuzz::write_file(path, data + 2, size - 2);
  fuzz::refuse([&] {
    const Llama2cTokenizer t(path, vocab_size);
    if (t.vocab_size() != vocab_size) fuzz::finding("vocab_size() differs from the one given");
    // Text made of the file's own pieces exercises the merges.
    std::string pieces;
    for (int64_t id = 3; id < std::min<int64_t>(vocab_size, 64); ++id) pieces += t.token_text(id);
    fuzz::exercise_tokenizer(t, pieces);
  });
  return 0;
}

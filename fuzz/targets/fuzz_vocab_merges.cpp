// Reader: poslens::HfTokenizer::from_gpt2_files (core/tokenizers/hf_tokenizer.cpp) - GPT-2's
// original `vocab.json` + `merges.txt` (what read_tokenizer() uses for a vocab.json), then
// encoding and decoding sample texts (tokenizer_checks.h).
// Input: vocab.json, a NUL byte, merges.txt (no NUL: everything is vocab.json, merges.txt is
// empty). The reader only takes paths: both go to /dev/shm/poslens-fuzz-<pid>/.
// Expected: poslens::Error. Findings: any other exception, a sanitizer report, an id outside
// the vocabulary, a timeout.
#include <cstdint>
#include <cstring>
#include <string>

#include "core/tokenizers/hf_tokenizer.h"
#include "tokenizer_checks.h"

using namespace poslens;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto* nul = static_cast<const uint8_t*>(std::memchr(data, 0, size));
  const size_t vocab_size = nul ? static_cast<size_t>(nul - data) : size;
  const std::string vocab_path = fuzz::scratch_path("vocab.json");
  const std::string merges_path = fuzz::scratch_path("merges.txt");
  fuzz::write_file(vocab_path, data, vocab_size);
  if (nul)
    fuzz::write_file(merges_path, nul + 1, size - vocab_size - 1);
  else
    fuzz::write_file(merges_path, "", 0);
  fuzz::refuse([&] {
    const HfTokenizer t = HfTokenizer::from_gpt2_files(vocab_path, merges_path);
    fuzz::exercise_tokenizer(t);
  });
  return 0;
}

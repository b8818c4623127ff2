// Readers of an HF `tokenizer.json`:
//  - poslens::HfTokenizer::from_json (core/tokenizers/hf_*.cpp): the whole tokenizers pipeline
//    (added tokens, normalizers incl. the base64 precompiled charsmap, pre-tokenizers with PCRE2
//    regexes, BPE / WordLevel / WordPiece / Unigram models, post-processors, decoders);
//  - poslens::VocabTokenizer::read (core/tokenizers/vocab_tokenizer.cpp): PosLens's own task
//    vocabularies, the subset read_tokenizer() tries first for small files. It only takes a
//    path: the input is written to /dev/shm/poslens-fuzz-<pid>/tokenizer.json for it.
// Each tokenizer that loads then encodes and decodes sample texts (tokenizer_checks.h).
// Input: the JSON text.
// Expected: poslens::Error. Findings: any other exception (e.g. a nlohmann::json type_error
// from an unchecked field), a sanitizer report, an id outside the vocabulary, a timeout
// (catastrophic regex backtracking, quadratic merges).
#include <cstdint>
#include <string>

#include "core/tokenizers/hf_tokenizer.h"
#include "core/tokenizers/vocab_tokenizer.h"
#include "tokenizer_checks.h"

using namespace poslens;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  fuzz::refuse([&] {
    const HfTokenizer t = HfTokenizer::from_json(text, "tokenizer.json");
    fuzz::exercise_tokenizer(t);
    for (const std::string& piece : {"<s>", "</s>", "<unk>", "a"}) fuzz::keep(t.id_of(piece));
  });
  const std::string path = fuzz::scratch_path("tokenizer.json");
  fuzz::write_file(path, text);
  fuzz::refuse([&] {
    const VocabTokenizer t = VocabTokenizer::read(path);
    fuzz::exercise_tokenizer(t);
    // Its own output must load again (the trainer writes it, HF and PosLens read it).
    fuzz::write_file(path, t.to_json());
    const VocabTokenizer again = VocabTokenizer::read(path);
    if (again.pieces() != t.pieces()) fuzz::finding("VocabTokenizer::to_json() does not read back");
  });
  return 0;
}
